"""Stable content hashes: the same bytes give the same hash on every machine and every run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "hash_json", "hash_tree"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def hash_json(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of *value*."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def hash_tree(root: Path, *, skip: Collection[str] = ()) -> str:
    """``sha256:<hex>`` over every file under *root*: relative path, executable bit and content.

    Symlinks are hashed by their target text, not followed, so a link cannot pull outside files in.
    *skip* names top-level entries of *root* that are left out (a skill's ``.comet`` folder).
    """
    digest = hashlib.sha256()
    files = _files(root)
    if skip:
        files = [p for p in files if p.relative_to(root).parts[0] not in skip]
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel}\0{os.readlink(path)}\0".encode())
            continue
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"F {rel} {mode}\0".encode())
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 16), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in dirnames:
            if (base / name).is_symlink():
                out.append(base / name)
        out.extend(base / name for name in filenames if not name.endswith(".pyc"))
    return out
