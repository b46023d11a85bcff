"""What to run: (task, treatment, trial) cases, chosen by ``--task``, ``--treatment`` and ``--count``.

Selection is pure and deterministic: the same inputs give the same cases in the same order, on every
machine and every pytest-xdist worker. Nothing here touches a workspace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scaffold.catalog.tasks import Task, TaskCatalog
from scaffold.catalog.treatments import CONTROL, TASK_SKILLS, TreatmentCatalog
from scaffold.errors import Problem, SelectionError
from scaffold.rubrics.profiles import infer_profile, known_profiles

__all__ = [
    "Broken",
    "Case",
    "has_own_skills",
    "match_names",
    "parse_list",
    "profile_problems",
    "select_cases",
    "unknown_treatment_problems",
    "unshown_problems",
]


@dataclass(frozen=True, slots=True, order=True)
class Case:
    """One trial to run. ``trial`` counts from 1."""

    task: str
    treatment: str
    trial: int

    @property
    def id(self) -> str:
        return f"{self.task}-{self.treatment}-r{self.trial}"


@dataclass(frozen=True, slots=True)
class Broken:
    """A task (or input file) that cannot run: one failing item that shows its problems."""

    name: str
    problems: tuple[Problem, ...]

    @property
    def id(self) -> str:
        return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', self.name)}-INVALID"

    def message(self) -> str:
        return "\n".join(str(p) for p in self.problems)


def parse_list(values: Iterable[str] | None) -> list[str]:
    """Comma lists from one or more options: ``["a,b", "c"]`` -> ``["a", "b", "c"]``."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


def match_names(patterns: Sequence[str], names: Sequence[str], what: str) -> list[str]:
    """Names matching *patterns* (exact, or a prefix with a trailing ``*``), in pattern order.

    A pattern that matches nothing is an error listing what is known: a typo must not run nothing.
    """
    chosen: list[str] = []
    for pattern in patterns:
        if pattern.endswith("*"):
            found = sorted(n for n in names if n.startswith(pattern[:-1]))
        else:
            found = [pattern] if pattern in names else []
        if not found:
            known = ", ".join(sorted(names)) or "none"
            raise SelectionError(f"--{what}={pattern} matches no {what}; known: {known}")
        chosen.extend(n for n in found if n not in chosen)
    return chosen


def select_cases(
    tasks: TaskCatalog,
    treatments: TreatmentCatalog,
    *,
    task_patterns: Sequence[str] = (),
    treatment_patterns: Sequence[str] = (),
    count: int = 1,
    default_treatments: Sequence[str] | None = None,
    profile: str | None = None,
) -> list[Case | Broken]:
    """Every case to run, sorted by task name, then treatment (in selection order), then trial.

    Without *treatment_patterns* each task runs *default_treatments* when given (``--skill-path``:
    CONTROL and DYNAMIC_SKILL, whatever the task's own defaults), else its ``default_treatments``.
    Broken tasks and treatments become :class:`Broken` items, once each, holding every problem of the
    task at once: its files, its treatments and (without a *profile* override) its profile.
    """
    if count < 1:
        raise SelectionError(f"--count must be at least 1 (got {count})")
    task_names = match_names(task_patterns, tasks.names(), "task") if task_patterns else tasks.names()
    try:
        chosen = match_names(treatment_patterns, treatments.names(), "treatment") if treatment_patterns else None
    except SelectionError as exc:
        # The treatment may be defined in a file that could not be read: say which, and where.
        unreadable = "; ".join(str(p) for p in treatments.general)
        message = f"{exc}; treatments files with problems: {unreadable}" if unreadable else str(exc)
        raise SelectionError(message) from None

    if chosen is not None and TASK_SKILLS in chosen:
        _refuse_task_skills_without_skills(tasks, sorted(task_names))
    out: list[Case | Broken] = []
    if not task_patterns:
        out.extend(Broken(f"{p.file.parent.name}/{p.file.name}", (p,)) for p in (*tasks.general, *treatments.general))
    for name in sorted(task_names):
        problems = list(tasks.broken.get(name, ()))
        task = tasks.tasks.get(name) or tasks.partial.get(name)
        wanted: Sequence[str] = ()
        if task is not None:
            wanted = chosen if chosen is not None else (default_treatments or task.spec.metadata.default_treatments)
            for treatment in wanted:
                problems.extend(treatments.broken.get(treatment, ()))
            if chosen is None:  # names given with --treatment were matched already
                problems.extend(unknown_treatment_problems(task, wanted, treatments))
                if TASK_SKILLS in wanted and TASK_SKILLS in treatments.treatments and not has_own_skills(task):
                    problems.append(_no_skills_problem(task))
            if profile is None:
                problems.extend(profile_problems(task))
        if problems:
            out.append(Broken(name, _once(problems)))
            continue
        for treatment in wanted:
            out.extend(Case(name, treatment, trial) for trial in range(1, count + 1))
    return out


def has_own_skills(task: Task) -> bool:
    """Whether *task* ships skills of its own (``environment/skills/<name>/SKILL.md``): what TASK_SKILLS
    installs, so without them a TASK_SKILLS trial is a CONTROL trial under another name."""
    folder = task.skills_dir
    return folder.is_dir() and any((child / "SKILL.md").is_file() for child in folder.iterdir())


def _refuse_task_skills_without_skills(tasks: TaskCatalog, names: Sequence[str]) -> None:
    """A usage error, before any trial, when ``--treatment`` selects TASK_SKILLS for tasks that have no
    skills of their own. Refused rather than dropped when only some lack them: a run that quietly left
    cases out would compare other tasks than were asked for; one that ran them would count CONTROL
    trials as trials with skills, pulling the measured effect of skills toward zero."""
    loaded = [tasks.tasks.get(n) or tasks.partial.get(n) for n in names]
    without = [t.name for t in loaded if t is not None and not has_own_skills(t)]
    if not without:
        return
    with_skills = [t.name for t in loaded if t is not None and t.name not in without]
    if not with_skills:
        fix = f"run {'it' if len(without) == 1 else 'them'} under {CONTROL}"
    elif len(with_skills) <= 10:
        fix = f"select the tasks that have skills (--task {','.join(with_skills)})"
    else:
        fix = "select only the tasks that have skills (--task)"
    has = "has no skills of its own" if len(without) == 1 else "have no skills of their own"
    raise SelectionError(
        f"--treatment selects {TASK_SKILLS}, but {_names(without)} {has} "
        f"(no environment/skills/<name>/SKILL.md), so {TASK_SKILLS} would run the same trial as "
        f"{CONTROL} there under another name and count it as a trial with skills, pulling the measured effect of "
        f"skills toward zero; {fix}, or leave out --treatment to run each task's defaults ({CONTROL}, and "
        f"{TASK_SKILLS} where the task has skills)"
    )


def _no_skills_problem(task: Task) -> Problem:
    return Problem(
        task.root / "task.toml",
        f"names {TASK_SKILLS}, but the task has no skills of its own (environment/skills/<name>/SKILL.md): "
        "it would run the same trial as CONTROL under another name",
        "[metadata] default_treatments",
        TASK_SKILLS,
    )


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def unknown_treatment_problems(task: Task, names: Sequence[str], treatments: TreatmentCatalog) -> list[Problem]:
    """A problem for each of *names* (the task's treatments) that no treatments file defines; when some
    file could not be read (it may define the name), its problems follow, with their file and line."""
    problems = [
        Problem(
            task.root / "task.toml",
            f"names unknown treatment {name!r}; known: {', '.join(treatments.names()) or CONTROL}",
            "[metadata] default_treatments",
            name,
        )
        for name in names
        if name not in treatments.treatments and name not in treatments.broken
    ]
    return [*problems, *treatments.general] if problems else []


def profile_problems(task: Task) -> list[Problem]:
    """The problem of a task whose evaluation profile (given, or inferred) is not registered."""
    name = task.spec.evaluation.profile or infer_profile(task)
    if name in known_profiles():
        return []
    key = "[evaluation] profile" if task.spec.evaluation.profile else "[metadata] category (inferred profile)"
    return [
        Problem(task.root / "task.toml", f"unknown evaluation profile; known: {', '.join(known_profiles())}", key, name)
    ]


def unshown_problems(tasks: TaskCatalog, treatments: TreatmentCatalog, items: Sequence[Case | Broken]) -> list[Problem]:
    """Problems of input files that none of *items* shows: a broken treatment no selected task uses, or a
    file that could not be read while ``--task`` filtered the general items away. Worth a warning: they
    do not stop this run, but the next one may trip on them."""
    shown = [p for item in items if isinstance(item, Broken) for p in item.problems]
    candidates = [
        *tasks.general,
        *treatments.general,
        *(p for name in sorted(treatments.broken) for p in treatments.broken[name]),
    ]
    return [p for p in _once(candidates) if p not in shown]


def _once(problems: Iterable[Problem]) -> tuple[Problem, ...]:
    out: list[Problem] = []
    for problem in problems:
        if problem not in out:  # Problems may hold unhashable values (lists)
            out.append(problem)
    return tuple(out)
