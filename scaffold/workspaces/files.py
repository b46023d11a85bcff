"""File operations on a workspace folder that lives on this machine, shared by the backends.

The local backend's workspace is such a folder; the docker backend bind-mounts one at ``/workspace``,
so copying in and out never needs the engine and behaves the same on both.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scaffold.errors import WorkspaceError

__all__ = ["HostFiles", "fresh_copy", "remove_empty_parents"]


class HostFiles:
    """``put``/``write_text``/``read_text``/``glob``/``remove`` confined to one host folder."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._resolved: str | None = None

    @property
    def host_path(self) -> Path:
        return self._path

    def _inside(self, rel: str) -> Path:
        """*rel* as a path inside the workspace; a path that leaves it (``..``, absolute, a symlink
        pointing out) is a WorkspaceError.

        Checks only the components below the root (lexically, then each existing one for a symlink)
        instead of resolving the whole absolute path: this runs several times per trial and a full
        ``resolve()`` costs a system call per component of the root's path as well.
        """
        if self._resolved is None:
            self._resolved = os.path.realpath(self._path)
        root = self._resolved
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if rel.startswith("/") or ".." in parts:
            return self._inside_slow(rel, parts, root)
        current = root
        for part in parts:  # str paths: pathlib objects cost more than the system calls here
            current = os.path.join(current, part)  # noqa: PTH118
            if os.path.islink(current):  # noqa: PTH114
                return self._inside_slow(rel, parts, root)
        return Path(current)

    def _inside_slow(self, rel: str, parts: list[str], root: str) -> Path:
        # Empty and "." components are dropped first: realpath mishandles "loop//x" after a symlink loop.
        clean = ("/" if rel.startswith("/") else "") + "/".join(parts)
        target = os.path.realpath(os.path.join(root, clean))  # noqa: PTH118
        if target != root and not target.startswith(root + os.sep):
            raise WorkspaceError(f"{rel!r} points outside the workspace {self._path}")
        return Path(target)

    def put(self, source: Path, dest: str) -> None:
        target = self._inside(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)

    def put_at(self, source: Path, path: str) -> None:
        # A folder of this machine is no machine of its own: writing /tests or /solution here would write
        # this machine's root. Harbor-format tasks (the only users) therefore need a container.
        raise WorkspaceError(
            f"cannot put {source.name} at {path}: this workspace ({self._path}) shares this machine's file "
            "system; Harbor-format tasks run with --backend docker"
        )

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


def fresh_copy(source: Path, path: Path) -> None:
    """Make *path* a new folder holding a copy of *source* (replacing whatever was there)."""
    try:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        shutil.copytree(source, path, symlinks=True, dirs_exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"cannot create the workspace {path}: {exc}") from exc


def remove_empty_parents(path: Path, stop: Path) -> None:
    """Remove *path* and its parents up to (not including) *stop* while they are empty."""
    while path != stop and path.is_relative_to(stop):
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
