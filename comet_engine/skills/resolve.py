"""Find a skill package by path or name, failing closed.

Order (the original Comet engine's): an explicit path; else the project's ``.comet/skills/<name>``; else a built-in
package; else ``SkillNotFoundError``. A project package that exists but is invalid raises its own
``SkillPackageError`` and never falls back to the built-in of the same name: silently running the
built-in while the user believes their override is in use is the failure this rule prevents.

A reference is a path when it contains a path separator or starts with ``.`` (``./my-skill``,
``../pkgs/x``, ``/abs/x``); otherwise it is a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from comet_engine.errors import SkillNotFoundError, SkillPackageError
from comet_engine.skills.package import SkillPackage, load_package

__all__ = ["BUILTIN_ROOT", "PROJECT_SKILLS", "Resolved", "is_path_ref", "resolve"]

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"
PROJECT_SKILLS = Path(".comet") / "skills"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

Source = Literal["path", "project", "builtin"]


@dataclass(frozen=True, slots=True)
class Resolved:
    package: SkillPackage
    source: Source


def is_path_ref(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.startswith(".")


def resolve(ref: str, project: Path, *, builtin_root: Path = BUILTIN_ROOT) -> Resolved:
    """The package *ref* names; see the module docstring for the order."""
    if is_path_ref(ref):
        path = Path(ref).expanduser()
        if not path.is_dir():
            raise SkillNotFoundError(f"{ref}: no such skill package directory; check the path")
        return Resolved(load_package(path), "path")
    if not _NAME.match(ref):
        raise SkillNotFoundError(
            f"{ref!r} is not a skill name (lowercase letters, digits, '.', '_', '-'); "
            "to use a folder, pass a path such as ./my-skill"
        )
    local = project / PROJECT_SKILLS / ref
    for folder, source in ((local, "project"), (builtin_root / ref, "builtin")):
        if folder.is_dir():
            # No try/except here on purpose: an invalid project override fails, it does not fall back.
            package = load_package(folder)
            if package.name != ref:
                raise SkillPackageError(
                    f"{folder}: declares metadata.name {package.name!r} but is installed as {ref!r}",
                    [
                        f"{folder / 'comet' / 'skill.yaml'}: metadata.name: {package.name!r} must equal "
                        f"the folder name {ref!r}; rename one of them (comet skill add installs under metadata.name)"
                    ],
                )
            return Resolved(package, source)  # type: ignore[arg-type]
    raise SkillNotFoundError(
        f"skill {ref!r} not found: looked in {local} and among the built-in skills ({_builtins(builtin_root)}); "
        f"install it with: comet skill add PATH --project {project}"
    )


def _builtins(root: Path) -> str:
    names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return ", ".join(names) or "none"
