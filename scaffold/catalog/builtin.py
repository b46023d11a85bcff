"""Where the harness's own suite lives: its built-in tasks and treatments, and each suite's test entry.

The one module that knows these places (tests/test_architecture.py holds every other module to that):
everything else asks here. In this installation they are the folders ``local/``, ``langsmith/`` and
``langfuse/`` beside the packages; a project of the user's keeps its own tasks in ``<root>/local/tasks``
and its experiments in ``<root>/local/logs``, the defaults a session starts from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from scaffold.errors import SelectionError

__all__ = [
    "BUILTIN_TASKS_DIR",
    "ENVIRONMENT_TASK",
    "SUITES",
    "builtin_environment",
    "builtin_folders",
    "builtin_task_names",
    "project_logs_dir",
    "project_tasks_dir",
]

HARNESS_ROOT: Final = Path(__file__).resolve().parents[2]
"""The folder the packages are installed in, beside the suites' folders."""
BUILTIN_TASKS_DIR: Final = HARNESS_ROOT / "local" / "tasks"
"""The built-in tasks (the local suite's): what a manifest's recommendedTasks and --quick name."""
SUITES: Final[Mapping[str, Path]] = {
    "local": HARNESS_ROOT / "local" / "tests" / "test_tasks.py",
    "langsmith": HARNESS_ROOT / "langsmith" / "tests" / "test_tasks.py",
    "langfuse": HARNESS_ROOT / "langfuse" / "tests" / "test_tasks.py",
}
"""Each ``--suite`` (and ``reporting.suite``) and the test file pytest runs for it: the same trials and
local reports everywhere; langsmith and langfuse also report to their service."""
ENVIRONMENT_TASK: Final = "generic-skill-smoke"
"""The built-in task whose environment inline and generated tasks start from."""


def project_tasks_dir(root: Path) -> Path:
    """A project's default tasks folder, ``<root>/local/tasks`` (in this checkout: the built-in tasks)."""
    return root / "local" / "tasks"


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
