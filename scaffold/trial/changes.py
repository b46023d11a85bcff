"""What the agent changed in its workspace: a snapshot when the agent starts, the changes when validation
is about to start, and the trial folder's ``changes.json``.

The runner calls :func:`capture` right before the agent runs and :func:`record_changes` right before
validation begins, on every backend (through ``Workspace.manifest`` and ``Workspace.read_files``). The
harness's own files are left out: the validation folder, the oracle's copy of the solution, the test
context and results (scaffold.workspaces.layout), what a backend keeps of its own in a workspace (the
local backend's TMPDIR), and a repository's internals (``.git``). The skills and instructions the harness
installed before the agent are in the snapshot, so what the agent did to them is listed like any other
change. Nothing outside the workspace root is ever listed (its HOME, /tmp, Harbor's /logs, /tests and
/solution).

Bounds, per trial, so that a workspace of any size costs bounded time, memory and file size:

* a manifest lists at most :data:`MANIFEST_LIMIT` files, the first in sorted order; beyond it, only
  the paths both manifests cover are compared, and ``truncated`` says so;
* a text file of at most :data:`TEXT_LIMIT` bytes gets a unified diff; a larger one is named with its
  sizes (``omitted: "too large"``); a binary one (a NUL byte, or not UTF-8) is named only (``"binary"``);
* at most :data:`SNAPSHOT_LIMIT` bytes of content are kept from before the agent (and read after it),
  and at most :data:`DIFF_LIMIT` bytes of diff text are written; what does not fit: ``"limit"``;
* at most :data:`LISTED_LIMIT` files are listed (then ``truncated``); ``counts`` count every change found.

A capture that fails (an image without ``stat``, a container gone) never fails the trial: changes.json
then holds no files and an ``error`` naming the problem, and the record's ``changes`` stays None.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from scaffold.records import ChangeCounts
from scaffold.util.atomic import write_json_atomic
from scaffold.workspaces.base import FileState, Workspace, WorkspaceManifest
from scaffold.workspaces.layout import CONTEXT_FILE, RESULTS_FILE, SOLUTION_DIR, VALIDATION_DIR

__all__ = [
    "CHANGES_VERSION",
    "DIFF_LIMIT",
    "HARNESS_PATHS",
    "JUDGE_LIMIT",
    "LISTED_LIMIT",
    "MANIFEST_LIMIT",
    "NOT_LISTED",
    "SNAPSHOT_LIMIT",
    "TEXT_LIMIT",
    "Changes",
    "FileChange",
    "WorkspaceSnapshot",
    "capture",
    "changes",
    "diff_text",
    "record_changes",
]

CHANGES_VERSION: Final = 1
MANIFEST_LIMIT: Final = 20_000
TEXT_LIMIT: Final = 256 * 1024
SNAPSHOT_LIMIT: Final = 16 * 1024 * 1024
DIFF_LIMIT: Final = 1024 * 1024
LISTED_LIMIT: Final = 1_000
JUDGE_LIMIT: Final = 20_000
"""Characters of diff text the judge's prompt gets (scaffold.judge.prompts)."""
HARNESS_PATHS: Final = (VALIDATION_DIR, SOLUTION_DIR, CONTEXT_FILE, RESULTS_FILE)
NOT_LISTED: Final = (*HARNESS_PATHS, ".git")
"""Left out of both manifests: the harness's files, and a repository's internals (a commit writes dozens
of objects nobody reads as a diff; the working tree's files and the commands show what was done)."""

Status = Literal["added", "modified", "deleted"]
Omitted = Literal["binary", "too large", "limit"]


@dataclass(frozen=True, slots=True)
class WorkspaceSnapshot:
    """The workspace when the agent starts: its manifest and the text of its small files (in memory)."""

    root: str
    manifest: WorkspaceManifest = field(default_factory=lambda: WorkspaceManifest({}))
    texts: Mapping[str, str] = field(default_factory=dict)
    binary: frozenset[str] = frozenset()
    """Files read and found binary."""
    error: str | None = None
    """Why nothing could be captured (then nothing is compared)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One entry of changes.json's ``files``."""

    path: str
    status: Status
    size: int | None
    size_before: int | None
    binary: bool = False
    diff: str | None = None
    omitted: Omitted | None = None


@dataclass(frozen=True, slots=True)
class Changes:
    """changes.json: the files changed between the two moments (see the module docstring)."""

    root: str
    files: tuple[FileChange, ...] = ()
    truncated: bool = False
    counts: ChangeCounts = field(default_factory=ChangeCounts)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": CHANGES_VERSION,
            "root": self.root,
            "files": [
                {
                    "path": f.path,
                    "status": f.status,
                    "size": f.size,
                    "size_before": f.size_before,
                    "binary": f.binary,
                    "diff": f.diff,
                    "omitted": f.omitted,
                }
                for f in self.files
            ],
            "truncated": self.truncated,
            "counts": {"added": self.counts.added, "modified": self.counts.modified, "deleted": self.counts.deleted},
        }
        if self.error is not None:
            data["error"] = self.error
        return data


def capture(workspace: Workspace) -> WorkspaceSnapshot:
    """The workspace as the agent finds it. Never raises for a problem of the workspace: the snapshot
    then carries the error, and :func:`changes` reports it."""
    try:
        manifest = workspace.manifest(NOT_LISTED, MANIFEST_LIMIT)
        wanted = _within_budget((p, s) for p, s in manifest.files.items() if s.link is None)
        data = workspace.read_files(wanted, TEXT_LIMIT)
    except Exception as exc:  # a capture problem must never cost the trial: it is reported instead
        return WorkspaceSnapshot(workspace.root, error=_problem(exc))
    texts: dict[str, str] = {}
    binary: set[str] = set()
    for path, raw in data.items():
        text = _text(raw)
        if text is None:
            binary.add(path)
        else:
            texts[path] = text
    return WorkspaceSnapshot(workspace.root, manifest, texts, frozenset(binary))


def changes(workspace: Workspace, before: WorkspaceSnapshot) -> Changes:
    """What changed since *before* (see the module docstring). Never raises for a problem of the
    workspace: the result then carries the error."""
    if before.error is not None:
        return Changes(before.root, error=before.error)
    try:
        after = workspace.manifest(NOT_LISTED, MANIFEST_LIMIT)
        found, truncated = _compare(before.manifest, after)
        listed = found[:LISTED_LIMIT]
        readable = [
            (p, new) for p, status, old, new in listed if new is not None and _diffable(before, p, status, old, new)
        ]
        data = workspace.read_files(_within_budget(readable), TEXT_LIMIT)
    except Exception as exc:  # as in capture: reported, never raised
        return Changes(before.root, error=_problem(exc))
    counts = ChangeCounts(
        added=sum(1 for f in found if f[1] == "added"),
        modified=sum(1 for f in found if f[1] == "modified"),
        deleted=sum(1 for f in found if f[1] == "deleted"),
    )
    room = DIFF_LIMIT
    files: list[FileChange] = []
    for path, status, old, new in listed:
        entry = _entry(before, data, path, status, old, new)
        diff = entry.diff
        if diff is not None and len(diff) > room:  # the diffs before it took the room: named only
            entry = FileChange(entry.path, status, entry.size, entry.size_before, entry.binary, None, "limit")
        elif diff is not None:
            room -= len(diff)
        files.append(entry)
    return Changes(before.root, tuple(files), truncated or len(found) > len(listed), counts)


def record_changes(
    workspace: Workspace, before: WorkspaceSnapshot, path: Path, redact: Callable[[str], str] = str
) -> Changes:
    """:func:`changes`, with *redact* applied to every path and diff (the agent's credential values:
    scaffold.agents.base.Agent.redact), written to *path* (changes.json) atomically."""
    found = changes(workspace, before)
    found = dataclasses.replace(
        found,
        files=tuple(
            dataclasses.replace(f, path=redact(f.path), diff=None if f.diff is None else redact(f.diff))
            for f in found.files
        ),
    )
    # Not flushed on its own: the trial's record is written after it, into the same folder, and that
    # durable write flushes the folder (and, on journaling file systems, the transaction holding this
    # file). A crash before it leaves no record, and then the trial runs again anyway. Two flushes less
    # per trial: 54.2 against 58.6 ms a local oracle trial, side by side (benchmarks/README.md).
    write_json_atomic(path, found.to_json(), durable=False)
    return found


def diff_text(found: Changes, limit: int = JUDGE_LIMIT) -> str:
    """The changes as one text for a reader with little room (the judge): each file's diff, or a line
    naming it when it has none; cut at *limit* characters. Empty when nothing changed."""
    parts: list[str] = []
    for f in found.files:
        if f.diff is not None:
            parts.append(f.diff if f.diff.endswith("\n") else f.diff + "\n")
        else:
            why = f", {f.omitted}" if f.omitted else ""
            size = f.size if f.size is not None else f.size_before
            parts.append(f"# {f.path}: {f.status}{why} ({size} bytes)\n")
    if found.truncated:
        parts.append("# (more files changed than are listed)\n")
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit] + "\n# (cut here)\n"


# --- comparing -----------------------------------------------------------------------------------------


_Found = tuple[str, Status, FileState | None, FileState | None]


def _compare(before: WorkspaceManifest, after: WorkspaceManifest) -> tuple[list[_Found], bool]:
    """Every changed path with its status and two states, sorted; and whether the manifests were cut
    (then only the paths up to the first cut are compared: below it, both manifests are complete)."""
    cuts = [max(m.files) for m in (before, after) if m.truncated and m.files]
    cut = min(cuts) if cuts else None
    truncated = before.truncated or after.truncated
    found: list[_Found] = []
    for path in sorted({*before.files, *after.files}):
        if cut is not None and path > cut:
            continue
        old, new = before.files.get(path), after.files.get(path)
        if old is None and new is not None:
            found.append((path, "added", None, new))
        elif new is None and old is not None:
            found.append((path, "deleted", old, None))
        elif old is not None and new is not None and _differ(old, new):
            found.append((path, "modified", old, new))
    return found, truncated


def _differ(old: FileState, new: FileState) -> bool:
    if old.link is not None or new.link is not None:
        return old.link != new.link
    if old.mode != new.mode or old.size != new.size:
        return True
    # A file that could not be read on either side is compared by size and mode only.
    return old.digest is not None and new.digest is not None and old.digest != new.digest


def _within_budget(entries: Iterable[tuple[str, FileState]]) -> list[str]:
    """The paths of regular files small enough for a diff, in order, while their sizes fit SNAPSHOT_LIMIT."""
    room = SNAPSHOT_LIMIT
    chosen = []
    for path, state in entries:
        if state.link is None and state.size <= TEXT_LIMIT and state.size <= room:
            chosen.append(path)
            room -= state.size
    return chosen


def _diffable(before: WorkspaceSnapshot, path: str, status: Status, old: FileState | None, new: FileState) -> bool:
    """Whether reading the file now can give a diff (its before side is known, or it is new)."""
    if new.link is not None or new.size > TEXT_LIMIT:
        return False
    return status == "added" or old is None or old.link is not None or path in before.texts


def _side(state: FileState | None, text: str | None, binary: bool) -> tuple[str | None, Omitted | None]:
    """The text of one side of a diff ("" for a side that does not exist), or why there is none."""
    if state is None:
        return "", None
    if state.link is not None:
        return state.link, None  # a link's content is its target, as git shows it
    if state.size > TEXT_LIMIT:
        return None, "too large"
    if binary:
        return None, "binary"
    return (text, None) if text is not None else (None, "limit")


def _entry(
    before: WorkspaceSnapshot,
    data: Mapping[str, bytes],
    path: str,
    status: Status,
    old: FileState | None,
    new: FileState | None,
) -> FileChange:
    raw = data.get(path)
    after_text = _text(raw) if raw is not None else None
    after_binary = raw is not None and after_text is None
    old_text, old_why = _side(old, before.texts.get(path), path in before.binary)
    new_text, new_why = _side(new, after_text, after_binary)
    binary = after_binary or (path in before.binary and (new is None or raw is None))
    name = _printable(path)
    size = new.size if new is not None else None
    size_before = old.size if old is not None else None
    reasons = {old_why, new_why} - {None}
    if reasons:
        why: Omitted = "binary" if "binary" in reasons else "too large" if "too large" in reasons else "limit"
        return FileChange(name, status, size, size_before, binary or why == "binary", None, why)
    assert old_text is not None and new_text is not None
    head = ""
    if old is not None and new is not None and _git_mode(old) != _git_mode(new):
        head = f"old mode {_git_mode(old)}\nnew mode {_git_mode(new)}\n"
    return FileChange(name, status, size, size_before, False, head + _unified(name, old_text, new_text, old, new))


def _unified(name: str, old: str, new: str, before: FileState | None, after: FileState | None) -> str:
    """A unified diff as ``git diff`` writes one (``\\ No newline at end of file`` included)."""
    a = f"a/{name}" if before is not None else "/dev/null"
    b = f"b/{name}" if after is not None else "/dev/null"
    if old == new:
        return ""
    out: list[str] = []
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b)
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if not out:  # an empty file added or deleted: the header alone says so
        out = [f"--- {a}\n", f"+++ {b}\n"]
    return "".join(out)


def _git_mode(state: FileState) -> str:
    """The mode as git writes it: 120000 for a link, 100644 (100 and the permission bits) for a file."""
    return "120000" if state.link is not None else f"{0o100000 | state.mode:o}"


def _text(raw: bytes) -> str | None:
    """The text of a file's bytes, or None when it is binary (a NUL byte, or not UTF-8)."""
    if b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _printable(path: str) -> str:
    """A path as JSON can hold it: a name that is not UTF-8 (read with surrogate escapes) gets U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _problem(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
