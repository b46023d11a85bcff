"""Where the harness's own suite lives: its built-in tasks, treatments and skill, and each suite's test entry.

The one module that knows these places (tests/test_architecture.py holds every other module to that):
everything else asks here. They are package data, the folder ``scaffold/builtin/`` found through
``importlib.resources``, so a checkout (an editable install) and an installed wheel find the same files::

    scaffold/builtin/tasks/        the built-in tasks (index.yaml, one folder each)
    scaffold/builtin/treatments/   the built-in treatments (CONTROL, SKILL_MARKDOWN_REPORT)
    scaffold/builtin/skills/       the skill SKILL_MARKDOWN_REPORT installs (markdown-report)
    scaffold/builtin/distractors/  the distractors' default pool (eight generic skills)
    scaffold/builtin/suites/NAME/  each suite's pytest entry: test_tasks.py (and a conftest.py)

The data lives there once: the checkout's ``local/tests/test_tasks.py`` (and ``langsmith/``, ``langfuse/``)
only import the packaged entries, so ``pytest local/tests`` keeps working there. A project of the user's
keeps its own tasks in ``<root>/local/tasks`` and its experiments in ``<root>/local/logs``, the defaults a
session starts from; without ``local/tasks`` it runs the built-in tasks. ``<root>`` is pytest's rootdir or
the current folder, never a folder of the installation (:func:`project_root`): run outputs never go into
site-packages. docs/packaging.md tells the whole layout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from scaffold.catalog.treatments import SkillRef, task_treatment
from scaffold.errors import SelectionError

__all__ = [
    "BUILTIN_DIR",
    "BUILTIN_DISTRACTORS_DIR",
    "BUILTIN_SKILLS_DIR",
    "BUILTIN_TASKS_DIR",
    "BUILTIN_TREATMENTS_DIR",
    "ENVIRONMENT_TASK",
    "SUITES",
    "builtin_environment",
    "builtin_folders",
    "builtin_task_names",
    "distractor_pool",
    "project_logs_dir",
    "project_root",
    "project_tasks_dir",
]


def _package_data() -> Path:
    """``scaffold/builtin`` on disk. pip always unpacks a wheel, so the package is a folder; a zip import
    (zipapp, an egg) would give a Traversable that no workspace can copy from or pytest collect."""
    found = resources.files("scaffold") / "builtin"
    if not isinstance(found, Path):
        raise SelectionError(f"comet-eval must be installed as files (pip install), not imported from {found}")
    return found


BUILTIN_DIR: Final = _package_data()
"""The built-in suite's folder in the installed package."""
BUILTIN_TASKS_DIR: Final = BUILTIN_DIR / "tasks"
"""The built-in tasks (the local suite's): what a manifest's recommendedTasks and --quick name."""
BUILTIN_TREATMENTS_DIR: Final = BUILTIN_DIR / "treatments"
"""The built-in treatments: the ``treatments/`` folder beside the built-in tasks, found as any such folder."""
BUILTIN_SKILLS_DIR: Final = BUILTIN_DIR / "skills"
"""The skills the built-in treatments install (``markdown-report``, also the examples' plain skill)."""
BUILTIN_DISTRACTORS_DIR: Final = BUILTIN_DIR / "distractors"
"""Generic skills no built-in task needs: with the corpus's other tasks' skills, the pool distractors are
drawn from when no ``--skill-pool`` is given, so a corpus of one task (or generated tasks) has one too."""
SUITES: Final[Mapping[str, Path]] = {
    "local": BUILTIN_DIR / "suites" / "local" / "test_tasks.py",
    "langsmith": BUILTIN_DIR / "suites" / "langsmith" / "test_tasks.py",
    "langfuse": BUILTIN_DIR / "suites" / "langfuse" / "test_tasks.py",
}
"""Each ``--suite`` (and ``reporting.suite``) and the test file pytest runs for it: the same trials and
local reports everywhere; langsmith and langfuse also report to their service (their conftest.py beside)."""
ENVIRONMENT_TASK: Final = "generic-skill-smoke"
"""The built-in task whose environment inline and generated tasks start from."""


def project_root(rootdir: Path, invocation_dir: Path) -> Path:
    """A pytest session's project folder: its *rootdir*, unless that lies inside the installed package
    (``pytest --pyargs`` of a packaged suite finds no configuration file and roots the run at the suite's
    folder), where it is the folder pytest was started in: outputs go there, never into site-packages."""
    package = BUILTIN_DIR.parent.resolve()
    return invocation_dir if rootdir.resolve().is_relative_to(package) else rootdir


def project_tasks_dir(root: Path) -> Path:
    """A project's tasks folder, ``<root>/local/tasks`` when it exists, else the built-in tasks."""
    own = root / "local" / "tasks"
    return own if own.is_dir() else BUILTIN_TASKS_DIR


def project_logs_dir(root: Path) -> Path:
    """Where a project's experiments go unless told otherwise: ``<root>/local/logs``."""
    return root / "local" / "logs"


def builtin_environment(tasks_dirs: Sequence[Path] = (BUILTIN_TASKS_DIR,)) -> Path:
    """The environment folder inline and generated tasks start from: ENVIRONMENT_TASK's, in the first of
    *tasks_dirs* holding it (the suite's built-in tasks); a SelectionError names where it was looked for."""
    for folder in tasks_dirs:
        candidate = folder / ENVIRONMENT_TASK / "environment"
        if candidate.is_dir():
            return candidate
    searched = ", ".join(str(f) for f in tasks_dirs) or "no tasks folder"
    raise SelectionError(
        f"inline eval.yaml tasks start from the built-in task {ENVIRONMENT_TASK!r}'s environment, "
        f"which is not in {searched}; pass the suite's tasks folder (--tasks-dir)"
    )


def builtin_folders(dirs: Sequence[Path]) -> list[Path]:
    """Those of *dirs* that are the built-in tasks folder: each of its tasks must ship
    ``solution/solve.sh`` and pass with the oracle. Tasks of other folders (a user's, the original Comet
    eval's, Harbor corpora) may have none: only the oracle refuses them."""
    builtin = BUILTIN_TASKS_DIR.resolve()
    return [d for d in dirs if Path(d).absolute().resolve() == builtin]


def builtin_task_names(folder: Path = BUILTIN_TASKS_DIR) -> tuple[str, ...]:
    """The built-in tasks, which recommendedTasks may name and a manifest's own tasks must not."""
    if not folder.is_dir():
        return ()
    from scaffold.catalog.tasks import load_catalog

    return tuple(load_catalog([folder]).names())


def distractor_pool(folder: Path | None, other_skills_dirs: Iterable[Path]) -> tuple[SkillRef, ...]:
    """The skills distractors are drawn from: those of *folder* (``--skill-pool``, a treatment's ``pool``)
    when given; else the skills of the corpus's other tasks (*other_skills_dirs*, their environment/skills),
    then the built-in pool's. The built-in skills are there so a corpus whose other tasks ship too few skills
    (one task, generated tasks) still has a pool; among a SkillsBench-sized corpus's few hundred skills they
    are a handful."""
    if folder is not None:
        return tuple(dataclasses.replace(s, source=f"skill pool ({s.path})") for s in task_treatment(folder).skills)
    corpus = [skill for skills_dir in other_skills_dirs for skill in task_treatment(skills_dir).skills]
    builtin = [
        dataclasses.replace(s, source=f"built-in distractor pool ({s.path})")
        for s in task_treatment(BUILTIN_DISTRACTORS_DIR).skills
    ]
    return (*corpus, *builtin)
