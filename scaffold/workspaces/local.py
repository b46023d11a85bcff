"""The ``local`` backend: a fresh directory per trial, commands as subprocesses with tree-kill timeouts.

Isolation is by directory and environment only (no container): enough for trusted agents and the
oracle, and it needs nothing installed. Commands get a small allow-listed environment, never the
harness's own, so credentials in the parent environment do not leak into a trial.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.procs import ProcessResult, run_process
from scaffold.tasks import Task
from scaffold.workspaces.files import HostFiles, fresh_copy, remove_empty_parents

__all__ = ["LocalBackend", "LocalWorkspace", "base_environment"]

_PASSED_THROUGH = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "SHELL")


def base_environment(workspace: Path) -> dict[str, str]:
    """The environment a command in a local workspace starts from.

    The harness's interpreter comes first on PATH so ``python3`` in a task script is the Python the
    harness runs on; temporary files stay inside the workspace.
    """
    env = {key: os.environ[key] for key in _PASSED_THROUGH if key in os.environ}
    path = os.environ.get("PATH", os.defpath)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    env["COMET_WORKSPACE"] = str(workspace)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    tmp = workspace / ".tmp"
    env["TMPDIR"] = str(tmp)
    return env


class LocalWorkspace(HostFiles):
    """A host folder; file operations come from :class:`HostFiles`, commands run as subprocesses."""

    validation_pythonpath: str | None = None
    """Where ``scaffold.python.validation.core`` is importable from, shared by the backend's trials
    (so it is not written into every workspace)."""

    @property
    def root(self) -> str:
        return str(self._path)

    @property
    def python(self) -> str:
        return sys.executable

    def host_visible(self, path: Path) -> str | None:
        return str(path.resolve())

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        stdout_path: Path,
        stderr_path: Path,
    ) -> ProcessResult:
        (self._path / ".tmp").mkdir(exist_ok=True)
        full_env = {**base_environment(self._path), **env}
        return run_process(
            argv, cwd=self._path, env=full_env, timeout=timeout, stdout_path=stdout_path, stderr_path=stderr_path
        )


class LocalBackend:
    name = "local"

    def __init__(self, workspace_root: Path) -> None:
        self._root = workspace_root
        self._shim: Path | None = None
        # Folders above the workspaces (one per experiment): emptied folders are removed at close,
        # not after every trial, where the next trial would only create the same folder again.
        self._parents: set[Path] = set()

    def prepare(self, task: Task) -> None:
        """Nothing to build: the environment files are copied per trial."""

    def create(self, task: Task, trial_key: str) -> LocalWorkspace:
        path = self._root / trial_key
        self._parents.add(path.parent)
        fresh_copy(task.environment_dir, path)
        workspace = LocalWorkspace(path)
        workspace.validation_pythonpath = str(self._validation_shim())
        return workspace

    def _validation_shim(self) -> Path:
        if self._shim is None:
            from scaffold.validation.runner import write_shim

            self._shim = Path(tempfile.mkdtemp(prefix="comet-validation-lib-"))
            write_shim(self._shim)
        return self._shim

    def destroy(self, workspace: object, *, keep: bool) -> None:
        assert isinstance(workspace, LocalWorkspace)
        if keep:
            shutil.rmtree(workspace.host_path / ".tmp", ignore_errors=True)
        else:
            shutil.rmtree(workspace.host_path, ignore_errors=True)

    def close(self) -> None:
        if self._shim is not None:
            shutil.rmtree(self._shim, ignore_errors=True)
            self._shim = None
        for parent in sorted(self._parents, key=lambda p: len(p.parts), reverse=True):
            remove_empty_parents(parent, self._root)
        self._parents.clear()
        remove_empty_parents(self._root, self._root.parent)
