"""The ``local`` backend: a fresh directory per trial, commands as subprocesses with tree-kill timeouts.

Isolation is by directory and environment (no container). Commands get a small allow-listed
environment, never the harness's own, so credentials in the parent environment do not leak into a
trial; where bubblewrap is installed, the agent's commands also run confined: other trials' workspaces,
the experiment's records and the harness's processes out of their sight (scaffold.workspaces.confine).
Without it, one warning per session says what is not isolated.

The validation phase (``begin_validation``) under the strict policy:

* **the agent's processes end.** Every command runs in its own process group, killed when the command
  ends, which takes background jobs with it; what left the group (``setsid``, a daemon) is found by the
  workspace's marker, ``COMET_WORKSPACE=<path>`` in its environment, or by a working directory inside the
  workspace, among the processes started since the workspace was made (scaffold.workspaces.processes),
  and killed;
* **validation reaches no network.** Its commands run in a network namespace of their own, with only a
  loopback interface: as root (or with CAP_SYS_ADMIN) the harness enters a namespace made once per
  backend for the moment it starts each command (a few microseconds); otherwise each command starts
  through ``unshare --user --map-current-user --net`` (about a millisecond, loopback down). Where the
  kernel allows neither (no user namespaces for unprivileged users, not Linux), validation runs with
  this machine's network and an :class:`IsolationWarning` says so once per session.

When the harness dies, even by SIGKILL, the agent's processes die with it: a supervisor process, started
with the first workspace, ends every process carrying a marker of the harness's workspaces and removes
the folders (scaffold.workspaces.supervisor). Every folder the backend makes carries an owner mark, so
what a dead session left is swept by the next (scaffold.workspaces.owners).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.util.background import Background
from scaffold.util.process_result import ProcessResult
from scaffold.util.run_process import run_process
from scaffold.workspaces.base import ValidationPolicy, Workspace, WorkspaceManifest
from scaffold.workspaces.confine import Confinement, unconfined_warning
from scaffold.workspaces.files import HostFiles, fresh_copy, remove_empty_parents
from scaffold.workspaces.layout import write_shim
from scaffold.workspaces.netns import IsolatedNetwork, IsolationWarning
from scaffold.workspaces.node_launch import local_command
from scaffold.workspaces.owners import OwnedFolders, state_root
from scaffold.workspaces.processes import MARKER, end_marked, last_pid
from scaffold.workspaces.supervisor import Supervisor

__all__ = ["IsolationWarning", "LocalBackend", "LocalWorkspace", "base_environment"]

TMP_DIR = ".tmp"
"""The commands' TMPDIR, inside the workspace: the backend's own, never listed as the agent's change."""

_PASSED_THROUGH = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "SHELL")


def base_environment(workspace: Path) -> dict[str, str]:
    """The environment a command in a local workspace starts from.

    The harness's interpreter comes first on PATH so ``python3`` in a task script is the Python the
    harness runs on; temporary files stay inside the workspace. ``COMET_WORKSPACE`` is also the marker
    by which the validation phase finds the agent's processes that left their process group.
    """
    env = {key: os.environ[key] for key in _PASSED_THROUGH if key in os.environ}
    path = os.environ.get("PATH", os.defpath)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    env[MARKER] = str(workspace)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    tmp = workspace / TMP_DIR
    env["TMPDIR"] = str(tmp)
    return env


class LocalWorkspace(HostFiles):
    """A host folder; file operations come from :class:`HostFiles`, commands run as subprocesses."""

    def __init__(
        self,
        path: Path,
        *,
        shim: str | None = None,
        network: IsolatedNetwork | None = None,
        resolved: str | None = None,
        real_paths: dict[Path, str] | None = None,
        confinement: Confinement | None = None,
    ) -> None:
        super().__init__(path, resolved=resolved)
        self._confinement = confinement
        self._real_paths = {} if real_paths is None else real_paths  # the backend's, shared by its workspaces
        self._shim = shim
        self._network = network
        self._since = last_pid()  # processes started after this one may be the agent's
        self.policy: ValidationPolicy | None = None
        """The policy validation began with; None during the agent's phase."""

    @property
    def root(self) -> str:
        return str(self._path)

    @property
    def python(self) -> str:
        return sys.executable

    @property
    def validation_pythonpath(self) -> str | None:
        return self._shim

    @property
    def host_address(self) -> str | None:
        return None  # the same machine: a loopback endpoint is reached as it is

    def host_visible(self, path: Path) -> str | None:
        # A task's folders are resolved once a session (a system call per component each time, else): the
        # catalog, and the content hashes in every record, are of the folders as the session found them.
        real = self._real_paths.get(path)
        if real is None:
            real = self._real_paths[path] = str(path.resolve())
        return real

    def manifest(self, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
        return super().manifest([*exclude, TMP_DIR], limit)

    def begin_validation(self, policy: ValidationPolicy) -> None:
        if self.policy is not None:
            return
        self.policy = policy
        if policy is ValidationPolicy.STRICT:
            self.end_processes()

    def end_processes(self) -> None:
        """SIGKILL every process the workspace's commands left (scaffold.workspaces.processes)."""
        end_marked(f"{MARKER}={self._path}", folder=str(self._path), since=self._since, real=self.real_root)

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        stdout_path: Path,
        stderr_path: Path,
    ) -> ProcessResult:
        (self._path / TMP_DIR).mkdir(exist_ok=True)
        if self.policy is None and argv and argv[0].startswith("/"):  # the agent's phase: its CLI, by path
            argv = [*local_command(argv[0]), *argv[1:]]
        full_env = {**base_environment(self._path), **env}
        if self.policy is None and self._confinement is not None:
            argv = self._confinement.wrap(argv, self._path, full_env)
        network = self._network if self.policy is ValidationPolicy.STRICT else None
        with network.entered(argv) if network is not None else contextlib.nullcontext(argv) as command:
            return run_process(
                command, cwd=self._path, env=full_env, timeout=timeout, stdout_path=stdout_path, stderr_path=stderr_path
            )


class LocalBackend:
    name = "local"
    engine: str | None = None  # trials run on this machine, no engine in between

    def __init__(self, workspace_root: Path, *, private: Sequence[Path] = (), confine: bool = True) -> None:
        """*private*: folders the agents must not reach besides the workspaces (the experiment's).
        *confine* False: the agent runs no program of its own (the oracle runs the task's reference
        solution, nop nothing), so its commands start as they are, without bubblewrap's milliseconds."""
        self._root = workspace_root
        self._private = (workspace_root, *private)
        self._confine = confine
        self._confinement: Confinement | None = None
        self._owned = OwnedFolders(workspace_root)
        self._scratch = OwnedFolders(state_root())
        self._supervisor = Supervisor([workspace_root, state_root()])
        self._shim: Path | None = None
        self._network: IsolatedNetwork | None = None
        # Folders above the workspaces (one per experiment): emptied folders are removed at close,
        # not after every trial, where the next trial would only create the same folder again.
        self._parents: set[Path] = set()
        self._resolved: dict[Path, str] = {}  # a folder of workspaces, or a task's folder -> its real path
        # Removing a finished trial's folder goes on in a thread while the next trial runs: a workspace the
        # agent filled (node_modules, a build) takes seconds to remove. Folders still being removed are
        # known, so a trial of the same key waits for its removal.
        self._removals = Background("comet-local-removal")
        self._removing: set[Path] = set()

    def start_slots(self) -> tuple[str, int]:
        """This machine: the agents' processes run here, on the cores this process may use."""
        return ("local", len(os.sched_getaffinity(0)))

    def prepare(self, task: Task) -> None:
        """Nothing to build: the environment files are copied per trial."""

    def expect(self, task: str | None) -> None:
        """Nothing is made ahead: a folder copy is as quick as it gets."""

    def create(self, task: Task, trial_key: str) -> LocalWorkspace:
        path = self._root / trial_key
        if path in self._removing:  # the same trial again (a rerun): its old folder must be gone first
            self._removals.drain()
        self._parents.add(path.parent)
        self._supervisor.start()  # before any command of the workspace runs
        self._owned.claim(path)
        fresh_copy(task.environment_dir, path)
        # The folder itself was just made (no link); its parent is resolved once per experiment.
        parent = self._resolved.get(path.parent)
        if parent is None:
            parent = self._resolved[path.parent] = os.path.realpath(path.parent)
        shim, network = str(self._validation_shim()), self._isolated_network()
        return LocalWorkspace(
            path,
            shim=shim,
            network=network,
            resolved=f"{parent}/{path.name}",
            real_paths=self._resolved,
            confinement=self._confined(),
        )

    def _confined(self) -> Confinement | None:
        """How agents start here, decided on first use; one warning when they cannot be confined."""
        if not self._confine:
            return None
        if self._confinement is None:
            self._confinement = Confinement(self._private)
            if not self._confinement.available:
                warnings.warn(IsolationWarning(unconfined_warning(self._confinement.problem)), stacklevel=3)
        return self._confinement

    def _validation_shim(self) -> Path:
        if self._shim is None:
            self._shim = self._scratch.make_temp("comet-validation-lib-")
            write_shim(self._shim)
        return self._shim

    def _isolated_network(self) -> IsolatedNetwork | None:
        """The validation network, made on first use; None (and one warning) where none can be made."""
        if self._network is None:
            self._network = IsolatedNetwork.make()
            if not self._network.available:
                warnings.warn(IsolationWarning(self._network.problem), stacklevel=2)
        return self._network if self._network.available else None

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        assert isinstance(workspace, LocalWorkspace)
        if workspace.policy is not ValidationPolicy.STRICT:
            # The trial ends here (interrupted before validation, or validation shared the agent's processes):
            # nothing it started outlives it. Strict validation has ended them already.
            with contextlib.suppress(WorkspaceError):
                workspace.end_processes()
        if keep:
            shutil.rmtree(workspace.host_path / TMP_DIR, ignore_errors=True)
            self._owned.release(workspace.host_path)  # kept for inspection: no sweep takes it
        elif sys.exc_info()[0] is not None:  # Ctrl-C, a stopped worker: the process may be about to end
            self._owned.remove(workspace.host_path)
        else:
            self._remove_later(workspace.host_path)

    def _remove_later(self, path: Path) -> None:
        """Remove *path* (then its owner mark) in the background. Were the process to die first, the
        mark leaves it to the supervisor or the next session's sweep, as any folder of a dead process."""
        self._removing.add(path)

        def remove() -> None:
            try:
                shutil.rmtree(path, ignore_errors=True)  # through open folders: a link is removed, not followed
                self._owned.release(path)
            finally:
                self._removing.discard(path)

        self._removals.submit(remove)

    def drain(self) -> None:
        """Wait until the folders handed to the background removal are gone."""
        self._removals.drain()

    def close(self) -> None:
        self._removals.close()
        if self._shim is not None:
            self._scratch.remove(self._shim)
            remove_empty_parents(self._shim.parent, state_root())
            self._shim = None
        if self._network is not None:
            self._network.close()
            self._network = None
        for parent in sorted(self._parents, key=lambda p: len(p.parts), reverse=True):
            remove_empty_parents(parent, self._root)
        self._parents.clear()
        remove_empty_parents(self._root, self._root.parent)
        self._supervisor.close()
