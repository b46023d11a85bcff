"""How the judge is asked: the Anthropic Messages API directly, or Claude Code's CLI in a process of its
own (scrubbed environment, own HOME, an empty scratch folder as its working folder, the prompt on standard
input) with every tool off.

A judge grades text that the evaluated agent wrote, so it must not act: the CLI gets no tools, and an
answer that asks for a tool anyway (a model told to by a planted file, or a gateway that adds tools) is a
JudgeFailure, never a grade. Every failure is a JudgeFailure whose message becomes the record's reason;
nothing here raises anything else for an unreachable API, a timeout or an answer without text.
:func:`check_judge` is the session's check before any trial.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from scaffold import __version__
from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, builtin_spec
from scaffold.agents.cli import CliAgentSpec
from scaffold.agents.custom import load_adapters
from scaffold.agents.locate import locate
from scaffold.errors import AgentError, SelectionError
from scaffold.judge import JudgeAnswer, JudgeFailure, JudgeRequest, judge_trial
from scaffold.judge.config import JudgeConfig, agent_problem, judge_environment, messages_url
from scaffold.judge.prompts import JUDGE_SYSTEM
from scaffold.records import JudgeInfo
from scaffold.rubrics import Dimension
from scaffold.util.run_process import run_captured

__all__ = ["JudgeRun", "ask", "check_judge", "declared_credentials"]

MAX_TOKENS: Final = 2048
# Claude Code's flags that leave its judge nothing to act with (checked against Claude Code 2.1.112).
_NO_TOOLS: Final = (
    "--tools",
    "",  # no built-in tool: no Bash, Read, Write, WebFetch, Task...
    "--strict-mcp-config",  # no MCP server from any settings file (and none is given)
    "--disable-slash-commands",  # no skills
    "--permission-mode",
    "dontAsk",  # whatever is left is denied, never bypassed (no --dangerously-skip-permissions)
    "--no-session-persistence",
)


@dataclass(frozen=True, slots=True)
class JudgeRun:
    """The judge of a session, as the trial runner holds it (scaffold.judge.Judge): its configuration,
    the environment its process is made from (scrubbed before use) and the subject agent's declared
    credential names."""

    config: JudgeConfig
    environ: Mapping[str, str] = field(repr=False)
    subject_secrets: tuple[str, ...] = ()

    def judge(self, request: JudgeRequest) -> tuple[tuple[Dimension, ...], JudgeInfo]:
        return judge_trial(
            self.config, request, lambda prompt: ask(self.config, prompt, self.environ, self.subject_secrets)
        )


def declared_credentials(agent: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The credential variables agent *agent* declares (none for the oracle and nop agents)."""
    try:
        return tuple(_spec(agent, environ).credentials.secrets)
    except JudgeFailure:
        return ()


def check_judge(config: JudgeConfig, environ: Mapping[str, str]) -> None:
    """Refuse, before any trial, a judge that could only fail every trial: an agent that cannot judge
    (SelectionError), or a judge that will run Claude Code's CLI when its program is not installed
    (AgentError naming the program, where it was looked for and how to install it or point at it)."""
    problem = agent_problem(config.agent)
    if problem is not None:
        raise SelectionError(problem)
    if config.skip_reason is not None or config.transport == "http":
        return  # no CLI will run: skipped for want of a model, or the Messages API directly
    spec = builtin_spec(config.agent, environ)
    lookup = locate(spec.install.executable, environ)
    if lookup.found is None:
        raise AgentError(
            f"the LLM judge runs {config.agent}'s CLI, and its program {spec.install.executable!r} is not "
            f"installed; looked in {'; '.join(lookup.looked)}. Install it with `comet agents install "
            f"{config.agent}`, set $COMET_AGENT_BIN_DIR to the folder that holds it, or give the judge its own API "
            "(BENCH_JUDGE_BASE_URL with BENCH_JUDGE_API_KEY or BENCH_JUDGE_AUTH_TOKEN) to call the Messages API "
            "without a CLI"
        )


def _argv(model: str | None) -> list[str]:
    """Claude Code's command line for one judge answer, the prompt on standard input (it can be tens of
    kilobytes): print mode, stream-json (where a tool call shows, refused or not), no tools."""
    out = ["-p", "", "--output-format", "stream-json", "--verbose", *_NO_TOOLS]
    out += ["--append-system-prompt", JUDGE_SYSTEM]
    return [*out, "--model", model] if model else out


def ask(
    config: JudgeConfig, prompt: str, environ: Mapping[str, str], subject_secrets: Sequence[str] = ()
) -> JudgeAnswer:
    """The judge's answer to *prompt*, over the transport its configuration picks."""
    t0 = time.monotonic()
    answer = _http(config, prompt) if config.transport == "http" else _cli(config, prompt, environ, subject_secrets)
    return dataclasses.replace(answer, latency_s=round(time.monotonic() - t0, 6))


def _http(config: JudgeConfig, prompt: str) -> JudgeAnswer:
    assert config.base_url and config.model  # the transport is http only with both
    # A user agent of our own: some gateways in front of an API turn away the standard library's default one.
    headers = {
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "user-agent": f"comet-eval/{__version__}",
    }
    if config.auth_token:
        headers["authorization"] = f"Bearer {config.auth_token}"
    elif config.api_key:
        headers["x-api-key"] = config.api_key
    body = {
        "model": config.model,
        "max_tokens": MAX_TOKENS,
        "system": JUDGE_SYSTEM,
        "messages": [{"role": "user", "content": prompt}],
    }
    status, raw = _post(messages_url(config.base_url), json.dumps(body).encode("utf-8"), headers, config.timeout_s)
    if not 200 <= status < 300:
        raise JudgeFailure(f"HTTP {status} {raw[:400].decode('utf-8', errors='replace')[:200]}")
    try:
        data = json.loads(raw)
    except ValueError:
        raise JudgeFailure("HTTP answer is not JSON") from None
    if not isinstance(data, dict):
        data = {}  # JSON, but no Messages answer: no text, which the judge reports as unparseable
    content = data.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    # No tools were offered: a tool call here comes from a model or gateway that ignores that.
    _refuse_tools(_tool_names(blocks))
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
    return JudgeAnswer(
        text,
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        session_id=str(data["id"]) if data.get("id") else None,
    )


def _post(url: str, data: bytes, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
    """One POST: the status and the body, also of an answer that is not a success (its body says why). The
    standard library's client rather than an HTTP package: this is the harness's only HTTP call, and a
    package that pulls in an async stack (httpx brings anyio, whose pytest plugin every pytest process
    then loads: 0.13 s of each start, measured) costs every session, judge or not. Proxies are taken from
    the environment (``HTTPS_PROXY``, ``NO_PROXY``) and certificates from the system's store (or
    ``SSL_CERT_FILE``); a redirect is not followed (a Messages endpoint does not redirect), it fails with
    its status."""
    import http.client  # here: a session without an HTTP judge (most) never pays these imports
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, headers=dict(headers), method="POST")
    try:
        # A new opener each time: its proxies are read from the environment as it is now.
        with urllib.request.build_opener(_no_redirect()).open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                return exc.code, exc.read()
            except (OSError, ValueError):
                return exc.code, b""
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise JudgeFailure(f"timeout after {timeout:g} s") from None
        reason = exc.reason if isinstance(exc.reason, BaseException) else exc
        raise JudgeFailure(f"request failed: {type(reason).__name__}") from None
    except TimeoutError:
        raise JudgeFailure(f"timeout after {timeout:g} s") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a connection cut mid-answer, a bad URL
        raise JudgeFailure(f"request failed: {type(exc).__name__}") from None


@functools.cache
def _no_redirect() -> type:
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None  # the 3xx answer then fails as an HTTP error with its status

    return NoRedirect


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def _spec(agent: str, environ: Mapping[str, str]) -> CliAgentSpec:
    if agent in BUILTIN_CLI_AGENTS:
        return builtin_spec(agent, environ)
    specs = load_adapters(environ, reserved=BUILTIN_CLI_AGENTS).specs
    if agent not in specs:
        raise JudgeFailure(f"agent {agent!r}: not a CLI agent (built-in or a registered adapter)")
    return specs[agent]


def _cli(config: JudgeConfig, prompt: str, environ: Mapping[str, str], subject_secrets: Sequence[str]) -> JudgeAnswer:
    problem = agent_problem(config.agent)
    if problem is not None:  # the session refuses it before any trial; a judge built by hand is refused here
        raise JudgeFailure(problem)
    spec = builtin_spec(config.agent, environ)
    program = locate(spec.install.executable, environ).found
    if program is None:
        raise JudgeFailure(f"judge agent {config.agent}: {spec.install.executable} not found")
    # An empty scratch folder, neither the workspace nor the experiment: nothing to read there either.
    with tempfile.TemporaryDirectory(prefix="comet-judge-") as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        cwd.mkdir()
        env = judge_environment(config, environ, subject_secrets=subject_secrets)
        env.update(spec.fixed_env)
        # IS_SANDBOX only lets the subject's permission bypass run as root; the judge never bypasses.
        env.pop("IS_SANDBOX", None)
        # Its own HOME holds no settings (hooks, MCP servers, allow rules): a config folder elsewhere would.
        env.pop("CLAUDE_CONFIG_DIR", None)
        env.update(spec.home_env(str(home)))
        try:
            done = run_captured(
                [str(program), *_argv(config.model)], input=prompt, env=env, cwd=cwd, timeout=config.timeout_s
            )
        except OSError as exc:
            raise JudgeFailure(f"judge agent {config.agent} did not start: {exc.strerror}") from None
        if done.timed_out:
            raise JudgeFailure(f"timeout after {config.timeout_s:g} s")
    lines = done.stdout.splitlines()
    _refuse_tools(_stream_tool_names(lines))
    trajectory = spec.parse(lines)
    text = trajectory.final_text
    if not text and done.exit_code:
        raise JudgeFailure(f"judge agent {config.agent} exited with {done.exit_code}")
    tokens = trajectory.tokens
    return JudgeAnswer(
        text,
        input_tokens=tokens.input if tokens else None,
        output_tokens=tokens.output if tokens else None,
        cost_usd=trajectory.cost_usd,
        session_id=trajectory.session_id,
    )


def _refuse_tools(names: Sequence[str]) -> None:
    if names:
        raise JudgeFailure(
            f"the judge tried to use tools ({', '.join(dict.fromkeys(names))}): a judge only grades, so its "
            "answer is not used "
            "(the workspace it read may hold instructions planted for it)"
        )


def _tool_names(blocks: Sequence[Mapping[str, object]]) -> list[str]:
    """The tools that content *blocks* call: ``tool_use``, and the API's ``server_tool_use`` and
    ``mcp_tool_use``."""
    return [str(b.get("name") or "?") for b in blocks if str(b.get("type", "")).endswith("tool_use")]


def _stream_tool_names(lines: Sequence[str]) -> list[str]:
    """Every tool Claude Code's stream-json output shows the model calling (refused or not, sub-agents
    too) and every permission it denied, in order, each once."""
    names: list[str] = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if event.get("type") == "assistant" and isinstance(content, list):
            names += _tool_names([b for b in content if isinstance(b, dict)])
        denials = event.get("permission_denials") if event.get("type") == "result" else None
        if isinstance(denials, list):
            names += [str(d.get("tool_name") or "?") for d in denials if isinstance(d, dict)]
    return list(dict.fromkeys(names))
