"""Workspace backends: where a trial's files live and its commands run.

``local`` (a fresh directory and subprocesses; needs nothing installed) is built in; ``docker`` plugs in
behind the same two protocols. Backends own preparation, execution with timeouts, copying, cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from scaffold.errors import SelectionError
from scaffold.procs import ProcessResult
from scaffold.tasks import Task

if TYPE_CHECKING:
    from scaffold.agents.install import InstallSpec

__all__ = ["Backend", "Workspace", "create_backend", "known_backends"]


class Workspace(Protocol):
    """One trial's isolated working directory."""

    @property
    def root(self) -> str:
        """The workspace path as commands inside it see it."""

    @property
    def host_path(self) -> Path | None:
        """Where the files live on this machine, when they do (kept workspaces are shown there)."""

    @property
    def python(self) -> str:
        """The Python interpreter that validation scripts run with."""

    def host_visible(self, path: Path) -> str | None:
        """Where commands in this workspace can read the host folder *path* in place, or None.

        Lets the oracle run a task's solution without copying it in when the workspace shares the
        host's file system (the local backend); a container cannot see host folders it has no mount of.
        """

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        stdout_path: Path,
        stderr_path: Path,
    ) -> ProcessResult:
        """Run a command with the workspace as working directory; output to host files."""

    def put(self, source: Path, dest: str) -> None:
        """Copy a host file or folder (complete, with modes) to *dest* relative to the root."""

    def write_text(self, dest: str, text: str) -> None: ...

    def read_text(self, rel: str) -> str | None:
        """A file's text, or None when it does not exist."""

    def glob(self, pattern: str) -> list[str]:
        """Workspace-relative POSIX paths matching *pattern*, sorted."""

    def remove(self, rel: str) -> None:
        """Delete a file or folder if present."""


class Backend(Protocol):
    name: str

    def prepare(self, task: Task) -> None:
        """Build what every trial of *task* needs (an image); once per session."""

    def create(self, task: Task, trial_key: str) -> Workspace:
        """A fresh workspace holding the task's environment files."""

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        """End the workspace; keep its files for inspection when *keep*."""

    def close(self) -> None:
        """Release everything the backend still holds (called at session end, also on errors)."""


def known_backends() -> list[str]:
    return ["docker", "local"]


def create_backend(
    name: str,
    *,
    workspace_root: Path,
    network: bool = False,
    network_scope: Literal["host", "internet"] = "internet",
    agent_install: InstallSpec | None = None,
    egress: Sequence[str] = (),
) -> Backend:
    """The backend *name*. ``docker`` only: *network* gives the agent's container a network to reach its
    model endpoint (otherwise none): *network_scope* ``host`` reaches this machine only (an endpoint served
    here), ``internet`` an endpoint elsewhere: only the *egress* ``host:port`` endpoints when given
    (through a proxy), else the default bridge; *agent_install* is the agent CLI to mount into it."""
    if name == "local":
        from scaffold.workspaces.local import LocalBackend

        return LocalBackend(workspace_root)
    if name == "docker":
        from scaffold.workspaces.docker import DockerBackend

        return DockerBackend(
            workspace_root, network=network, network_scope=network_scope, agent_install=agent_install, egress=egress
        )
    raise SelectionError(f"--backend={name}: unknown backend; known: {', '.join(known_backends())}")
