"""File operations on a workspace folder that lives on this machine, shared by the backends.

The local backend's workspace is such a folder; the docker backend bind-mounts one at ``/workspace``,
so copying in and out never needs the engine and behaves the same on both.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from scaffold.errors import WorkspaceError

if TYPE_CHECKING:
    # Not at run time: the local backend's supervisor imports this module (through owners) with the
    # standard library only (python -S), and scaffold.workspaces.base reaches pydantic and yaml.
    from scaffold.workspaces.base import FileState, WorkspaceManifest

__all__ = [
    "HostFiles",
    "copy_tree",
    "fresh_copy",
    "host_manifest",
    "node_script",
    "read_bytes",
    "remove_empty_parents",
]


def node_script(path: Path) -> bool:
    """Whether *path* is a Node.js script (its first line runs ``node``): an npm CLI's entry."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


_READ_FLAGS: Final = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


class HostFiles:
    """``put``/``write_text``/``read_text``/``glob``/``remove`` confined to one host folder."""

    def __init__(self, path: Path, *, resolved: str | None = None) -> None:
        self._path = path
        self._resolved = resolved
        """The folder's real path: given by a backend that knows it (it made the folder below a root it
        resolved once), else worked out on first use."""

    @property
    def host_path(self) -> Path:
        return self._path

    @property
    def real_root(self) -> str:
        """The folder's real path (no link in it), worked out once."""
        if self._resolved is None:
            self._resolved = os.path.realpath(self._path)
        return self._resolved

    def _inside(self, rel: str) -> Path:
        """*rel* as a path inside the workspace, its links followed; a path that leaves it (``..``, absolute,
        a symlink pointing out) is a WorkspaceError."""
        root = self.real_root
        # Empty and "." components are dropped first: realpath mishandles "loop//x" after a symlink loop.
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        clean = ("/" if rel.startswith("/") else "") + "/".join(parts)
        target = os.path.realpath(os.path.join(root, clean))
        if target != root and not target.startswith(root + os.sep):
            raise WorkspaceError(f"{rel!r} points outside the workspace {self._path}")
        return Path(target)

    def put(self, source: Path, dest: str) -> None:
        target = self._inside(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            copy_tree(source, target)
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
        data = text.encode("utf-8")
        try:
            _write(target, data)
        except FileNotFoundError:  # its folder is missing: made only then
            target.parent.mkdir(parents=True, exist_ok=True)
            _write(target, data)

    def read_text(self, rel: str) -> str | None:
        target = self._inside(rel)
        try:
            fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        try:
            return b"".join(_blocks(fd)).decode("utf-8", errors="replace")
        except IsADirectoryError:
            return None
        finally:
            os.close(fd)

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
                target = str(self._inside(rel))
                info = os.lstat(target)
                if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                    continue
                data = read_bytes(target)
            except (OSError, WorkspaceError):  # gone meanwhile, unreadable, or a link pointing out
                continue
            if data is not None and len(data) <= limit:
                found[rel] = data
        return found


def host_manifest(root: Path, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
    """:meth:`Workspace.manifest` of a host folder: names first (one ``lstat`` each), then the content
    hashes (SHA-256) of the first *limit* in sorted order only, so a huge tree costs a listing, not a read."""
    from scaffold.workspaces.base import FileState, WorkspaceManifest

    top = str(root)
    found = _listing(root, set(exclude))
    files: dict[str, FileState] = {}
    for path, info in found[:limit]:
        full = os.path.join(top, path)
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(full)
            except OSError:
                continue
            files[path] = FileState(len(os.fsencode(target)), 0o777, None, link=target)
            continue
        files[path] = FileState(info.st_size, stat.S_IMODE(info.st_mode), _sha256(full))
    return WorkspaceManifest(files, truncated=len(found) > limit)


def _listing(root: Path, skip: set[str]) -> list[tuple[str, os.stat_result]]:
    """Every regular file and link under *root* but those in *skip*, with its ``lstat``, sorted by path."""
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
            with os.scandir(os.path.join(top, rel) if rel else top) as entries:
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
    return found


def _sha256(path: str) -> str | None:
    """The file's SHA-256; None when it cannot be read. A link is not followed (the listing saw a regular
    file; one put in its place meanwhile is not read through)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        digest = hashlib.sha256()
        for block in _blocks(fd):
            digest.update(block)
    except OSError:
        return None
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_bytes(path: str) -> bytes | None:
    """The bytes of the regular file at *path*, a link not followed; None when it cannot be read."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        return b"".join(_blocks(fd))
    except OSError:
        return None
    finally:
        os.close(fd)


def _blocks(fd: int) -> Iterator[bytes]:
    """What is left to read of *fd*, a MiB at a time."""
    while block := os.read(fd, 1 << 20):
        yield block


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def fresh_copy(source: Path, path: Path) -> None:
    """Make *path* a new folder holding a copy of *source* (replacing whatever was there)."""
    try:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        copy_tree(source, path)
    except OSError as exc:
        raise WorkspaceError(f"cannot create the workspace {path}: {exc}") from exc


def copy_tree(source: Path, dest: Path) -> None:
    """Copy the folder *source* into *dest*, made when missing and merged into when not: every file's bytes,
    mode and times, links as links, each folder's mode and times once its content is in.

    What ``shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)`` does, but for the reason this
    exists: a link already in *dest* where a file or folder is to go is replaced, never written through
    (copytree writes through it), so an agent's link cannot send the harness's files (validation scripts
    copied in after the agent) out of its workspace. Extended attributes are not copied (a task's files
    carry none a trial needs). Raises OSError at the first file that cannot be copied; a special file (a
    FIFO, a socket) is one.
    """
    folders: list[tuple[str, os.stat_result]] = []
    pending = [(os.path.abspath(source), str(dest), os.stat(source))]
    while pending:
        src, dst, info = pending.pop()
        _make_folder(dst)
        folders.append((dst, info))
        with os.scandir(src) as entries:
            for entry in entries:
                to = f"{dst}/{entry.name}"
                found = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(found.st_mode):
                    pending.append((entry.path, to, found))
                elif stat.S_ISLNK(found.st_mode):
                    _replace_with_link(os.readlink(entry.path), to)
                    os.utime(to, ns=(found.st_atime_ns, found.st_mtime_ns), follow_symlinks=False)
                elif stat.S_ISREG(found.st_mode):
                    _copy_file(entry.path, to, found)
                else:
                    raise OSError(f"{entry.path} is not a regular file, folder or link: not copied")
    # Deepest first (the reverse of the order made): a folder's times are set after its content is in, and
    # a read-only folder's mode only once nothing more is written into it.
    for path, info in reversed(folders):
        os.chmod(path, stat.S_IMODE(info.st_mode))
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _make_folder(path: str) -> None:
    try:
        os.mkdir(path)
    except FileExistsError:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return  # merged into
        os.unlink(path)  # a file or a link in the way
        os.mkdir(path)


def _replace_with_link(target: str, path: str) -> None:
    try:
        os.symlink(target, path)
    except FileExistsError:
        _remove_entry(path)
        os.symlink(target, path)


def _remove_entry(path: str) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _copy_file(source: str, dest: str, info: os.stat_result) -> None:
    src = os.open(source, _READ_FLAGS)
    try:
        try:
            out = os.open(dest, _WRITE_FLAGS, 0o600)
        except OSError:  # a link (O_NOFOLLOW) or a folder in the way: replaced, not written through
            if not os.path.lexists(dest):
                raise
            _remove_entry(dest)
            out = os.open(dest, _WRITE_FLAGS, 0o600)
        try:
            _move_bytes(src, out, info.st_size)
            os.chmod(out, stat.S_IMODE(info.st_mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(src)


def _move_bytes(src: int, out: int, size: int) -> None:
    """Everything left to read of *src*, written to *out*: in the kernel when it can, else through here.
    Once the *size* its stat gave has gone, no further call looks for more (a copy's last system call
    but one, every file): a file that grows meanwhile is copied as it was when listed."""
    try:
        sent = 0
        while sent < size or not size:
            moved = os.sendfile(out, src, None, 1 << 30)
            if not moved:
                break
            sent += moved
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        for block in _blocks(src):
            view = memoryview(block)
            while view:
                view = view[os.write(out, view) :]


def remove_empty_parents(path: Path, stop: Path) -> None:
    """Remove *path* and its parents up to (not including) *stop* while they are empty."""
    while path != stop and path.is_relative_to(stop):
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
