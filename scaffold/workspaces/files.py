"""File operations on a workspace folder that lives on this machine, shared by the backends.

The local backend's workspace is such a folder; the docker backend bind-mounts one at ``/workspace``,
so copying in and out never needs the engine and behaves the same on both.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scaffold.errors import WorkspaceError

if TYPE_CHECKING:
    # Not at run time: the local backend's supervisor imports this module (through owners) with the
    # standard library only (python -S), and scaffold.workspaces.base reaches pydantic and yaml.
    from scaffold.workspaces.base import FileState, WorkspaceManifest

__all__ = ["HostFiles", "fresh_copy", "host_manifest", "remove_empty_parents"]


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

    def manifest(self, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
        return host_manifest(self._path, exclude, limit)

    def read_files(self, paths: Sequence[str], limit: int) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for rel in paths:
            try:
                target = self._inside(rel)
                if target.is_symlink() or not target.is_file() or target.stat().st_size > limit:
                    continue
                data = target.read_bytes()
            except (OSError, WorkspaceError):  # gone meanwhile, unreadable, or a link pointing out
                continue
            if len(data) <= limit:
                found[rel] = data
        return found


def host_manifest(root: Path, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
    """:meth:`Workspace.manifest` of a host folder: names first (one ``lstat`` each), then the content
    hashes (SHA-256) of the first *limit* in sorted order only, so a huge tree costs a listing, not a read."""
    from scaffold.workspaces.base import FileState, WorkspaceManifest

    skip = set(exclude)
    top = str(root)
    try:
        device = os.lstat(top).st_dev
    except OSError as exc:
        raise WorkspaceError(f"cannot list the workspace {root}: {exc}") from None
    found: list[tuple[str, os.stat_result]] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(top, rel) if rel else top) as entries:  # noqa: PTH118
                for entry in entries:
                    path = f"{rel}/{entry.name}" if rel else entry.name
                    if path in skip or "\n" in entry.name:
                        continue
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        if info.st_dev == device:  # another file system mounted here is not the workspace's
                            pending.append(path)
                    elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                        found.append((path, info))
        except OSError:  # a folder that cannot be read (or vanished) holds nothing we can list
            continue
    found.sort(key=lambda item: item[0])
    files: dict[str, FileState] = {}
    for path, info in found[:limit]:
        full = os.path.join(top, path)  # noqa: PTH118
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(full)
            except OSError:
                continue
            files[path] = FileState(len(os.fsencode(target)), 0o777, None, link=target)
        else:
            files[path] = FileState(info.st_size, stat.S_IMODE(info.st_mode), _sha256(full))
    return WorkspaceManifest(files, truncated=len(found) > limit)


def _sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:  # noqa: PTH123
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


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
