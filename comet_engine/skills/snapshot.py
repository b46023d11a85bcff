"""Immutable skill snapshots: ``<project>/.comet/skill-snapshots/<skillHash>/``.

The skill hash is the original Comet engine's: SHA-256 over the stable JSON (keys sorted, no spaces) of
``{"definition", "guardrails", "evals"}`` -- the parsed YAML documents as written, ``null`` when a file
is absent -- then ``SKILL.md``, then the stable JSON of the ``[{path, sha256}]`` of every script tool
source (sorted by path), each part followed by a newline. Hashing the documents as written rather than
our parsed models keeps a hash valid across versions of this code that add defaults.

A snapshot is a copy of the whole package plus ``snapshot.json`` (the digest of every file). It is
written into a temporary sibling and renamed into place, so it exists complete or not at all; its files
are made read-only. ``load_snapshot`` re-checks every digest, reloads the package from the snapshot and
recomputes the skill hash: any difference is a ``SnapshotError`` and the run does not continue.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comet_engine.errors import SkillPackageError, SnapshotError
from comet_engine.skills.package import SkillPackage, load_package

__all__ = ["MANIFEST", "SNAPSHOTS", "Snapshot", "load_snapshot", "skill_hash", "stable_json", "write_snapshot"]

SNAPSHOTS = Path(".comet") / "skill-snapshots"
MANIFEST = "snapshot.json"
SCHEMA_VERSION = 1
# Never copied into a snapshot: version control and a package's own run directories.
_SKIP = {".git", ".hg", ".svn", ".comet", "__pycache__"}


@dataclass(frozen=True, slots=True)
class Snapshot:
    skill_hash: str
    path: Path
    package: SkillPackage


def stable_json(value: Any) -> str:
    # default=str: YAML may hold dates; their ISO text is as stable as the file.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def skill_hash(package: SkillPackage) -> str:
    digest = hashlib.sha256()
    documents = {key: package.documents.get(key) for key in ("definition", "guardrails", "evals")}
    digest.update(stable_json(documents).encode() + b"\n")
    digest.update(package.skill_md.encode() + b"\n")
    scripts = [{"path": s.path, "sha256": s.sha256} for s in package.scripts]
    digest.update(stable_json(scripts).encode() + b"\n")
    return digest.hexdigest()


def write_snapshot(package: SkillPackage, project: Path) -> Snapshot:
    """Freeze *package* under *project*; an existing snapshot of the same hash is verified and reused."""
    hashed = skill_hash(package)
    parent = project / SNAPSHOTS
    final = parent / hashed
    if final.exists():
        return load_snapshot(project, hashed)
    parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".tmp-{hashed[:12]}-", dir=parent))
    try:
        files = _copy_tree(package.root, temp)
        manifest = {
            "schemaVersion": SCHEMA_VERSION,
            "skill": package.name,
            "skillVersion": package.version,
            "skillHash": hashed,
            "files": files,
        }
        (temp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for path in temp.rglob("*"):
            if path.is_file():
                path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
                _fsync(path)
        _fsync(temp)
        try:
            temp.rename(final)
        except OSError:
            # Another process published the same hash first: theirs is as good as ours once verified.
            if not final.is_dir():
                raise
        else:
            _fsync(parent)
    finally:
        if temp.exists():
            _remove(temp)
    return load_snapshot(project, hashed)


def load_snapshot(project: Path, hashed: str, *, run_id: str | None = None) -> Snapshot:
    """The verified snapshot *hashed* of *project*; ``SnapshotError`` names what differs and the fix."""
    folder = project / SNAPSHOTS / hashed
    owner = f"run {run_id!r} pinned skill hash {hashed}" if run_id else f"skill snapshot {hashed}"
    fix = "the snapshot must never be edited: restore it from backup, or start a new run"
    manifest_path = folder / MANIFEST
    if not folder.is_dir():
        raise SnapshotError(f"{folder}: missing; {owner}; run the command with the --project the run was started with")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files: Mapping[str, str] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SnapshotError(f"{manifest_path}: unreadable ({exc}); {owner}; {fix}") from None
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {MANIFEST}
    for rel in sorted(present - set(files)):
        raise SnapshotError(f"{folder / rel}: added after the snapshot was taken; {owner}; {fix}")
    for rel, expected in sorted(files.items()):
        path = folder / rel
        if rel not in present:
            raise SnapshotError(f"{path}: missing from the snapshot; {owner}; {fix}")
        if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            raise SnapshotError(f"{path}: modified after the snapshot was taken (sha256 differs); {owner}; {fix}")
    try:
        package = load_package(folder)
    except SkillPackageError as exc:
        raise SnapshotError(f"{folder}: no longer a valid package ({exc}); {owner}; {fix}") from None
    actual = skill_hash(package)
    if actual != hashed or manifest.get("skillHash") != hashed:
        raise SnapshotError(f"{folder}: its content hashes to {actual}, not {hashed}; {owner}; {fix}")
    return Snapshot(hashed, folder, package)


def _copy_tree(source: Path, target: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    root = source.resolve()
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        here = Path(dirpath)
        for name in sorted(filenames):
            src = here / name
            if not src.is_file() or (src.is_symlink() and not src.resolve().is_relative_to(root)):
                continue  # a link out of the package is not part of it; snapshots hold real files only
            rel = src.relative_to(source)
            dst = target / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            dst.write_bytes(data)
            files[rel.as_posix()] = hashlib.sha256(data).hexdigest()
    return files


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(folder: Path) -> None:
    # Read-only files in a writable directory can be unlinked; nothing else is left to fix up.
    shutil.rmtree(folder, ignore_errors=True)
