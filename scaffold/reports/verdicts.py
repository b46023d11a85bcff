"""The verdict of each treatment against the baseline: the policy, in one place.

Decided in this order, for one treatment:

1. "Insufficient clean data": the baseline has no trials, or fewer than ``MIN_TASKS`` tasks have a
   pass rate under both treatments in the analysis set.
2. "Inconclusive due to data quality": more than ``EXCLUDED_SHARE_LIMIT`` of either side's trials were
   excluded, or the label decided on the analysis set changes on the raw set (excluded trials kept) or
   on the strict set (flagged trials dropped): the answer depends on how noise is treated.
3. "improvement" / "regression": the paired sign-flip test over tasks gives p <= ``alpha`` and the
   interval of the mean per-task pass-rate difference excludes 0 (both must agree); the sign names it.
4. "no significant difference" otherwise. Never a fixed threshold on the drop.

Pure: per-task summaries in, a TreatmentVerdict out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from scaffold.reports.model import INCONCLUSIVE, INSUFFICIENT, Counts, Label, TreatmentVerdict
from scaffold.stats import Insufficient, Metric, PairedComparison, TaskSummary, compare_treatments, tasks_needed

__all__ = ["EXCLUDED_SHARE_LIMIT", "MIN_TASKS", "TaskSets", "decide", "label_of"]

MIN_TASKS: Final = 3  # paired tasks below which no comparison is attempted (stats.compare_treatments)
# More than half of a side's trials lost to noise: whatever survives is not a fair sample of the tasks.
EXCLUDED_SHARE_LIMIT: Final = 0.5


@dataclass(frozen=True, slots=True)
class TaskSets:
    """Per-task summaries of the three sets, computed once for all verdicts."""

    analysis: tuple[TaskSummary, ...]
    raw: tuple[TaskSummary, ...]
    strict: tuple[TaskSummary, ...]


def label_of(comparison: PairedComparison | Insufficient, alpha: float) -> Label:
    """The label of one paired comparison alone (without the data-quality rules of a verdict)."""
    if isinstance(comparison, Insufficient):
        return INSUFFICIENT
    # Both the test and the interval must exclude "no difference"; near the boundary they can disagree,
    # and then the honest answer is that no difference was shown.
    if comparison.p_value <= alpha and (comparison.low > 0 or comparison.high < 0):
        return "improvement" if comparison.mean_difference > 0 else "regression"
    return "no significant difference"


def _compare(
    summaries: Sequence[TaskSummary], baseline: str, treatment: str, metric: Metric
) -> PairedComparison | Insufficient:
    return compare_treatments(summaries, baseline, treatment, metric, min_tasks=MIN_TASKS)


def decide(
    sets: TaskSets,
    treatment: str,
    baseline: str,
    baseline_found: bool,
    counts: Mapping[str, Counts],
    alpha: float,
    effect: float,
) -> TreatmentVerdict:
    """The verdict of *treatment* against *baseline* (the rules: the module docstring)."""
    if not baseline_found:
        missing = Insufficient(f"baseline {baseline!r} has no trials", 0, MIN_TASKS)
        return TreatmentVerdict(
            treatment,
            baseline,
            INSUFFICIENT,
            f"baseline {baseline!r} has no trials to compare {treatment!r} with; choose a baseline (--baseline NAME)",
            missing,
            missing,
            INSUFFICIENT,
            INSUFFICIENT,
            None,
        )
    pass_rate = _compare(sets.analysis, baseline, treatment, "pass_rate")
    score = _compare(sets.analysis, baseline, treatment, "mean_score")
    label = label_of(pass_rate, alpha)
    noisy = any(counts[t].excluded or counts[t].flagged for t in (baseline, treatment))
    raw_label = label_of(_compare(sets.raw, baseline, treatment, "pass_rate"), alpha) if noisy else label
    strict_label = label_of(_compare(sets.strict, baseline, treatment, "pass_rate"), alpha) if noisy else label
    power = tasks_needed(pass_rate.sd, effect, alpha) if isinstance(pass_rate, PairedComparison) else None
    lost = {t: counts[t].excluded_share for t in (baseline, treatment)}
    worst = max(lost, key=lambda t: (lost[t], t))
    if isinstance(pass_rate, Insufficient):
        excluded = ", ".join(f"{counts[t].excluded} of {counts[t].trials} {t} trials" for t in (baseline, treatment))
        reason = f"{pass_rate.reason}; excluded as noise: {excluded}"
    elif lost[worst] > EXCLUDED_SHARE_LIMIT:
        label = INCONCLUSIVE
        reason = (
            f"{counts[worst].excluded} of {counts[worst].trials} {worst} trials were excluded as noise "
            f"(more than {EXCLUDED_SHARE_LIMIT:.0%}); the rest are not a fair sample of the tasks"
        )
    elif label != raw_label or label != strict_label:
        reason = (
            f"on the analysis set the answer is {label!r}, but with excluded trials kept it is {raw_label!r} "
            f"and without flagged trials it is {strict_label!r}: the conclusion depends on noisy trials"
        )
        label = INCONCLUSIVE
    else:
        reason = _figures(pass_rate, alpha, label)
    return TreatmentVerdict(treatment, baseline, label, reason, pass_rate, score, raw_label, strict_label, power)


def _figures(c: PairedComparison, alpha: float, label: Label) -> str:
    why = (
        f"p = {c.p_value:.3g} <= {alpha} and the interval excludes 0"
        if label in ("improvement", "regression")
        else f"p = {c.p_value:.3g} (alpha {alpha}) or the interval includes 0"
    )
    return (
        f"pass rate {c.mean_difference:+.1%} per task on average "
        f"({c.confidence:.0%} CI {c.low:+.1%} to {c.high:+.1%}) over {c.n} paired tasks "
        f"({c.improved} improved, {c.regressed} regressed, {c.unchanged} unchanged); {why}"
    )
