"""Across tasks, per treatment: the metrics after the per-task reducer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scaffold.stats.outcomes import TaskSummary, TrialOutcome, summarize_tasks
from scaffold.stats.passk import DEFAULT_MAX_K, KPlan, plan_ks
from scaffold.stats.rates import Estimate, Rate, mean_over_tasks, wilson_interval

__all__ = ["TreatmentStats", "summarize_treatments"]

_UNIT = (0.0, 1.0)


@dataclass(frozen=True, slots=True)
class TreatmentStats:
    """One treatment over its tasks. Every ``Estimate`` is a mean of per-task values (the task is the unit).

    ``pooled`` is the Wilson interval of all scored trials pooled: descriptive only, because it treats
    trials of the same task as independent and so is too narrow for claims about tasks.
    """

    treatment: str
    tasks: tuple[TaskSummary, ...]
    plan: KPlan
    pass_rate: Estimate
    mean_score: Estimate
    pass_at_k: Mapping[int, Estimate]
    pass_hat_k: Mapping[int, Estimate]
    pass_hat_k_observed: Mapping[int, Estimate]
    pooled: Rate

    @property
    def trials(self) -> int:
        return sum(t.trials for t in self.tasks)

    @property
    def unscored_trials(self) -> int:
        return sum(t.unscored for t in self.tasks)

    @property
    def unscored_tasks(self) -> tuple[str, ...]:
        """Tasks without a single scored trial: absent from every estimate, not counted as failures."""
        return tuple(t.task for t in self.tasks if t.scored == 0)


def summarize_treatments(
    outcomes: Iterable[TrialOutcome], max_k: int = DEFAULT_MAX_K, confidence: float = 0.95
) -> tuple[TreatmentStats, ...]:
    """Per-treatment statistics, sorted by treatment, with one k plan shared by all treatments given.

    Pass only the treatments (and tasks) to be compared: k is clamped to the fewest scored trials of any
    task among them, so that pass@k means the same thing in every row.
    """
    summaries = summarize_tasks(outcomes)
    plan = plan_ks(summaries, max_k)
    by_treatment: dict[str, list[TaskSummary]] = {}
    for s in summaries:
        by_treatment.setdefault(s.treatment, []).append(s)

    # Every figure here is a mean of values in [0, 1]: pass rates, pass@k, and weighted scores (a record's
    # weighted_score is validated to [0, 1]). A t interval is symmetric and can cross 0 or 1 with few
    # tasks; clipped to [0, 1] it loses only values the mean cannot take, so every possible value it
    # covered it still covers (its coverage is unchanged) and no report shows an impossible score.
    def over_tasks(values: Iterable[float]) -> Estimate:
        return mean_over_tasks(values, confidence, _UNIT)

    result = []
    for treatment, tasks in sorted(by_treatment.items()):
        scored = [t for t in tasks if t.scored > 0]
        result.append(
            TreatmentStats(
                treatment=treatment,
                tasks=tuple(tasks),
                plan=plan,
                pass_rate=over_tasks(t.pass_rate for t in tasks),
                mean_score=over_tasks(t.mean_score for t in tasks),
                pass_at_k={k: over_tasks(t.pass_at_k(k) for t in scored) for k in plan.ks},
                pass_hat_k={k: over_tasks(t.pass_hat_k(k) for t in scored) for k in plan.ks},
                pass_hat_k_observed={k: over_tasks(t.pass_hat_k_observed(k) for t in scored) for k in plan.ks},
                pooled=wilson_interval(sum(t.passed for t in tasks), sum(t.scored for t in tasks), confidence),
            )
        )
    return tuple(result)
