"""A Workspace for tests: real files in a folder, and commands answered by a function instead of run.

The idea of httpx's MockTransport: the code under test (an agent adapter, validation, the trial runner)
talks to a complete, declared Workspace, while the test decides what each command prints and returns,
and afterwards reads every command that was asked for, with its environment and phase::

    def answer(command: Command) -> Reply:
        return Reply(stdout="1.2.3\\n") if "--version" in command.argv else Reply(stdout=STREAM)

    workspace = ScriptedWorkspace(tmp_path / "ws", answer)
    agent.run(workspace, request)
    assert workspace.commands[0].env["ANTHROPIC_API_KEY"] == "..."

:class:`ScriptedBackend` makes such workspaces, so a whole trial can run through the Runner without any
process. Nothing here starts a process or opens a socket.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from scaffold.catalog.tasks import Task
from scaffold.util.process_result import ProcessResult
from scaffold.workspaces.base import ValidationPolicy, Workspace
from scaffold.workspaces.files import HostFiles, fresh_copy

__all__ = ["Command", "Reply", "ScriptedBackend", "ScriptedWorkspace", "exit_zero"]


@dataclass(frozen=True, slots=True)
class Command:
    """One command a ScriptedWorkspace was asked to run."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    timeout: float
    phase: Literal["agent", "validation"]
    workspace: ScriptedWorkspace = field(repr=False, compare=False)
    """The workspace it ran in: a handler may change its files, as a real command would."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What the command printed and how it ended (``exit_code`` None with ``timed_out``)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    timed_out: bool = False
    duration_s: float = 0.01


Handler = Callable[[Command], Reply]


def exit_zero(command: Command) -> Reply:
    """The default handler: every command succeeds and prints nothing."""
    return Reply()


class ScriptedWorkspace(HostFiles):
    """Files in a real folder (:class:`HostFiles`); each ``exec`` asks *handler* and records the command.

    *root* is the path commands are told they run in (``/workspace`` by default, as in a container;
    None: the folder itself, as the local backend does). *host_address* is what the workspace says this
    machine's address is (a container's gateway); None, as on the local backend.
    """

    def __init__(
        self,
        path: Path,
        handler: Handler = exit_zero,
        *,
        root: str | None = "/workspace",
        host_address: str | None = None,
        python: str = "python3",
        validation_pythonpath: str | None = None,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        super().__init__(path)
        self._handler = handler
        self._root = root if root is not None else str(path)
        self._host_address = host_address
        self._python = python
        self._pythonpath = validation_pythonpath
        self.commands: list[Command] = []
        """Every command asked for, in order."""
        self.policy: ValidationPolicy | None = None
        """The policy validation began with; None during the agent's phase."""

    @property
    def root(self) -> str:
        return self._root

    @property
    def python(self) -> str:
        return self._python

    @property
    def validation_pythonpath(self) -> str | None:
        return self._pythonpath

    @property
    def host_address(self) -> str | None:
        return self._host_address if self.policy is None else None

    def host_visible(self, path: Path) -> str | None:
        return str(path.resolve()) if self._root == str(self._path) else None

    def begin_validation(self, policy: ValidationPolicy) -> None:
        if self.policy is None:
            self.policy = policy

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        stdout_path: Path,
        stderr_path: Path,
    ) -> ProcessResult:
        command = Command(tuple(argv), dict(env), timeout, "agent" if self.policy is None else "validation", self)
        self.commands.append(command)
        reply = self._handler(command)
        for path, text in ((stdout_path, reply.stdout), (stderr_path, reply.stderr)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return ProcessResult(reply.exit_code, reply.timed_out, reply.duration_s, stdout_path, stderr_path)


class ScriptedBackend:
    """A Backend whose workspaces are ScriptedWorkspaces holding a copy of the task's environment files.

    ``workspaces`` keeps every workspace made (also destroyed ones, whose folders are gone unless kept),
    so a test can read the commands of a trial the Runner ran.
    """

    name = "scripted"
    engine: str | None = None

    def __init__(
        self,
        workspace_root: Path,
        handler: Handler = exit_zero,
        *,
        root: str | None = "/workspace",
        host_address: str | None = None,
    ) -> None:
        self._root = workspace_root
        self._handler = handler
        self._workspace_root_seen_as = root
        self._host_address = host_address
        self.workspaces: list[ScriptedWorkspace] = []
        self.prepared: list[str] = []
        self.expected: list[str | None] = []
        """The hints :meth:`expect` was given, in order (the task of the trial after each)."""

    def start_slots(self) -> tuple[str, int]:
        return ("scripted", 0)  # never spaced: nothing here starts a real process

    def prepare(self, task: Task) -> None:
        self.prepared.append(task.name)

    def expect(self, task: str | None) -> None:
        self.expected.append(task)

    def create(self, task: Task, trial_key: str) -> ScriptedWorkspace:
        path = self._root / trial_key
        fresh_copy(task.environment_dir, path)
        workspace = ScriptedWorkspace(
            path, self._handler, root=self._workspace_root_seen_as, host_address=self._host_address
        )
        self.workspaces.append(workspace)
        return workspace

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        assert isinstance(workspace, ScriptedWorkspace)
        if not keep:
            shutil.rmtree(workspace.host_path, ignore_errors=True)

    def close(self) -> None:
        """Nothing is held."""
