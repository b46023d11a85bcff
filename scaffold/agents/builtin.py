"""The built-in agent CLIs: how each is installed, invoked, credentialed and parsed.

Invocation shapes follow the original Comet eval (``-p <prompt> --output-format stream-json``, resume by session id,
``--model``) with each CLI's non-interactive permission flag: the workspace is the sandbox, so the
agent may act without asking. Claude Code refuses ``--dangerously-skip-permissions`` as root unless
``IS_SANDBOX=1``, which is therefore set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from scaffold.agents.base import AgentTraits
from scaffold.agents.cli import CliAgentSpec, Invocation
from scaffold.agents.credentials import CredentialSpec
from scaffold.agents.streams.claude import parse_claude_stream
from scaffold.agents.streams.codex import parse_codex_stream
from scaffold.workspaces.base import InstallSpec

__all__ = ["BUILTIN_CLI_AGENTS", "BUILTIN_TRAITS", "NO_SKILLS", "builtin_spec"]

NO_SKILLS = AgentTraits(invokes_skills=False)
"""The oracle and nop agents: they run no model, so skills are installed but never invoked."""
BUILTIN_TRAITS: Mapping[str, AgentTraits] = {
    "claude-code": AgentTraits(".claude/skills", "CLAUDE.md", reports_tokens=True),
    "codex": AgentTraits(".agents/skills", "AGENTS.md", reports_tokens=True),
    "qoder": AgentTraits(".qoder/skills", "AGENTS.md", reports_tokens=True),
    "codebuddy": AgentTraits(".codebuddy/skills", "AGENTS.md", reports_tokens=True),
    "oracle": NO_SKILLS,
    "nop": NO_SKILLS,
}
"""What each built-in agent is; noise classification reads it by the agent name a record names."""

# Pinned defaults, overridable per run with BENCH_<AGENT>_VERSION.
CLAUDE_CODE_VERSION = "2.1.112"  # the last plain-JavaScript release (runs on Node 18+)
CODEX_VERSION = "0.171.0"
QODER_VERSION = "1.1.52"
CODEBUDDY_VERSION = "latest"  # not resolvable from the registries reachable here; pin with BENCH_CODEBUDDY_VERSION

_QUIET_CLAUDE = {
    "IS_SANDBOX": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


def _claude_like(flag_skip: str, *, verbose: bool = True) -> Callable[[Invocation], list[str]]:
    """Claude Code's print-mode shape. Claude Code needs ``--verbose`` for stream-json in print mode;
    Qoder's CLI has no such option and refuses to start when given one (seen with qodercli 1.1.52)."""

    def argv(inv: Invocation) -> list[str]:
        out = ["-p", inv.prompt, "--output-format", "stream-json", *(["--verbose"] if verbose else []), flag_skip]
        if inv.model:
            out += ["--model", inv.model]
        if inv.session_id:
            out += ["--resume", inv.session_id]
        return out

    return argv


def _codex_argv(inv: Invocation) -> list[str]:
    out = ["exec"]
    if inv.session_id:
        out += ["resume", inv.session_id]
    out += ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    if inv.model:
        out += ["-m", inv.model]
    if inv.base_url:
        # A custom provider speaking the Responses API; the key is read from the environment only.
        provider = {"name": "comet", "base_url": inv.base_url, "env_key": "OPENAI_API_KEY", "wire_api": "responses"}
        body = ", ".join(f"{k}={json.dumps(v)}" for k, v in provider.items())
        out += ["-c", "model_provider=comet", "-c", f"model_providers.comet={{{body}}}"]
    return [*out, inv.prompt]


def _codex_home(home: str) -> dict[str, str]:
    # CODEX_HOME must exist; the private HOME does (a fresh temp folder, or the container's /root).
    return {"HOME": home, "CODEX_HOME": home}


def builtin_spec(name: str, env: Mapping[str, str]) -> CliAgentSpec:
    """The spec of built-in agent *name*, with CLI versions from ``BENCH_*_VERSION`` when set."""
    if name == "claude-code":
        return CliAgentSpec(
            name=name,
            install=InstallSpec(
                "npm", "claude", "@anthropic-ai/claude-code", env.get("BENCH_CC_VERSION") or CLAUDE_CODE_VERSION
            ),
            traits=BUILTIN_TRAITS["claude-code"],
            credentials=CredentialSpec(
                secrets=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
                required_any=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
                aliases={"ANTHROPIC_API_KEY": ("BENCH_API_KEY",)},
            ),
            argv=_claude_like("--dangerously-skip-permissions"),
            parse=lambda lines: parse_claude_stream(lines, agent="claude-code"),
            model_env=("BENCH_CC_MODEL", "ANTHROPIC_MODEL", "BENCH_MODEL"),
            base_url_env=("ANTHROPIC_BASE_URL", "BENCH_BASE_URL"),
            fixed_env=_QUIET_CLAUDE,
            default_endpoints=("api.anthropic.com:443",),
        )
    if name == "codex":
        return CliAgentSpec(
            name=name,
            install=InstallSpec("npm", "codex", "@openai/codex", env.get("BENCH_CODEX_VERSION") or CODEX_VERSION),
            traits=BUILTIN_TRAITS["codex"],
            credentials=CredentialSpec(
                secrets=("OPENAI_API_KEY", "CODEX_API_KEY"),
                required_any=("OPENAI_API_KEY", "CODEX_API_KEY"),
                aliases={"OPENAI_API_KEY": ("CODEX_API_KEY", "BENCH_API_KEY")},
            ),
            argv=_codex_argv,
            parse=parse_codex_stream,
            model_env=("CODEX_MODEL", "OPENAI_MODEL", "BENCH_MODEL"),
            base_url_env=("OPENAI_BASE_URL", "CODEX_BASE_URL", "BENCH_BASE_URL"),
            home_env=_codex_home,
            default_endpoints=("api.openai.com:443",),
        )
    if name == "qoder":
        # Qoder authenticates and picks its service address its own way (no BENCH_BASE_URL mapping).
        return CliAgentSpec(
            name=name,
            install=InstallSpec(
                "npm", "qodercli", "@qoder-ai/qodercli", env.get("BENCH_QODER_VERSION") or QODER_VERSION
            ),
            traits=BUILTIN_TRAITS["qoder"],
            credentials=CredentialSpec(
                secrets=("QODER_PERSONAL_ACCESS_TOKEN",),
                required_any=("QODER_PERSONAL_ACCESS_TOKEN",),
                aliases={"QODER_PERSONAL_ACCESS_TOKEN": ("BENCH_API_KEY",)},
            ),
            argv=_claude_like("--dangerously-skip-permissions", verbose=False),
            parse=lambda lines: parse_claude_stream(lines, agent="qoder"),
            model_env=("QODER_MODEL", "BENCH_MODEL"),
            base_url_env=("QODER_BASE_URL",),
        )
    if name == "codebuddy":
        return CliAgentSpec(
            name=name,
            install=InstallSpec(
                "npm",
                "codebuddy",
                "@tencent-ai/codebuddy-code",
                env.get("BENCH_CODEBUDDY_VERSION") or CODEBUDDY_VERSION,
            ),
            traits=BUILTIN_TRAITS["codebuddy"],
            credentials=CredentialSpec(
                secrets=("CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN", "CODEBUDDY_CUSTOM_HEADERS"),
                required_any=("CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"),
                aliases={"CODEBUDDY_API_KEY": ("BENCH_API_KEY",)},
                settings=(
                    "CODEBUDDY_SMALL_FAST_MODEL",
                    "CODEBUDDY_BIG_SLOW_MODEL",
                    "CODEBUDDY_CODE_SUBAGENT_MODEL",
                    "CODEBUDDY_INTERNET_ENVIRONMENT",
                ),
            ),
            argv=_claude_like("-y"),
            parse=lambda lines: parse_claude_stream(lines, agent="codebuddy"),
            model_env=("CODEBUDDY_MODEL", "BENCH_MODEL"),
            base_url_env=("CODEBUDDY_BASE_URL", "BENCH_BASE_URL"),
        )
    raise KeyError(name)


BUILTIN_CLI_AGENTS = ("claude-code", "codebuddy", "codex", "qoder")
