"""The manifest of a container's workspace in one exec: a POSIX shell script that needs only what every
image has (``find``, ``sort``, ``head``, ``stat`` and a checksum tool: coreutils or busybox), no Python.

The script lists regular files and links below the root without following links or entering another
file system (``find -xdev``: the agent CLI's mount, ``/proc`` when the root is ``/``), sorts the paths
(byte order, as Python sorts them), keeps the first *limit* + 1, then prints, in batches of files:

    A <tool>                  the checksum tool it found (sha256sum, else md5sum, else cksum)
    S <size> <mode> ./<path>  ``stat`` of each regular file (octal permission bits)
    <checksum line>           the tool's own line for each file it could read
    L ./<path> / T <target>   a link and its target
    E                         the end: the listing is complete

Every line names its path, so a file the checksum tool cannot read only lacks a digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import FileState, WorkspaceManifest
from scaffold.workspaces.docker.exec import quick_exec

__all__ = ["SYSTEM_FOLDERS", "container_manifest", "parse_manifest"]

SYSTEM_FOLDERS: Final = (
    "proc", "sys", "dev", "run", "tmp", "var", "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32",
    "etc", "boot", "root", "opt", "logs", "tests", "solution", "installed-agent",
)  # fmt: skip
"""Left out when a Harbor image's WORKDIR is ``/``: the system, the agent's HOME and Harbor's own folders
(/logs, /tests, /solution) are not the workspace."""

_BATCH: Final = 200

_SCRIPT: Final = r"""
cd "$0" || exit 3
limit=$1
shift
n=$#
for x; do set -- "$@" -o -path "./$x"; done
shift "$n"
sum=
for tool in sha256sum md5sum cksum; do
  if command -v "$tool" >/dev/null 2>&1; then sum=$tool; break; fi
done
[ -n "$sum" ] || { echo "no checksum tool (sha256sum, md5sum, cksum) in the image" >&2; exit 4; }
command -v stat >/dev/null 2>&1 || { echo "no stat in the image" >&2; exit 4; }
echo "A $sum"
nl='
'
flush() {
  [ $# -gt 0 ] || return 0
  stat -c 'S %s %a %n' "$@" 2>/dev/null
  "$sum" "$@" 2>/dev/null
  return 0
}
find . -xdev \( -path ./. "$@" \) -prune -o \( -type f -o -type l \) ! -path "*$nl*" -print 2>/dev/null \
  | LC_ALL=C sort | head -n "$((limit + 1))" | {
  set --
  while IFS= read -r p; do
    if [ -L "$p" ]; then
      printf 'L %s\n' "$p"
      printf 'T %s\n' "$(readlink "$p")"
    else
      set -- "$@" "$p"
      if [ $# -ge BATCH ]; then flush "$@"; set --; fi
    fi
  done
  flush "$@"
}
echo E
""".replace("BATCH", str(_BATCH))


def container_manifest(api: Any, container_id: str, root: str, exclude: Sequence[str], limit: int) -> WorkspaceManifest:
    """:meth:`Workspace.manifest` of *root* in the container, with one exec."""
    skip = [p.strip("/") for p in exclude if p.strip("/")]
    if root.rstrip("/") == "":
        skip += SYSTEM_FOLDERS
    try:
        code, out, err = quick_exec(api, container_id, ["/bin/sh", "-c", _SCRIPT, root, str(limit), *skip], root or "/")
    except Exception as exc:
        raise WorkspaceError(f"cannot list the files of {root} in the container: {exc}") from None
    text = out.decode("utf-8", errors="surrogateescape")
    if code != 0 or not text.endswith("E\n"):
        reason = err.decode("utf-8", errors="replace").strip() or f"exit code {code}"
        raise WorkspaceError(f"cannot list the files of {root} in the container: {reason}")
    return parse_manifest(text, limit)


def parse_manifest(text: str, limit: int) -> WorkspaceManifest:
    """The manifest in the script's output (see the module docstring)."""
    tool = ""
    sizes: dict[str, tuple[int, int]] = {}
    digests: dict[str, str] = {}
    links: dict[str, str] = {}
    link: str | None = None
    for line in text.split("\n"):
        if line.startswith("A "):
            tool = line[2:]
        elif line.startswith("S "):
            size, mode, name = [*line[2:].split(" ", 2), "", ""][:3]
            if name.startswith("./") and size.isdigit():
                sizes[name[2:]] = (int(size), int(mode, 8) if mode.isdigit() else 0)
        elif line.startswith("L ./"):
            link = line[4:]
        elif line.startswith("T ") and link is not None:
            links[link], link = line[2:], None
        elif line and line != "E":
            found = _checksum(line, tool)
            if found is not None:
                digests[found[0]] = found[1]
    files: dict[str, FileState] = {}
    for path in sorted({*sizes, *links}):
        if path in links:
            target = links[path]
            files[path] = FileState(len(target.encode("utf-8", "surrogateescape")), 0o777, None, link=target)
        else:
            length, bits = sizes[path]
            files[path] = FileState(length, bits, digests.get(path))
    names = list(files)
    kept = {name: files[name] for name in names[:limit]}
    return WorkspaceManifest(kept, truncated=len(names) > limit)


def _checksum(line: str, tool: str) -> tuple[str, str] | None:
    """(path, digest) of one line of the checksum tool, or None when the line is not one."""
    if tool == "cksum":  # "CRC SIZE ./path"
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2].startswith("./"):
            return parts[2][2:], f"{parts[0]}-{parts[1]}"
        return None
    escaped = line.startswith("\\")  # GNU coreutils escapes a name holding a backslash
    body = line[1:] if escaped else line
    digest, sep, name = body.partition("  ")
    if not sep or not name.startswith("./") or not digest.isalnum():
        return None
    if escaped:
        name = name.replace("\\\\", "\0").replace("\\n", "\n").replace("\\r", "\r").replace("\0", "\\")
    return name[2:], digest
