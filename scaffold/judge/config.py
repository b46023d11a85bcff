"""The judge's configuration: whether it runs, with which agent, model and API, and its credentials.

Pure: everything comes from the session's judge settings and an environment mapping. The judge inherits
nothing of the subject: not its model, base URL or credentials, and not its agent either (the oracle and
nop agents run no model, and only Claude Code can be run as a judge: see :data:`JUDGE_AGENTS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "DEFAULT_AGENT",
    "JUDGE_AGENTS",
    "MODEL_REQUIRED",
    "JudgeConfig",
    "agent_problem",
    "judge_enabled",
    "judge_environment",
    "messages_url",
    "resolve_judge",
    "scrub_environment",
]

MODEL_REQUIRED: Final = "BENCH_JUDGE_MODEL is required when BENCH_LLM_JUDGE=1"
DEFAULT_AGENT: Final = "claude-code"
"""The judge's agent when no setting names one, whatever the subject's (as ``comet eval`` chooses)."""
JUDGE_AGENTS: Final = ("claude-code",)
"""The agents that can judge. A judge reads text the evaluated agent wrote, so it must run with every tool
off and show any tool call it was asked for. Claude Code's CLI does both (``--tools ""``, and a refused call
stays in its stream-json output); Codex's cannot turn off all its tools (image viewing, web search, sub-agents
stay) and reports a refused call on standard error only; Qoder, CodeBuddy and custom adapters are not
known to do both."""
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


def resolve_judge(settings: Mapping[str, str], environ: Mapping[str, str], *, samples: int = 1) -> JudgeConfig | None:
    """The judge of a session, None when it is off. *settings* are the session's resolved judge
    settings (agent, model, base_url: command line > manifest, already validated); the environment's
    BENCH_JUDGE_* fill what they leave unset, so a plain pytest run with BENCH_LLM_JUDGE=1 works too.
    The agent defaults to :data:`DEFAULT_AGENT`: with a base URL and a key that means the Messages API."""
    if not judge_enabled(settings, environ):
        return None
    return JudgeConfig(
        agent=settings.get("agent") or environ.get("BENCH_JUDGE_AGENT") or DEFAULT_AGENT,
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


def agent_problem(agent: str) -> str | None:
    """Why *agent* cannot be the judge's agent (None: it can), as a usage error's message."""
    if agent in JUDGE_AGENTS:
        return None
    return (
        f"judge agent {agent!r}: only {' or '.join(JUDGE_AGENTS)} can judge. A judge reads what the evaluated "
        "agent wrote, so it runs with every tool off, and only Claude Code's CLI can be started that way and "
        "show a tool call it refused; use --judge-agent=claude-code (or leave the judge agent unset), and give "
        "the judge its own API with BENCH_JUDGE_BASE_URL and BENCH_JUDGE_API_KEY or BENCH_JUDGE_AUTH_TOKEN"
    )


def judge_environment(
    config: JudgeConfig, environ: Mapping[str, str], *, subject_secrets: Iterable[str] = ()
) -> dict[str, str]:
    """The judge process's environment: *environ* scrubbed, then the judge's credentials, base URL and
    model under Claude Code's names (a token is sent as a bearer and wins over a key, as in the Messages
    transport)."""
    env = scrub_environment(environ, subject_secrets)
    env["COMET_EVAL_AGENT_ROLE"] = "judge"
    token, key = config.auth_token, config.api_key
    for name, value in (
        ("ANTHROPIC_AUTH_TOKEN", token),
        ("ANTHROPIC_API_KEY", None if token else key),
        ("ANTHROPIC_BASE_URL", config.base_url),
        ("ANTHROPIC_MODEL", config.model),
    ):
        if value:
            env[name] = value
    return env
