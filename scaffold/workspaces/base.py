"""The contracts of a workspace backend: what the trial runner, the agents and validation may use.

Every member a caller uses is declared here, so a new backend (Kubernetes, a remote pool) knows what it
must provide and nothing is found by probing. Two values travel from the agent to the backend: how its
program gets into a workspace (:class:`InstallSpec`) and what it must reach over the network
(:class:`AgentNetwork`); one from the task to the workspace: how validation takes over from the agent
(:class:`ValidationPolicy`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol
from urllib.parse import urlsplit

from scaffold.catalog.tasks import Task
from scaffold.util.process_result import ProcessResult

__all__ = [
    "NO_NETWORK",
    "AgentNetwork",
    "Backend",
    "FileState",
    "InstallSpec",
    "ValidationPolicy",
    "Workspace",
    "WorkspaceManifest",
    "endpoint_of",
]


class ValidationPolicy(enum.Enum):
    """How the validation phase takes over a workspace from the agent (``Workspace.begin_validation``)."""

    STRICT = "strict"
    """Before any validation file goes in: every process the agent started has ended, and the commands
    of the validation phase reach no network. The default: what the agent did can be checked, but not
    changed any more, and validation cannot be influenced from outside."""
    SHARED = "shared"
    """The agent's processes and network stay: validation runs beside them, as Harbor-format verifiers
    expect (a service the agent started is part of what they test)."""


@dataclass(frozen=True, slots=True)
class InstallSpec:
    """How an agent's program gets into a workspace. ``kind`` npm or pip installs ``package==version``
    (offline-safe: from the package registries only, into a host cache that is mounted or copied in);
    ``none`` means the executable is already in the image or on PATH. ``executable`` is what runs."""

    kind: Literal["npm", "pip", "none"]
    executable: str
    package: str | None = None
    version: str | None = None

    @property
    def key(self) -> str:
        """A stable identity for caches and image tags: ``npm:@anthropic-ai/claude-code@2.1.112``."""
        if self.kind == "none":
            return f"none:{self.executable}"
        return f"{self.kind}:{self.package}@{self.version or 'latest'}"


@dataclass(frozen=True, slots=True)
class AgentNetwork:
    """What an agent's process must reach while it works (validation reaches nothing under STRICT)."""

    enabled: bool = False
    """The agent calls a model endpoint: its workspace needs a network in the agent's phase."""
    on_this_machine: bool = False
    """The endpoint is served on this machine's loopback: a container then reaches this machine only."""
    endpoints: tuple[str, ...] = ()
    """``host:port`` of every endpoint it may reach (its base URL, else its provider's API); empty when
    not known, and then a container gets open egress rather than only those endpoints."""


NO_NETWORK: Final = AgentNetwork()


@dataclass(frozen=True, slots=True)
class FileState:
    """A regular file or a symbolic link in a workspace, as :meth:`Workspace.manifest` lists it."""

    size: int
    """Bytes of the file; of a link, of its target's path."""
    mode: int
    """The permission bits (``0o644``); 0o777 for a link."""
    digest: str | None
    """A hash of the content, comparable only between manifests of the same workspace (each backend picks
    its algorithm); None for a link, and for a file that could not be read."""
    link: str | None = None
    """A symbolic link's target, as written (never followed); None for a regular file."""


@dataclass(frozen=True, slots=True)
class WorkspaceManifest:
    """The files of a workspace at one moment (:meth:`Workspace.manifest`)."""

    files: Mapping[str, FileState]
    """Workspace-relative POSIX path -> state, in sorted order of the paths."""
    truncated: bool = False
    """More files than the limit asked for: ``files`` holds the first ones in sorted order."""


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def endpoint_of(url: str) -> str:
    """``host:port`` of a URL (the scheme's default port when none is written), lower-cased."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    if not parts.hostname:
        raise ValueError(f"{url!r} has no host")
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 443)
    return f"{parts.hostname.lower()}:{port}"


class Workspace(Protocol):
    """One trial's isolated working directory, from the agent's phase through validation."""

    @property
    def root(self) -> str:
        """The workspace path as commands inside it see it."""

    @property
    def host_path(self) -> Path | None:
        """Where the files live on this machine, when they do (kept workspaces are shown there)."""

    @property
    def python(self) -> str:
        """The Python interpreter that validation scripts run with."""

    @property
    def validation_pythonpath(self) -> str | None:
        """Where commands of this workspace can import the validation helpers (scaffold.workspaces.layout)
        from a folder the backend shares between trials; None: they are written into the workspace."""

    @property
    def host_address(self) -> str | None:
        """This machine's address as the workspace's commands see it, to reach a model endpoint served on
        this machine's loopback (a container's gateway); None when loopback reaches it as it is, or when
        the workspace has no network. An endpoint reached this way must listen on that address too."""

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

    def put_at(self, source: Path, path: str) -> None:
        """Copy a host file or folder to the absolute *path* of the workspace's machine (Harbor's
        ``/tests`` and ``/solution``, outside the working directory); its parent folder must exist.
        Only a workspace that is a machine of its own (a container) can: others raise WorkspaceError."""

    def write_text(self, dest: str, text: str) -> None:
        """Write *text* (UTF-8) to *dest* relative to the root, creating folders."""

    def read_text(self, rel: str) -> str | None:
        """A file's text, or None when it does not exist."""

    def glob(self, pattern: str) -> list[str]:
        """Workspace-relative POSIX paths matching *pattern*, sorted."""

    def remove(self, rel: str) -> None:
        """Delete a file or folder if present."""

    def manifest(self, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
        """Every regular file and symbolic link under the root, links never followed, no other file system
        mounted below the root entered; *exclude* (workspace-relative paths, with everything below them)
        and the backend's own files left out; at most *limit* entries, the first in sorted order of the
        paths (then ``truncated``). Names holding a newline are left out. One round trip in a container."""

    def read_files(self, paths: Sequence[str], limit: int) -> dict[str, bytes]:
        """The bytes of each regular file among *paths* (workspace-relative) that is at most *limit* bytes;
        the others (missing, a link, a folder, larger, unreadable) are left out. As few round trips as
        the backend can (one archive of the workspace in a container)."""

    def begin_validation(self, policy: ValidationPolicy) -> None:
        """End the agent's phase as *policy* says; the trial runner calls it once, after the agent and
        before anything of validation (artifact checks, copying the validation files in) happens."""


class Backend(Protocol):
    """Makes and ends workspaces of one kind; one per session (and per pytest-xdist worker)."""

    @property
    def name(self) -> str:
        """``local``, ``docker``: recorded in each trial's configuration."""

    @property
    def engine(self) -> str | None:
        """The engine the latest workspace was made on (a Docker engine's URL: which engine of a pool ran
        the trial, recorded with it); None for a backend without engines."""

    def start_slots(self) -> tuple[str, int]:
        """Where the agents' processes run and how many of them may start at once there: (a key naming
        that machine, ``local`` or the engine's URL; its cores), for scaffold.trial.start_gate. Never raises: a
        backend that cannot tell (its engine is down) says 0 slots, which admits at once."""

    def prepare(self, task: Task) -> None:
        """Build what every trial of *task* needs (an image); once per session."""

    def expect(self, task: str | None) -> None:
        """A hint given before :meth:`create`: the name of the task whose trial this backend makes after
        the one about to be made, None when none follows. A backend that makes a workspace ahead (docker's
        standby container) makes none that would go unused; the others ignore it."""

    def create(self, task: Task, trial_key: str) -> Workspace:
        """A fresh workspace holding the task's environment files."""

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        """End the workspace; keep its files for inspection when *keep*."""

    def close(self) -> None:
        """Release everything the backend still holds (called at session end, also on errors)."""
