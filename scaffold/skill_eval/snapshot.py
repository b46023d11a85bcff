"""A bounded snapshot of a skill: what the task generator reads, and what its cache is keyed by.

The snapshot holds ``SKILL.md``, then every file SKILL.md quotes (a path between backticks or quotes
that names a file inside the skill), then the skill's Python modules that SKILL.md imports or runs
(``from core.gif_builder import GIFBuilder``, ``python -m tools.check``), and the modules those import,
found in the skill's own folders (a skill's code may live anywhere in it, e.g. ``core/*.py``), then
every file under ``scripts/ references/ reference/ examples/ templates/`` in sorted order.
At most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes of UTF-8 text:
a file that would pass either bound is left out (and named in ``skipped``), so a huge asset never
stalls generation, and what is kept does not depend on the order files were created in. Symlinks are
skipped (a link could pull files from outside the skill into a prompt); so are files that are not UTF-8
text and the harness's own ``.comet/`` folder, which lives in the skill when the skill owns its runs.

The hash covers every kept file's path and content hash, so it changes exactly when what the
generator would see changes (never with mtimes, permissions or the creation order).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from scaffold.errors import CometError
from scaffold.util.hashing import hash_json

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "SNAPSHOT_DIRS",
    "SkillSnapshot",
    "SkillSnapshotError",
    "SkillSnapshotFile",
    "take_snapshot",
]

MAX_FILES: Final = 128
MAX_BYTES: Final = 512 * 1024
SNAPSHOT_DIRS: Final = ("scripts", "references", "reference", "examples", "templates")

# A quoted path in SKILL.md: `templates/result.md`, "scripts/check.py", 'data.json'.
_QUOTED: Final = re.compile(r"[`\"']([^`\"'\n]+)[`\"']")
# Modules named by Python code or a command line: `from a.b import c, d`, `import a.b`, `python -m a.b`.
_FROM: Final = re.compile(r"^[ \t>]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)", re.MULTILINE)
_IMPORT: Final = re.compile(r"^[ \t>]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.MULTILINE)
_RUN_MODULE: Final = re.compile(r"\bpython[\d.]*[ \t]+-m[ \t]+([\w.]+)")


class SkillSnapshotError(CometError, ValueError):
    """The folder is not a skill (no SKILL.md): a configuration error of the run, named with its path."""


@dataclass(frozen=True, slots=True)
class SkillSnapshotFile:
    path: str
    """POSIX path relative to the skill root."""
    content: str
    sha256: str
    """``sha256:<hex>`` of the file's bytes."""


@dataclass(frozen=True, slots=True)
class SkillSnapshot:
    root: Path
    files: tuple[SkillSnapshotFile, ...]
    hash: str
    """``sha256:<hex>`` over the kept files' paths and content hashes."""
    skipped: tuple[str, ...] = ()
    """Files left out: over a bound, not UTF-8 text, or unreadable."""

    @property
    def size(self) -> int:
        return sum(len(f.content.encode("utf-8")) for f in self.files)


def take_snapshot(root: Path, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> SkillSnapshot:
    """The bounded snapshot of the skill at *root*; raises SkillSnapshotError when it has no SKILL.md."""
    root = root.absolute()
    skill_md = root / "SKILL.md"
    if skill_md.is_symlink() or not skill_md.is_file():
        raise SkillSnapshotError(f"{root}: a skill folder must contain SKILL.md (a regular file)")
    candidates = ["SKILL.md"]
    text = skill_md.read_text(encoding="utf-8", errors="replace")
    candidates += sorted({m.group(1).strip() for m in _QUOTED.finditer(text)})
    candidates += _imported(root, text)
    for folder in SNAPSHOT_DIRS:
        candidates += _walk(root, folder)

    files: list[SkillSnapshotFile] = []
    skipped: list[str] = []
    seen: set[str] = set()
    total = 0
    for rel in candidates:
        path = _inside(root, rel)
        if path is None:
            continue
        key = path.relative_to(root).as_posix()
        if key in seen:
            continue
        seen.add(key)
        try:
            data = path.read_bytes()
            content = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            skipped.append(key)
            continue
        size = len(data)
        if len(files) >= max_files or total + size > max_bytes:
            skipped.append(key)
            continue
        total += size
        files.append(SkillSnapshotFile(key, content, "sha256:" + hashlib.sha256(data).hexdigest()))
    digest = hash_json([{"path": f.path, "sha256": f.sha256} for f in files])
    return SkillSnapshot(root, tuple(files), digest, tuple(skipped))


def _imported(root: Path, text: str) -> list[str]:
    """The skill's module files that *text* (SKILL.md) imports or runs, then those they import in turn,
    breadth first; only files inside the skill (a standard or third-party module is not there)."""
    found: list[str] = []
    queue = [(text, PurePosixPath("."))]
    while queue and len(found) < MAX_FILES:
        source, package = queue.pop(0)
        for rel in _module_paths(source, package):
            path = _inside(root, rel)
            if path is None or rel in found:
                continue
            found.append(rel)
            try:
                queue.append((path.read_text(encoding="utf-8"), PurePosixPath(rel).parent))
            except (OSError, UnicodeDecodeError):
                continue
    return found


def _module_paths(source: str, package: PurePosixPath) -> list[str]:
    """Candidate files of the modules *source* names: ``a.b`` may be ``a/b.py`` or ``a/b/__init__.py``
    (with ``a/__init__.py``); a relative ``from .x import y`` is looked up from *package*'s folder."""
    names: list[tuple[str, PurePosixPath]] = []
    for match in _FROM.finditer(source):
        module, imported = match.group(1), [n.strip() for n in match.group(2).split(",") if n.strip()]
        dots = len(module) - len(module.lstrip("."))
        base = package
        for _ in range(max(dots - 1, 0)):
            base = base.parent
        start = base if dots else PurePosixPath(".")
        module = module.lstrip(".")
        if module:
            names.append((module, start))
        names += [(f"{module}.{name}" if module else name, start) for name in imported]
    for match in _IMPORT.finditer(source):
        names += [(name.strip(), PurePosixPath(".")) for name in match.group(1).split(",")]
    names += [(match.group(1), PurePosixPath(".")) for match in _RUN_MODULE.finditer(source)]
    paths: list[str] = []
    for dotted, start in names:
        parts = [p for p in dotted.split(".") if p]
        for depth in range(1, len(parts) + 1):
            folder = start.joinpath(*parts[:depth])
            for candidate in (f"{folder}.py", f"{folder}/__init__.py"):
                if candidate not in paths:
                    paths.append(candidate.removeprefix("./"))
    return paths


def _walk(root: Path, folder: str) -> list[str]:
    """Every regular file under ``root/folder``, sorted, never entering or listing a symlink."""
    base = root / folder
    if base.is_symlink() or not base.is_dir():
        return []
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
        for name in filenames:
            path = here / name
            if not path.is_symlink() and path.is_file():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` when it is a regular file inside *root* reached through no symlink; else None."""
    pure = PurePosixPath(rel)
    if not rel or pure.is_absolute() or ".." in pure.parts or "\\" in rel:
        return None
    if pure.parts and pure.parts[0] == ".comet":
        return None  # the harness's own artifacts (generated caches, runs) are not the skill
    path = root
    for part in pure.parts:
        if part == ".":
            continue
        path = path / part
        if path.is_symlink():
            return None
    try:
        return path if path != root and path.is_file() else None
    except OSError:
        return None
