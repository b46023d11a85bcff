"""The ``local`` backend: a fresh directory per trial, commands as subprocesses with tree-kill timeouts.

Isolation is by directory and environment only (no container): enough for trusted agents and the
oracle, and it needs nothing installed. Commands get a small allow-listed environment, never the
harness's own, so credentials in the parent environment do not leak into a trial.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.errors import WorkspaceError
from scaffold.procs import ProcessResult, run_process
from scaffold.tasks import Task

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


class LocalWorkspace:
    def __init__(self, path: Path) -> None:
        self._path = path

    @property
    def root(self) -> str:
        return str(self._path)

    @property
    def host_path(self) -> Path:
        return self._path

    @property
    def python(self) -> str:
        return sys.executable

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

    def _inside(self, rel: str) -> Path:
        target = (self._path / rel).resolve()
        if not target.is_relative_to(self._path.resolve()):
            raise WorkspaceError(f"{rel!r} points outside the workspace {self._path}")
        return target

    def put(self, source: Path, dest: str) -> None:
        target = self._inside(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)

    def write_text(self, dest: str, text: str) -> None:
        target = self._inside(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def read_text(self, rel: str) -> str | None:
        try:
            return self._inside(rel).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def glob(self, pattern: str) -> list[str]:
        root = self._path.resolve()
        found = []
        for path in self._path.glob(pattern):
            if path.resolve().is_relative_to(root) and path.exists():
                found.append(path.relative_to(self._path).as_posix())
        return sorted(found)

    def remove(self, rel: str) -> None:
        target = self._inside(rel)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)


class LocalBackend:
    name = "local"

    def __init__(self, workspace_root: Path) -> None:
        self._root = workspace_root

    def prepare(self, task: Task) -> None:
        """Nothing to build: the environment files are copied per trial."""

    def create(self, task: Task, trial_key: str) -> LocalWorkspace:
        path = self._root / trial_key
        try:
            if path.exists():
                shutil.rmtree(path)
            path.mkdir(parents=True)
            shutil.copytree(task.environment_dir, path, symlinks=True, dirs_exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"cannot create the workspace {path}: {exc}") from exc
        return LocalWorkspace(path)

    def destroy(self, workspace: object, *, keep: bool) -> None:
        assert isinstance(workspace, LocalWorkspace)
        shutil.rmtree(workspace.host_path / ".tmp", ignore_errors=True)
        if not keep:
            shutil.rmtree(workspace.host_path, ignore_errors=True)
            _remove_empty_parents(workspace.host_path.parent, self._root)

    def close(self) -> None:
        _remove_empty_parents(self._root, self._root.parent)


def _remove_empty_parents(path: Path, stop: Path) -> None:
    """Remove *path* and its parents up to (not including) *stop* while they are empty."""
    while path != stop and path.is_relative_to(stop):
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
