"""Agents that are command-line programs: build the command and environment, run one turn in the
workspace, keep the raw stream, parse it into a Trajectory.

Only declared credentials reach the process; their values are scrubbed from every file the turn
wrote (raw stream, stderr) before anything is parsed or recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from msgspec.structs import replace

from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.agents.conversation import Simulator, TurnTaker, converse
from scaffold.agents.credentials import CredentialSpec, Redactor, resolve_credentials
from scaffold.agents.locate import locate
from scaffold.trajectory import Trajectory
from scaffold.workspaces.base import AgentNetwork, InstallSpec, Workspace, endpoint_of
from scaffold.workspaces.owners import OwnedFolders, state_root

__all__ = ["CliAgent", "CliAgentSpec", "Invocation", "version_in", "version_output"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_VERSION_NUMBER = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+")
"""A dotted version number (``2.1.112``, ``v0.3``) standing on its own, not inside a longer word."""
_VERSION_CHARS = 120
"""Characters a version line may have: a CLI's version is a short line, its stream's lines are long."""


def version_output(path: Path, limit: int = 400) -> str:
    """The first *limit* bytes of a ``--version`` run's output file, as text ("" when unreadable): its
    head, where the version is, not the tail a long output would give."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def version_in(output: str) -> str | None:
    """The version in what ``PROGRAM --version`` printed: its first non-empty line when that looks like a
    version (short, with a dotted number such as ``2.1.112``, not JSON or markup); None otherwise.

    A CLI without ``--version`` may take it for a prompt and print its JSON stream, or print an error:
    neither is a version, and the reports say ``unknown`` instead of showing a piece of it."""
    line = next((text.strip() for text in output.splitlines() if text.strip()), "")
    if not line or len(line) > _VERSION_CHARS or line[0] in '{["<':
        return None
    return line if _VERSION_NUMBER.search(line) else None


@dataclass(frozen=True, slots=True)
class Invocation:
    """What one turn needs to build its command line."""

    prompt: str
    model: str | None
    session_id: str | None
    home: str
    workspace: str
    base_url: str | None


@dataclass(frozen=True, slots=True)
class CliAgentSpec:
    name: str
    install: InstallSpec
    traits: AgentTraits
    credentials: CredentialSpec
    argv: Callable[[Invocation], list[str]]
    parse: Callable[[Iterable[str]], Trajectory]
    model_env: tuple[str, ...] = ()
    """Where the model comes from when --model is not given, first set wins."""
    base_url_env: tuple[str, ...] = ()
    """Where the API base URL comes from, first set wins; rewritten for containers."""
    fixed_env: Mapping[str, str] = field(default_factory=dict)
    home_env: Callable[[str], dict[str, str]] = lambda home: {"HOME": home}
    version_argv: tuple[str, ...] = ("--version",)
    supports_resume: bool = True
    default_endpoints: tuple[str, ...] = ()
    """``host:port`` the CLI talks to when no base URL is set (its provider's API); empty when unknown,
    and then a container gets open egress instead of the egress proxy."""


def _no_simulator() -> TurnTaker | None:
    return None


class CliAgent:
    """A CLI agent bound to resolved credentials (missing ones fail here, before any workspace).

    *simulator* makes the agent that plays the user in ``auto_user`` conversations (scaffold.agents gives
    one that reads ``BENCH_SIMULATOR_*``); by default there is none, and decision points get the task's
    continue prompt.
    """

    def __init__(
        self,
        spec: CliAgentSpec,
        env: Mapping[str, str],
        *,
        model: str | None = None,
        base_url: str | None = None,
        simulator: Simulator = _no_simulator,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.traits = spec.traits
        self.install: InstallSpec | None = spec.install
        self._env = resolve_credentials(spec.credentials, env, agent=spec.name)
        self.model = model or next((env[k] for k in spec.model_env if env.get(k)), None)
        self.base_url = base_url or next((env[k] for k in spec.base_url_env if env.get(k)), None)
        self.redactor = Redactor(self._env[k] for k in spec.credentials.secrets if k in self._env)
        # On this machine the program is the one found by scaffold.agents.locate ($COMET_AGENT_BIN_DIR,
        # the comet agents prefix, PATH); in a container it is found on the container's PATH.
        self.local_program = locate(spec.install.executable, env).found
        self._simulator = simulator
        self._version: str | None = None

    @property
    def network(self) -> AgentNetwork:
        """A network for the model endpoint: its base URL's ``host:port``, else the CLI's default; an
        endpoint on this machine's loopback needs this machine only, never the internet."""
        host = urlsplit(self.base_url).hostname if self.base_url else None
        endpoints = (endpoint_of(self.base_url),) if self.base_url else self.spec.default_endpoints
        return AgentNetwork(enabled=True, on_this_machine=host in _LOOPBACK, endpoints=endpoints)

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        home = _AgentHome(workspace)
        try:
            return converse(self, workspace, request, home.path, self._simulator, simulator_home=home.simulator)
        finally:
            home.remove()

    def turn(
        self,
        workspace: Workspace,
        request: AgentRequest,
        prompt: str,
        *,
        session_id: str | None,
        index: int,
        home: str,
        timeout_s: float,
    ) -> Trajectory:
        """Run one turn (resuming *session_id* when given) and parse what it printed."""
        base_url = _reachable(self.base_url, workspace)
        invocation = Invocation(
            prompt, self.model, session_id if self.spec.supports_resume else None, home, workspace.root, base_url
        )
        env = {**self.spec.fixed_env, **self.spec.home_env(home), **self._env}
        for key in self.spec.base_url_env[:1]:
            if base_url:
                env[key] = base_url
        stream = request.log_dir / f"agent.turn-{index}.jsonl"
        stderr = request.log_dir / f"agent.turn-{index}.stderr.log"
        result = workspace.exec(
            [self._program(workspace), *self.spec.argv(invocation)],
            timeout=timeout_s,
            env=env,
            stdout_path=stream,
            stderr_path=stderr,
        )
        self.redactor.file(stream)
        self.redactor.file(stderr)
        with stream.open(encoding="utf-8", errors="replace") as handle:
            trajectory = self.spec.parse(handle)
        errors = list(trajectory.errors)
        if result.timed_out:
            errors.append(f"agent timed out after {timeout_s:g}s")
        elif result.exit_code not in (0, None):
            line = _error_line(self.redactor.text(result.stderr(4000)))
            errors.append(f"exited with code {result.exit_code}" + (f": {line}" if line else ""))
        return replace(
            trajectory,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration_s=result.duration_s,
            errors=tuple(errors),
            completed=trajectory.completed and not result.timed_out,
            agent_version=trajectory.agent_version or self.version(workspace, request.log_dir),
        )

    def version(self, workspace: Workspace, log_dir: Path) -> str | None:
        """The version that actually ran, asked once per agent object."""
        if self._version is None:
            out = log_dir / "agent.version.log"
            result = workspace.exec(
                [self._program(workspace), *self.spec.version_argv],
                timeout=30,
                env={},
                stdout_path=out,
                stderr_path=log_dir / "agent.version.stderr.log",
            )
            found = version_in(version_output(out)) if result.exit_code == 0 else None
            self._version = found or ""
        return self._version or None

    def _program(self, workspace: Workspace) -> str:
        if self.local_program is not None and _on_this_machine(workspace):
            return str(self.local_program)
        return self.spec.install.executable


def _on_this_machine(workspace: Workspace) -> bool:
    """Whether *workspace*'s commands run on this machine (its root is a host folder, not a container's)."""
    return workspace.host_path is not None and workspace.root == str(workspace.host_path)


class _AgentHome:
    """Private HOMEs for the agent's own files (sessions, settings) and for the simulator that plays the
    user, outside the workspace so their caches never count as artifacts; removed after the trial.

    On this machine both are in one owned folder (``agent/``, ``simulator/``) under
    ``$TMPDIR/comet-eval/.comet-tmp``: its owner mark lets the next session sweep it when this one is
    killed (scaffold.workspaces.owners)."""

    def __init__(self, workspace: Workspace) -> None:
        self._owned = OwnedFolders(state_root())
        self._dir: Path | None = None
        if _on_this_machine(workspace):
            self._dir = self._owned.make_temp("comet-agent-home-")
            (self._dir / "agent").mkdir()
            (self._dir / "simulator").mkdir()
            self.path, self.simulator = str(self._dir / "agent"), str(self._dir / "simulator")
        else:
            # Inside a container: private to it and gone with it.
            self.path, self.simulator = "/root", "/tmp/sim"

    def remove(self) -> None:
        if self._dir is not None:
            self._owned.remove(self._dir)


def _reachable(url: str | None, workspace: Workspace) -> str | None:
    """Point a loopback base URL at the host as the workspace sees it (a container's gateway)."""
    host = workspace.host_address
    if not url or not host:
        return url
    parts = urlsplit(url)
    if parts.hostname not in _LOOPBACK:
        return url
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


_STACK_FRAME = re.compile(r"^\s*(?:at\s|File \"|Traceback \(|\^+$|~+$|\.\.\.)")


def _error_line(stderr: str) -> str:
    """The line of a CLI's stderr that says what went wrong: the last line that is not part of a stack
    trace (a Node.js error prints its message first and frames after it; Python prints it last)."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if not _STACK_FRAME.match(line):
            return line[:300]
    return lines[-1][:300] if lines else ""
