"""``comet skill add``: validate a package and install it as the project's ``.comet/skills/<name>``.

The copy is made in a temporary sibling folder and renamed into place, so the project never holds a
half-copied package (which resolution would then load, and fail closed on). ``--force`` replaces an
installed package: the old one is renamed aside first and removed only after the new one is in place.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from comet_engine.errors import RunExistsError
from comet_engine.skills.package import SkillPackage, load_package
from comet_engine.skills.resolve import PROJECT_SKILLS

__all__ = ["PackageExistsError", "install"]

_IGNORE = shutil.ignore_patterns(".git", ".hg", ".svn", ".comet", "__pycache__")


class PackageExistsError(RunExistsError):
    """The project already has a package of this name (a conflict: ``--force`` replaces it)."""


def install(source: Path, project: Path, *, force: bool = False) -> SkillPackage:
    """Install the package at *source* into *project*; returns it as loaded from its new place."""
    package = load_package(source)
    skills = project / PROJECT_SKILLS
    target = skills / package.name
    if target.exists() and not force:
        raise PackageExistsError(
            f"{target}: a skill named {package.name!r} is already installed; pass --force to replace it"
        )
    if target.resolve() == Path(source).resolve():
        return package
    skills.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".tmp-{package.name}-", dir=skills))
    old = skills / f".old-{package.name}-{temp.name}"
    try:
        staged = temp / package.name
        shutil.copytree(source, staged, ignore=_IGNORE, symlinks=False)
        load_package(staged)  # what was copied is what was validated
        if target.exists():
            target.rename(old)
        staged.rename(target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return load_package(target)
