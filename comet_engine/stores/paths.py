"""Sandboxed paths: everything the engine writes or reads by name stays under its root.

A relative path is accepted only if it cannot leave its root on any platform we meet: absolute paths
(``/x``, ``\\x``, ``//host/share``), home references (``~``, ``~user``), drive letters (``C:``, ``c:x``),
``..`` anywhere and NUL bytes are rejected with ``UnsafePathError``. Backslashes count as separators, so
a path written on Windows means the same here. ``.`` and empty segments are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath, PurePosixPath

from comet_engine.errors import UnsafePathError

__all__ = ["check_run_id", "resolve_under", "safe_relative"]

_DRIVE = re.compile(r"^[A-Za-z]:")
_MAX_RUN_ID = 200  # leaves room under the usual 255-byte file name limit for temp-file suffixes


def safe_relative(path: str | PurePath, what: str = "path") -> PurePosixPath:
    """*path* as a normalised relative POSIX path, or ``UnsafePathError`` naming *what* and the fix."""
    text = path.as_posix() if isinstance(path, PurePath) else path
    if not isinstance(text, str):
        raise UnsafePathError(f"{what} must be a string path, got {type(path).__name__}")
    fix = "use a path relative to the run or project directory, without '..'"
    if "\0" in text:
        raise UnsafePathError(f"{what} {text!r} contains a NUL byte; {fix}")
    unified = text.replace("\\", "/")
    if unified.startswith("/"):
        raise UnsafePathError(f"{what} {text!r} is absolute; {fix}")
    if unified.startswith("~"):
        raise UnsafePathError(f"{what} {text!r} refers to a home directory ('~'); {fix}")
    if _DRIVE.match(unified):
        raise UnsafePathError(f"{what} {text!r} starts with a drive letter; {fix}")
    parts = [part for part in unified.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(f"{what} {text!r} contains '..' and could leave its directory; {fix}")
    if not parts:
        raise UnsafePathError(f"{what} {text!r} is empty; name a file or directory inside the root")
    return PurePosixPath(*parts)


def resolve_under(root: Path, path: str | PurePath, what: str = "path") -> Path:
    """``root / path`` after ``safe_relative``; also refuses a symlink inside the root that points out of it."""
    candidate = root / safe_relative(path, what)
    base = root.resolve()
    if not candidate.resolve().is_relative_to(base):
        raise UnsafePathError(
            f"{what} {str(path)!r} resolves to {candidate.resolve()} through a symbolic link, outside {base}; "
            "replace the link with a real file or directory"
        )
    return candidate


def check_run_id(run_id: str) -> str:
    """A run id must name exactly one directory entry: a safe relative path of one segment."""
    if not isinstance(run_id, str) or not run_id:
        raise UnsafePathError(f"run id {run_id!r} must be a non-empty string")
    if len(run_id) > _MAX_RUN_ID:
        raise UnsafePathError(f"run id {run_id[:40]!r}... is {len(run_id)} characters; use at most {_MAX_RUN_ID}")
    relative = safe_relative(run_id, "run id")
    if len(relative.parts) != 1 or str(relative) != run_id or ":" in run_id or any(ord(char) < 32 for char in run_id):
        raise UnsafePathError(
            f"run id {run_id!r} must be one plain name (no '/', '\\\\', ':' or control characters); "
            "use letters, digits, '-', '_' and '.'"
        )
    return run_id
