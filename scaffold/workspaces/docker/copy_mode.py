"""Copy mode of the docker backend: the workspace lives inside the container, for engines that cannot see
this machine's folders (a remote ``DOCKER_HOST``, or an engine in another mount namespace).

Files go in with ``put_archive`` and come out with ``get_archive``; listing and removal run in the
container. Each of those is an engine round trip (~40-60 ms even locally: the engine mounts the
container's file system for every archive call), so writes are batched: ``put`` and ``write_text``
only queue, and the queue goes in as one archive right before anything can observe it (a command, a
read, a listing, the copy out). Removals are queued too and run as the prologue of the next command
or listing. Operations on overlapping paths keep their order: the earlier queue is flushed first.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.exec import quick_exec

__all__ = [
    "COPY_ENV",
    "ContainerFiles",
    "copy_from_env",
    "engine_sees",
    "extract_workspace",
    "first_file",
    "match_glob",
    "put_absolute",
    "tar_stream",
]

COPY_ENV = "COMET_DOCKER_COPY"

_BLOCK = 512
_CHUNK = 1 << 20
_GO_DIR = 1 << 31  # Go's os.ModeDir and os.ModeSymlink, as the engine reports a path's mode
_GO_SYMLINK = 1 << 27
_FEW_READS = 1  # one file: its own get_archive; more: one archive of the whole workspace (~60 ms a call)

# Lists the workspace as NUL-separated "d<path>" (folders) and "f<path>" (anything else), after removing
# the paths given as arguments. Symbolic links count when their target exists inside the workspace
# (as HostFiles.glob does); folders behind a link are not descended into.
_LIST_SCRIPT = r"""
cd "$0" || exit 1
for p; do rm -rf -- "$p"; done
find . -mindepth 1 -type d -exec printf 'd%s\0' {} +
find . -mindepth 1 ! -type d ! -type l -exec printf 'f%s\0' {} +
find . -mindepth 1 -type l -exec sh -c '
  for p; do
    t=$(readlink -f -- "$p") && [ -e "$p" ] || continue
    case $t in "$0"|"$0"/*) ;; *) continue ;; esac
    if [ -d "$p" ]; then printf "d%s\0" "$p"; else printf "f%s\0" "$p"; fi
  done' "$0" {} +
exit 0
"""


# --- which mode --------------------------------------------------------------------------------------


def copy_from_env() -> bool | None:
    """``COMET_DOCKER_COPY``: 1 forces copy mode, 0 bind mode; unset or ``auto`` lets the engine decide."""
    value = os.environ.get(COPY_ENV, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise WorkspaceError(f"{COPY_ENV}={value!r}: use 1 (copy files through the engine), 0 (bind mounts) or auto")


def engine_sees(api: Any, folder: Path, image: str, labels: dict[str, str]) -> bool:
    """Whether the engine can bind-mount *folder* of this machine: create (never start) a container that
    bind-mounts it. With ``--mount type=bind`` the engine refuses a source that does not exist on its
    side, so an engine elsewhere (a remote ``DOCKER_HOST``, or one that sees another file system, e.g.
    the host's engine from inside a container) fails here, while a local engine creates the container
    (removed at once). Give it a new, uniquely named folder: one that might exist there too proves nothing.
    """
    from docker.errors import APIError
    from docker.types import Mount

    try:
        config = api.create_host_config(
            mounts=[Mount("/probe", str(folder), type="bind", read_only=True)], network_mode="none"
        )
        created = api.create_container(image, ["true"], labels=labels, host_config=config)
    except APIError as exc:
        if "does not exist" in str(exc):
            return False
        raise WorkspaceError(f"cannot ask the Docker engine whether it sees {folder}: {exc}") from None
    api.remove_container(created["Id"], force=True)
    return True


# --- tar streams ---------------------------------------------------------------------------------------


def _padding(size: int) -> bytes:
    return b"\0" * (-size % _BLOCK)


def _header(info: tarfile.TarInfo) -> bytes:
    info.uid = info.gid = 0  # the container's root owns what the harness puts in, as with a bind mount
    info.uname = info.gname = "root"
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _walk(source: Path, arcname: str) -> Iterator[tuple[Path, str]]:
    """*source*'s folders, files and links below it (links not followed), parents first, sorted."""
    for top, dirs, files in os.walk(source):
        dirs.sort()
        rel = Path(top).relative_to(source).as_posix()
        base = arcname if rel == "." else f"{arcname}/{rel}" if arcname else rel
        for name in [*dirs, *sorted(files)]:
            yield Path(top) / name, f"{base}/{name}" if base else name


def tar_stream(entries: Sequence[tuple[str, Path | bytes]]) -> Iterator[bytes]:
    """A tar archive of (*arcname*, host file or folder, or bytes) entries, produced chunk by chunk so
    that a large folder (an agent CLI: hundreds of MB) is never held in memory. Modes, symbolic links
    and hard links inside the archive are kept; owners are root."""
    maker = tarfile.TarFile(fileobj=io.BytesIO(), mode="w")  # for gettarinfo and its hard-link table
    for arcname, source in entries:
        if isinstance(source, bytes):
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = len(source), 0o644, int(time.time())
            yield _header(info) + source + _padding(len(source))
            continue
        if source.is_dir():  # also a link to a folder at the top: its content goes in, as HostFiles.put does
            if arcname:  # "" is the content of the folder, at the top of the archive
                info = tarfile.TarInfo(arcname)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, source.stat().st_mode & 0o7777, int(time.time())
                yield _header(info)
            paths: Iterator[tuple[Path, str]] = _walk(source, arcname)
        else:
            paths = iter([(source.resolve(), arcname)])
        for path, name in paths:
            found = maker.gettarinfo(str(path), name)
            if found is None:  # sockets and the like
                continue
            yield _header(found)
            if found.isreg():
                yield from _file_chunks(path, found.size)
    yield b"\0" * (2 * _BLOCK)


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    remaining = size
    with path.open("rb") as handle:
        while remaining > 0:
            chunk = handle.read(min(_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    yield b"\0" * remaining + _padding(size)  # a file that shrank meanwhile still matches its header


class _ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (an engine response), for ``tarfile``'s streams."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = chunk
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


def first_file(archive: bytes) -> bytes | None:
    """The content of the first member of a tar archive (``get_archive`` of one file)."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        member = tar.next()
        handle = tar.extractfile(member) if member is not None else None
        return handle.read() if handle is not None else None


def extract_workspace(chunks: Iterator[bytes], dest: Path) -> None:
    """Extract a ``get_archive`` of the workspace folder into *dest*, dropping its top folder.

    Members that would not be safe on this machine (links out of the folder, absolute links, devices)
    are left out rather than failing the copy: the kept workspace is for inspection.
    """

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        parts = member.name.split("/", 1)
        if len(parts) < 2 or not parts[1]:
            return None  # the workspace folder itself
        linkname = member.linkname
        if member.islnk():
            linkname = linkname.split("/", 1)[-1]  # hard links name a member, which lost its top folder too
        try:
            return tarfile.data_filter(member.replace(name=parts[1], linkname=linkname, deep=False), path)
        except tarfile.FilterError:
            return None

    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks), _CHUNK), mode="r|") as archive:
        for member in archive:
            archive.extract(member, dest, filter=keep)


def put_absolute(api: Any, container: str, source: Path, path: str) -> None:
    """Copy a host file or folder to the absolute *path* of a container (its parent must exist)."""
    target = PurePosixPath(path)
    if not target.is_absolute() or ".." in target.parts or target == PurePosixPath("/"):
        raise WorkspaceError(f"{path!r}: not an absolute path below / without '..'")
    if not source.exists():
        raise WorkspaceError(f"cannot copy {source} into the container: it does not exist")
    try:
        api.put_archive(container, str(target.parent), tar_stream([(target.name, source)]))
    except Exception as exc:
        raise WorkspaceError(f"cannot copy {source} to {path} in the container: {exc}") from None


# --- the files of a workspace inside a container -------------------------------------------------------


def _relative(rel: str) -> str:
    """*rel* as a normalized workspace-relative path; refuses paths that leave the workspace."""
    path = PurePosixPath(rel)
    parts: list[str] = []
    for part in path.parts:
        if part in ("", "."):
            continue
        if part == ".." and parts:
            parts.pop()
        elif part == ".." or path.is_absolute():
            raise WorkspaceError(f"{rel!r} points outside the workspace")
        else:
            parts.append(part)
    return "/".join(parts)


def _overlaps(a: str, b: str) -> bool:
    """One path is the other or inside it ("" is the whole workspace)."""
    return a == b or not a or not b or a.startswith(b + "/") or b.startswith(a + "/")


def _inside(path: str, folder: str) -> bool:
    return path == folder or not folder or path.startswith(folder + "/")


def match_glob(pattern: str, entries: dict[str, bool]) -> list[str]:
    """The paths of *entries* (path -> is a folder) matching *pattern* as ``Path.glob`` would: ``*``, ``?``
    and ``[...]`` within one name, ``**`` for any number of folders (alone at the end: folders only)."""
    parts = [p for p in PurePosixPath(pattern).parts if p not in ("", ".")]
    return sorted(path for path, is_dir in entries.items() if _match(parts, path.split("/"), is_dir))


def _match(pattern: list[str], parts: list[str], is_dir: bool) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        if not rest:
            return is_dir  # also the folder the pattern named before it ("a/**" matches "a")
        return any(_match(rest, parts[i:], is_dir) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _match(rest, parts[1:], is_dir)


class ContainerFiles:
    """``put``/``write_text``/``read_text``/``glob``/``remove`` on the workspace folder of a container.

    *container* returns the current container's id (it changes when a container is replaced; the files
    live in a volume that the replacement mounts too). *host_path* is where a kept workspace is copied.
    """

    def __init__(self, api: Any, container: Callable[[], str], root: str, host_path: Path) -> None:
        self._api = api
        self._container = container
        self._root = root
        self._host_path = host_path
        self._writes: list[tuple[str, Path | bytes]] = []
        self._removals: list[str] = []
        self._listing: dict[str, bool] | None = None

    @property
    def host_path(self) -> Path:
        return self._host_path

    # -- queued changes

    def put(self, source: Path, dest: str) -> None:
        if not source.exists():
            raise WorkspaceError(f"cannot copy {source} into the workspace: it does not exist")
        self._queue_write(_relative(dest), source)

    def write_text(self, dest: str, text: str) -> None:
        self._queue_write(_relative(dest), text.encode("utf-8"))

    def put_at(self, source: Path, path: str) -> None:
        """Copy *source* to the absolute *path* in the container at once (queued writes go first)."""
        self.flush_writes()
        put_absolute(self._api, self._container(), source, path)
        self._listing = None

    def seed(self, folder: Path) -> None:
        """Queue the content of *folder* for the workspace's top, links kept as links (as ``fresh_copy``)."""
        self._queue_write("", folder)

    def remove(self, rel: str) -> None:
        target = _relative(rel)
        if not target:
            raise WorkspaceError("refusing to remove the whole workspace")
        if any(_overlaps(target, dest) for dest, _ in self._writes):
            self.flush_writes()  # queued writes come first (with the folders they create), as on a host
        self._removals.append(target)
        self._listing = None

    def _queue_write(self, dest: str, source: Path | bytes) -> None:
        # Queued removals run before queued writes; a write into a path that is still to be removed must
        # therefore wait until the removal is done.
        if any(_overlaps(dest, gone) for gone in self._removals):
            self.flush_removals()
        self._writes.append((dest, source))
        self._listing = None

    def flush_writes(self) -> None:
        if not self._writes:
            return
        writes, self._writes = self._writes, []
        try:
            self._api.put_archive(self._container(), self._root, tar_stream(writes))
        except Exception as exc:
            raise WorkspaceError(f"cannot copy files into the container ({self._root}): {exc}") from None

    def flush_removals(self) -> None:
        if self._removals:
            self._quick(["rm", "-rf", "--", *self.take_removals()])

    def flush(self) -> None:
        self.flush_removals()
        self.flush_writes()

    def take_removals(self) -> list[str]:
        """The queued removals, for the caller to run first thing in its next command."""
        removals, self._removals = self._removals, []
        return removals

    def changed(self) -> None:
        """A command ran: what the workspace holds is unknown again."""
        self._listing = None

    def discard(self) -> None:
        self._writes, self._removals, self._listing = [], [], None

    # -- reads

    def read_text(self, rel: str) -> str | None:
        target = _relative(rel)
        if any(_inside(target, gone) for gone in self._removals):
            return None
        if any(_overlaps(target, dest) for dest, _ in self._writes):
            self.flush_writes()
        path = f"{self._root}/{target}" if target else self._root
        for _ in range(8):  # follow symbolic links inside the workspace, as a host read does
            info, data = self._get_file(path)
            if data is None:
                return None
            mode = int((info or {}).get("mode") or 0)
            if mode & _GO_DIR:
                return None
            if not mode & _GO_SYMLINK:
                return data.decode("utf-8", errors="replace")
            link = str((info or {}).get("linkTarget") or "")
            if not _inside(link, self._root):
                raise WorkspaceError(f"{rel!r} points outside the workspace {self._root}")
            path = link
        return None

    def _get_file(self, path: str) -> tuple[dict[str, Any] | None, bytes | None]:
        """The engine's stat of *path* and, for a file, its content; (None, None) when it does not exist."""
        from docker.errors import NotFound

        try:
            chunks, info = self._api.get_archive(self._container(), path)
            data = b"".join(chunks)  # also for a folder or link: the response must be read to free the connection
        except NotFound:
            return None, None
        except Exception as exc:
            raise WorkspaceError(f"cannot read {path} from the container: {exc}") from None
        if info and int(info.get("mode") or 0) & (_GO_DIR | _GO_SYMLINK):
            return info, b""
        return info, first_file(data)

    def read_files(self, paths: Sequence[str], limit: int) -> dict[str, bytes]:
        """The bytes of each regular file among *paths* of at most *limit* bytes (links not followed): one
        ``get_archive`` per file for a few, else one archive of the whole workspace read as a stream
        (each call costs the engine a mount of the container's file system)."""
        self.flush()
        wanted = {_relative(rel) for rel in paths} - {""}
        if len(wanted) <= _FEW_READS or self._root.rstrip("/") == "":
            found: dict[str, bytes] = {}
            for rel in sorted(wanted):
                info, data = self._get_file(f"{self._root.rstrip('/')}/{rel}")
                mode = int((info or {}).get("mode") or 0)
                if data is not None and not mode & (_GO_DIR | _GO_SYMLINK) and len(data) <= limit:
                    found[rel] = data
            return found
        return self._read_archive(wanted, limit)

    def _read_archive(self, wanted: set[str], limit: int) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        try:
            chunks, _ = self._api.get_archive(self._container(), self._root)
        except Exception as exc:
            raise WorkspaceError(f"cannot read the files of {self._root} from the container: {exc}") from None
        stream = iter(chunks)
        try:
            with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(stream), _CHUNK), mode="r|") as archive:
                for member in archive:
                    rel = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if rel in wanted and member.isreg() and member.size <= limit:
                        handle = archive.extractfile(member)
                        if handle is not None:
                            found[rel] = handle.read()
            for _ in stream:  # read to its end: only then is the engine's connection free again
                pass
        except (tarfile.TarError, OSError) as exc:
            raise WorkspaceError(f"cannot read the files of {self._root} from the container: {exc}") from None
        return found

    def glob(self, pattern: str) -> list[str]:
        if self._listing is None:
            self.flush_writes()
            code, out, err = self._quick(["/bin/sh", "-c", _LIST_SCRIPT, self._root, *self.take_removals()])
            if code != 0:
                raise WorkspaceError(f"cannot list the workspace in the container: {err.decode(errors='replace')}")
            listing: dict[str, bool] = {}
            for entry in out.decode("utf-8", errors="surrogateescape").split("\0"):
                if len(entry) > 3:
                    listing[entry[3:]] = entry[0] == "d"  # "d./name" -> name
            self._listing = listing
        return match_glob(pattern, self._listing)

    def _quick(self, argv: list[str]) -> tuple[int | None, bytes, bytes]:
        try:
            return quick_exec(self._api, self._container(), argv, self._root)
        except Exception as exc:
            raise WorkspaceError(f"cannot run {argv[0]} in the container: {exc}") from None

    # -- out

    def copy_out(self) -> None:
        """Copy the workspace to :attr:`host_path` (replacing what is there)."""
        import shutil

        self.flush()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self._host_path)
        try:
            chunks, _ = self._api.get_archive(self._container(), self._root)
            extract_workspace(iter(chunks), self._host_path)
        except Exception as exc:
            where = self._host_path
            raise WorkspaceError(f"cannot copy the workspace out of the container to {where}: {exc}") from None
