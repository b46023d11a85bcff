"""Plain trial outcomes and the per-task reducer (the first half of "reducers then metrics")."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scaffold.stats.passk import pass_at_k, pass_hat_k, pass_hat_k_observed
from scaffold.stats.rates import Rate, wilson_interval

if TYPE_CHECKING:
    from scaffold.records import TrialRecord

__all__ = ["TaskSummary", "TrialOutcome", "outcomes_from_records", "summarize_tasks"]


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """One trial as the statistics see it. ``None`` (or a NaN score) means unscored, never failed."""

    task: str
    treatment: str
    trial: int
    passed: bool | None
    score: float | None = None


def outcomes_from_records(records: Iterable[TrialRecord]) -> tuple[TrialOutcome, ...]:
    """Adapt trial records: an errored trial is unscored on both counts; sorted by (task, treatment, trial)."""
    out = []
    for record in records:
        if record.verdict == "error":
            out.append(TrialOutcome(record.task, record.treatment, record.trial, None, None))
        else:
            score = record.weighted_score
            out.append(
                TrialOutcome(record.task, record.treatment, record.trial, record.verdict == "passed", _finite(score))
            )
    return tuple(sorted(out, key=lambda o: (o.task, o.treatment, o.trial)))


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class TaskSummary:
    """The trials of one (task, treatment) reduced to counts.

    ``scored`` (n) and ``passed`` (c) count only trials with a verdict; ``scores`` counts trials with a
    finite score. ``pass_rate`` and ``mean_score`` are NaN when nothing was scored.
    """

    task: str
    treatment: str
    trials: int
    scored: int
    passed: int
    scores: int
    pass_rate: float
    mean_score: float

    @property
    def unscored(self) -> int:
        return self.trials - self.scored

    def pass_at_k(self, k: int) -> float:
        return pass_at_k(self.scored, self.passed, k)

    def pass_hat_k(self, k: int) -> float:
        return pass_hat_k(self.scored, self.passed, k)

    def pass_hat_k_observed(self, k: int) -> float:
        return pass_hat_k_observed(self.scored, self.passed, k)

    def wilson(self, confidence: float = 0.95) -> Rate:
        """Wilson interval of this task's pass rate: its trials are exchangeable draws."""
        return wilson_interval(self.passed, self.scored, confidence)


def summarize_tasks(outcomes: Iterable[TrialOutcome]) -> tuple[TaskSummary, ...]:
    """Reduce outcomes to one summary per (task, treatment), sorted by (treatment, task)."""
    groups: dict[tuple[str, str], list[TrialOutcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[(outcome.treatment, outcome.task)].append(outcome)
    summaries = []
    for (treatment, task), group in sorted(groups.items()):
        verdicts = [o.passed for o in group if o.passed is not None]
        scores = [s for o in group if (s := _finite(o.score)) is not None]
        n, c = len(verdicts), sum(verdicts)
        summaries.append(
            TaskSummary(
                task=task,
                treatment=treatment,
                trials=len(group),
                scored=n,
                passed=c,
                scores=len(scores),
                pass_rate=c / n if n else math.nan,
                # fsum is correctly rounded, so the mean does not depend on the order of the trials.
                mean_score=math.fsum(scores) / len(scores) if scores else math.nan,
            )
        )
    return tuple(summaries)
