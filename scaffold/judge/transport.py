"""How the judge is asked: the Anthropic Messages API directly, or the judge agent's CLI in a process
of its own (scrubbed environment, own HOME, a temporary working folder, the prompt on standard input).

Every failure is a JudgeFailure whose message becomes the record's reason; nothing here raises
anything else for an unreachable API, a timeout or an answer without text.
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
from scaffold.agents.cli import CliAgentSpec, Invocation
from scaffold.agents.custom import load_adapters
from scaffold.agents.locate import locate
from scaffold.judge import JudgeAnswer, JudgeFailure, JudgeRequest, judge_trial
from scaffold.judge.config import JudgeConfig, judge_environment, messages_url
from scaffold.records import JudgeInfo
from scaffold.rubrics import Dimension
from scaffold.util.run_process import run_captured

__all__ = ["JudgeRun", "ask", "declared_credentials"]

MAX_TOKENS: Final = 2048


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
    body = {"model": config.model, "max_tokens": MAX_TOKENS, "messages": [{"role": "user", "content": prompt}]}
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
    text = "".join(str(b.get("text", "")) for b in content or () if isinstance(b, dict) and b.get("type") == "text")
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
        raise JudgeFailure(f"judge agent {agent!r}: not a CLI agent (built-in or a registered adapter)")
    return specs[agent]


def _cli(config: JudgeConfig, prompt: str, environ: Mapping[str, str], subject_secrets: Sequence[str]) -> JudgeAnswer:
    spec = _spec(config.agent, environ)
    program = locate(spec.install.executable, environ).found
    if program is None:
        raise JudgeFailure(f"judge agent {config.agent}: {spec.install.executable} not found")
    custom = spec.credentials.secrets if config.agent not in BUILTIN_CLI_AGENTS else ()
    with tempfile.TemporaryDirectory(prefix="comet-judge-") as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        cwd.mkdir()
        env = judge_environment(
            config,
            environ,
            subject_secrets=subject_secrets,
            custom_credentials=custom,
            model_env=spec.model_env,
            base_url_env=spec.base_url_env,
        )
        env.update(spec.fixed_env)
        env.update(spec.home_env(str(home)))
        # The prompt goes on standard input (it can be tens of kilobytes): Claude-like CLIs read it
        # with an empty -p prompt, Codex with "-".
        stdin_marker = "-" if config.agent == "codex" else ""
        base_url = config.base_url
        if config.agent == "codex" and base_url and not base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/") + "/v1"  # Codex's providers name the API root, /v1 included
        argv = spec.argv(Invocation(stdin_marker, config.model, None, str(home), str(cwd), base_url))
        try:
            done = run_captured([str(program), *argv], input=prompt, env=env, cwd=cwd, timeout=config.timeout_s)
        except OSError as exc:
            raise JudgeFailure(f"judge agent {config.agent} did not start: {exc.strerror}") from None
        if done.timed_out:
            raise JudgeFailure(f"timeout after {config.timeout_s:g} s")
    trajectory = spec.parse(done.stdout.splitlines())
    text = trajectory.final_text or _last_text(done.stdout)
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


def _last_text(stdout: str) -> str:
    """The last ``result``/``response``/``text`` string of a JSON-lines output (a custom adapter's)."""
    found = ""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            for key in ("result", "response", "text"):
                if isinstance(event.get(key), str):
                    found = event[key]
    return found
