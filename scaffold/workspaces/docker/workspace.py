"""A trial's ``/workspace`` in its container: a bind-mounted host folder, or (copy mode) a volume; for a
Harbor-format task, the image's own working directory (``native``: the files are the container's).

The workspace holds its container and its files; what involves the engine beyond one container (the
agent's network, replacing a container, the shared clients) it asks of the backend that made it,
through the :class:`ContainerHost` contract.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.util.process_result import ProcessResult
from scaffold.workspaces.base import ValidationPolicy, WorkspaceManifest
from scaffold.workspaces.docker.compose import Services
from scaffold.workspaces.docker.copy_mode import ContainerFiles, put_absolute
from scaffold.workspaces.docker.exec import kill_marked, run_command
from scaffold.workspaces.docker.keeper import Keeper
from scaffold.workspaces.docker.manifest import container_manifest
from scaffold.workspaces.files import HostFiles

__all__ = ["ROOT", "ContainerHost", "DockerWorkspace", "Launched", "Phase"]

ROOT: Final = "/workspace"
Phase = Literal["agent", "validation"]


@dataclass(frozen=True, slots=True)
class Launched:
    """A trial's container as started (:func:`.launch.launch`): its id and name, and its compose services."""

    id: str
    name: str
    services: Services | None = None


class ContainerHost(Protocol):
    """What a DockerWorkspace asks of the backend that made it."""

    @property
    def api(self) -> Any:
        """The low-level engine client (one request per call)."""

    def stream_api(self) -> Any:
        """The low-level client for exec output streams, without a read timeout."""

    def command_env(self, workspace: DockerWorkspace, env: Mapping[str, str]) -> dict[str, str]:
        """The environment of a command in *workspace*, in its current phase."""

    def command_argv(self, workspace: DockerWorkspace, argv: Sequence[str]) -> list[str]:
        """The command line the container runs for *argv*, in the workspace's current phase."""

    def end_processes(self, workspace: DockerWorkspace) -> None:
        """End every process of the container (when not even a killer exec can start)."""

    def begin_validation(self, workspace: DockerWorkspace, policy: ValidationPolicy) -> None:
        """Turn the agent's container into the validation container as *policy* says."""

    def gateway(self, workspace: DockerWorkspace) -> str | None:
        """This machine's address on the agent's network, as the container sees it."""

    def keeper_cannot_run(self) -> None:
        """The keeper's fast path cannot work on this engine: later containers do not try it."""


class DockerWorkspace:
    """One trial's workspace and container (see the module docstring)."""

    def __init__(
        self,
        host: ContainerHost,
        task: Task,
        trial_key: str,
        path: Path,
        *,
        network: bool,
        copy: bool,
        root: str = ROOT,
        native: bool = False,
    ) -> None:
        self._host = host
        self._root = root
        self.native = native
        """The workspace is the image's working directory in the container's own file system (Harbor
        tasks write outside any /workspace): no bind mount, no volume; files go through the engine."""
        self.task = task
        self.trial_key = trial_key
        self.network = network
        self.copy = copy
        self.phase: Phase = "agent"
        self.policy: ValidationPolicy | None = None
        """The policy validation began with; None during the agent's phase."""
        self.container: Any = None  # a docker ``Container`` made from the create response (no inspect)
        self.keeper: Keeper | None = None
        self.services: Services | None = None  # a compose task's: its network, volumes and sidecars
        self.volume: str | None = None  # copy mode: the volume holding /workspace
        self.control: Path | None = None  # bind mode: the keeper's control folder (commands and output)
        self.files: HostFiles | ContainerFiles = (
            ContainerFiles(host.api, lambda: self.container_id or "", root, path) if copy or native else HostFiles(path)
        )

    @property
    def root(self) -> str:
        return self._root

    @property
    def python(self) -> str:
        return "python3"

    @property
    def validation_pythonpath(self) -> str | None:
        return None  # nothing of this machine is mounted for validation: the helpers are written in

    def host_visible(self, path: Path) -> str | None:
        return None  # the container mounts only the workspace; host folders are copied in

    @property
    def host_path(self) -> Path:
        """The host folder: the workspace itself (bind mode), or where it is copied when kept (copy mode)."""
        return self.files.host_path

    @property
    def container_id(self) -> str | None:
        return None if self.container is None else str(self.container.id)

    @property
    def host_address(self) -> str | None:
        """This machine's address as the agent's container sees it (the bridge gateway), to rewrite a
        loopback model endpoint; None without network. The endpoint must listen on that address too."""
        if self.container is None or not self.network or self.phase != "agent":
            return None
        return self._host.gateway(self)

    def put(self, source: Path, dest: str) -> None:
        self.files.put(source, dest)

    def put_at(self, source: Path, path: str) -> None:
        if self.container is None:
            raise WorkspaceError(f"the workspace {self.host_path} has no container (already destroyed?)")
        if isinstance(self.files, ContainerFiles):
            self.files.put_at(source, path)
        else:
            put_absolute(self._host.api, self.container.id, source, path)

    def write_text(self, dest: str, text: str) -> None:
        self.files.write_text(dest, text)

    def read_text(self, rel: str) -> str | None:
        return self.files.read_text(rel)

    def glob(self, pattern: str) -> list[str]:
        return self.files.glob(pattern)

    def remove(self, rel: str) -> None:
        self.files.remove(rel)

    def manifest(self, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
        """Listed in the container (scaffold.workspaces.docker.manifest, one exec: ~0.1 s), except a
        bind-mounted folder when this machine's user is root: only root surely reads every file the
        container's root made there (0600 files, 0700 folders), and then the host walk says the same."""
        if isinstance(self.files, HostFiles) and os.geteuid() == 0:
            return self.files.manifest(exclude, limit)
        if self.container is None:
            raise WorkspaceError(f"the workspace {self.host_path} has no container (already destroyed?)")
        if isinstance(self.files, ContainerFiles):
            self.files.flush()
        return container_manifest(self._host.api, self.container.id, self._root, exclude, limit)

    def read_files(self, paths: Sequence[str], limit: int) -> dict[str, bytes]:
        found = self.files.read_files(paths, limit)
        missing = [rel for rel in paths if rel not in found]
        if missing and isinstance(self.files, HostFiles) and self.container is not None:
            # Bind mode: what this machine's user cannot read (the container's root made it 0600) comes
            # through the engine instead.
            engine = ContainerFiles(self._host.api, lambda: self.container_id or "", self._root, self.host_path)
            found.update(engine.read_files(missing, limit))
        return found

    def begin_validation(self, policy: ValidationPolicy) -> None:
        """End the agent's phase as *policy* says (scaffold.workspaces.base.ValidationPolicy)."""
        if self.policy is None:
            self._host.begin_validation(self, policy)
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
        """Run *argv* in the container with the workspace root as working directory (see :func:`run_command`)."""
        if self.container is None:
            raise WorkspaceError(f"the workspace {self.host_path} has no container (already destroyed?)")
        removals: list[str] = []
        if isinstance(self.files, ContainerFiles):
            self.files.flush_writes()
            removals = self.files.take_removals()
        host = self._host
        full_env = host.command_env(self, env)
        argv = host.command_argv(self, argv)

        def escalate() -> None:
            host.end_processes(self)

        def kill(mark: str, grace: float, may_escalate: bool) -> bool:
            return kill_marked(host.api, self.container.id, mark, grace, escalate if may_escalate else None)

        try:
            if self.keeper is not None:  # the fast path: the keeper starts it, no exec (~50 ms less)
                result = self.keeper.run(
                    argv,
                    env=full_env,
                    workdir=self._root,
                    timeout=timeout,
                    stdout_path=stdout_path,
                    stderr_path=stderr_path,
                    removals=removals,
                    kill=kill,
                    where=str(self.host_path),
                )
                if result is not None:
                    return result
                if self.control is not None and not self.keeper.fast:  # cannot here: later containers do not try
                    host.keeper_cannot_run()
            return run_command(
                host.api,
                host.stream_api(),
                self.container.id,
                argv,
                env=full_env,
                workdir=self._root,
                timeout=timeout,
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                removals=removals,
                escalate=escalate,
                where=str(self.host_path),
                keep_background=self.native,
            )
        finally:
            if isinstance(self.files, ContainerFiles):
                self.files.changed()
