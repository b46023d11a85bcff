"""The judge's configuration: whether it runs, with which agent, model and API, and its credentials.

Pure: everything comes from the session's judge settings and an environment mapping. The judge never
inherits the subject's model, base URL or credentials: only the subject's agent id, as its default agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "MODEL_REQUIRED",
    "JudgeConfig",
    "judge_enabled",
    "judge_environment",
    "messages_url",
    "resolve_judge",
    "scrub_environment",
]

MODEL_REQUIRED: Final = "BENCH_JUDGE_MODEL is required when BENCH_LLM_JUDGE=1"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
DEFAULT_TIMEOUT_S: Final = 120.0

# Provider variables of every built-in agent: a judge process must not see the subject's API.
_PROVIDER_PREFIXES: Final = ("ANTHROPIC_", "OPENAI_", "CODEX_", "QODER_", "CODEBUDDY_", "BENCH_CC_", "BENCH_CODEX_")
# Anything that looks like a secret, whoever declares it (the original's newer, stricter rule).
_SECRET_NAME: Final = re.compile(r"(_API_KEY|_AUTH_TOKEN|_TOKEN|_SECRET|_PASSWORD|_KEY|_CREDENTIALS?)$")
# The subject's own settings that a CLI would otherwise read as its model or API.
_SUBJECT_SETTINGS: Final = frozenset({"BENCH_MODEL", "BENCH_BASE_URL", "BENCH_API_KEY", "BENCH_AUTH_TOKEN"})


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """A judge that is switched on. ``skip_reason`` set: it is not called and the record says why."""

    agent: str
    model: str | None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    samples: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S
    cli: bool = False
    """BENCH_JUDGE_TRANSPORT=cli: the CLI even when the Messages API could be called directly (beyond the
    original; without it a Claude Code judge with its own URL and key never runs its CLI)."""

    @property
    def skip_reason(self) -> str | None:
        return None if self.model else MODEL_REQUIRED

    @property
    def transport(self) -> Literal["http", "cli"]:
        """``http`` (the Messages API directly) when Claude Code's judge has its own URL and credential,
        as the original does; ``cli`` (the judge agent's CLI in its own process) otherwise."""
        direct = self.agent == "claude-code" and self.base_url and (self.api_key or self.auth_token) and not self.cli
        return "http" if direct else "cli"


def judge_enabled(settings: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """On with any judge setting (a manifest's ``judge:`` or a ``--judge-*`` option) or BENCH_LLM_JUDGE."""
    return bool(settings) or environ.get("BENCH_LLM_JUDGE", "").strip().lower() in _TRUE


def resolve_judge(
    settings: Mapping[str, str], environ: Mapping[str, str], *, subject_agent: str, samples: int = 1
) -> JudgeConfig | None:
    """The judge of a session, None when it is off. *settings* are the session's resolved judge
    settings (agent, model, base_url: command line > manifest, already validated); the environment's
    BENCH_JUDGE_* fill what they leave unset, so a plain pytest run with BENCH_LLM_JUDGE=1 works too."""
    if not judge_enabled(settings, environ):
        return None
    return JudgeConfig(
        agent=settings.get("agent") or environ.get("BENCH_JUDGE_AGENT") or subject_agent,
        model=settings.get("model") or environ.get("BENCH_JUDGE_MODEL") or None,
        base_url=settings.get("base_url") or environ.get("BENCH_JUDGE_BASE_URL") or None,
        api_key=environ.get("BENCH_JUDGE_API_KEY") or None,
        auth_token=environ.get("BENCH_JUDGE_AUTH_TOKEN") or None,
        samples=max(1, samples),
        cli=environ.get("BENCH_JUDGE_TRANSPORT", "").strip().lower() == "cli",
    )


def messages_url(base: str) -> str:
    """The Messages endpoint of a base URL: ``.../messages`` as given, ``.../v1`` gets ``/messages``,
    anything else ``/v1/messages``."""
    base = base.rstrip("/")
    if base.endswith("/messages"):
        return base
    if base.endswith("/v1"):
        return base + "/messages"
    return base + "/v1/messages"


def scrub_environment(environ: Mapping[str, str], subject_secrets: Iterable[str] = ()) -> dict[str, str]:
    """*environ* without any credential or provider variable: every built-in agent's, anything named
    like a secret, the BENCH_JUDGE_* themselves (mapped again by :func:`judge_environment`) and the
    subject agent's declared credentials (a custom adapter may call its key anything)."""
    drop = set(subject_secrets) | _SUBJECT_SETTINGS
    return {
        k: v
        for k, v in environ.items()
        if k not in drop
        and not k.startswith(_PROVIDER_PREFIXES)
        and not k.startswith("BENCH_JUDGE_")
        and not _SECRET_NAME.search(k)
    }


def _native(config: JudgeConfig, custom_credentials: Sequence[str]) -> dict[str, str]:
    key, token, url, model = config.api_key, config.auth_token, config.base_url, config.model
    out: dict[str, str] = {}

    def put(name: str, value: str | None) -> None:
        if value:
            out[name] = value

    if config.agent == "claude-code":
        # A token is sent as a bearer and wins over a key, as in the Messages transport.
        put("ANTHROPIC_AUTH_TOKEN", token)
        put("ANTHROPIC_API_KEY", None if token else key)
        put("ANTHROPIC_BASE_URL", url)
        put("ANTHROPIC_MODEL", model)
    elif config.agent == "codex":
        put("OPENAI_API_KEY", key or token)
        put("CODEX_API_KEY", token)
        put("OPENAI_BASE_URL", url)
    elif config.agent == "qoder":
        put("QODER_PERSONAL_ACCESS_TOKEN", token or key)
    elif config.agent == "codebuddy":
        put("CODEBUDDY_API_KEY", key)
        put("CODEBUDDY_AUTH_TOKEN", token)
        put("CODEBUDDY_BASE_URL", url)
        put("CODEBUDDY_MODEL", model)
    elif custom_credentials:
        # Either judge variable suffices (the original required both for two credentials: a bug).
        put(custom_credentials[0], key or token)
        if len(custom_credentials) > 1:
            put(custom_credentials[1], token or key)
    return out


def judge_environment(
    config: JudgeConfig,
    environ: Mapping[str, str],
    *,
    subject_secrets: Iterable[str] = (),
    custom_credentials: Sequence[str] = (),
    model_env: Sequence[str] = (),
    base_url_env: Sequence[str] = (),
) -> dict[str, str]:
    """The judge process's environment: *environ* scrubbed, then the judge's credentials under the judge
    agent's native names (§3 mapping; a custom adapter's first and second declared credential), its
    model and base URL under the adapter's declared variables."""
    env = scrub_environment(environ, subject_secrets)
    env["COMET_EVAL_AGENT_ROLE"] = "judge"
    env.update(_native(config, custom_credentials))
    if config.agent not in ("claude-code", "codex", "qoder", "codebuddy"):
        for name, value in ((model_env, config.model), (base_url_env, config.base_url)):
            if name and value:
                env[name[0]] = value
    return env
