"""What to run: (task, treatment, trial) cases, chosen by ``--task``, ``--treatment`` and ``--count``.

Selection is pure and deterministic: the same inputs give the same cases in the same order, on every
machine and every pytest-xdist worker. Nothing here touches a workspace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scaffold.errors import Problem, SelectionError
from scaffold.tasks import TaskCatalog
from scaffold.treatments import CONTROL, TreatmentCatalog

__all__ = ["Broken", "Case", "match_names", "parse_list", "select_cases"]


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
    extra_treatments: Sequence[str] = (),
) -> list[Case | Broken]:
    """Every case to run, sorted by task name, then treatment (in selection order), then trial.

    Without *treatment_patterns* each task runs its ``default_treatments`` plus *extra_treatments*
    (``DYNAMIC_SKILL``). Broken tasks and treatments become :class:`Broken` items, once each.
    """
    if count < 1:
        raise SelectionError(f"--count must be at least 1 (got {count})")
    task_names = match_names(task_patterns, tasks.names(), "task") if task_patterns else tasks.names()
    chosen_treatments = match_names(treatment_patterns, treatments.names(), "treatment") if treatment_patterns else None

    out: list[Case | Broken] = []
    if not task_patterns:
        out.extend(Broken(f"{p.file.parent.name}/{p.file.name}", (p,)) for p in (*tasks.general, *treatments.general))
    for name in sorted(task_names):
        if name in tasks.broken:
            out.append(Broken(name, tasks.broken[name]))
            continue
        spec = tasks.tasks[name].spec
        wanted = (
            chosen_treatments
            if chosen_treatments is not None
            else [
                *spec.metadata.default_treatments,
                *(t for t in extra_treatments if t not in spec.metadata.default_treatments),
            ]
        )
        problems = _treatment_problems(name, wanted, treatments, tasks, explicit=chosen_treatments is not None)
        if problems:
            out.append(Broken(name, tuple(problems)))
            continue
        for treatment in wanted:
            out.extend(Case(name, treatment, trial) for trial in range(1, count + 1))
    return out


def _treatment_problems(
    task: str, wanted: Sequence[str], treatments: TreatmentCatalog, tasks: TaskCatalog, *, explicit: bool
) -> list[Problem]:
    problems: list[Problem] = []
    toml = tasks.tasks[task].root / "task.toml"
    for name in wanted:
        if name in treatments.broken:
            problems.extend(treatments.broken[name])
        elif name not in treatments.treatments:
            known = ", ".join(treatments.names()) or CONTROL
            problems.append(
                Problem(
                    toml, f"names unknown treatment {name!r}; known: {known}", "[metadata] default_treatments", name
                )
            )
    if explicit:
        # With --treatment the names were matched already; only broken definitions remain.
        return [p for p in problems if "unknown treatment" not in p.message]
    return problems
