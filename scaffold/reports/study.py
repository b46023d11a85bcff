"""``study.md``: a SkillsBench-shaped table of each condition against CONTROL, and how the study was run.

Rendered from the analysis model (scaffold.reports.model), as summary.md is: the verdicts, their per-task
heterogeneity and the skill-use figures are the model's, so study.md and the other reports cannot disagree.
What the records cannot say (the tasks folder, the tasks left out and why, the conditions' definitions,
the command) comes in a :class:`StudyConfig` from ``comet study`` (scaffold.cli.study).
"""

from __future__ import annotations

from dataclasses import dataclass

from scaffold.reports.format import number, signed_percent
from scaffold.reports.markdown import difference, render
from scaffold.reports.model import Analysis, TreatmentReport, TreatmentVerdict
from scaffold.stats.stratified import OnTasksComparison

__all__ = ["StudyCondition", "StudyConfig", "render_study"]


@dataclass(frozen=True, slots=True)
class StudyCondition:
    """One condition of the study: a treatment's name and what it does, in words."""

    name: str
    definition: str


@dataclass(frozen=True, slots=True)
class StudyConfig:
    """How the study was set up, beside what its records say (agent, model, backend, harness)."""

    tasks_dir: str
    tasks: tuple[str, ...]
    left_out: tuple[str, ...]
    """Tasks of the folder with no skills of their own: not run at all (see ``comet study --help``)."""
    conditions: tuple[StudyCondition, ...]
    """CONTROL first."""
    count: int
    distractor_seed: int
    statistics_seed: int
    treatments_file: str
    command: str


def render_study(analysis: Analysis, config: StudyConfig, title: str) -> str:
    """study.md of *analysis*, the experiment whose id is *title*, run as *config* says."""
    baseline = next((r for r in analysis.reports if r.is_baseline), None)
    rows = [(c, analysis.verdict(c.name), _report(analysis, c.name)) for c in config.conditions[1:]]
    return render(
        "study.md.j2",
        title=title,
        a=analysis,
        c=config,
        baseline=baseline,
        identity=baseline.identity if baseline is not None else None,
        rows=rows,
        deciding=deciding_difference,
    )


def deciding_difference(verdict: TreatmentVerdict) -> str:
    """The pass-rate difference of the scope that decided the verdict, with its interval and p."""
    if verdict.scope == "on these tasks" and isinstance(verdict.on_tasks, OnTasksComparison):
        c = verdict.on_tasks
        return (
            f"{signed_percent(c.mean_difference)} [{signed_percent(c.low)}, {signed_percent(c.high)}], "
            f"p = {number(c.p_value, '.3g')}"
        )
    return difference(verdict.pass_rate)


def _report(analysis: Analysis, name: str) -> TreatmentReport | None:
    return next((r for r in analysis.reports if r.name == name), None)
