"""The verdict of each treatment against the baseline: the policy, in one place.

Two scopes of inference (scaffold.stats.paired and scaffold.stats.stratified):

* **across tasks**: the tasks are a sample of tasks like them; the paired sign-flip test over tasks
  answers "does the skill help on tasks like these". It needs ``across_tasks_needed(alpha)`` paired
  tasks (6 at alpha 0.05: with fewer, no outcome can reach p <= alpha).
* **on these tasks**: conditional on the tasks that were run; their trials are the units and the tasks
  strata (the exact stratified test and a score interval): "does the skill change the pass rate on
  these tasks". Valid with one task; it says nothing about other tasks.

The verdict is decided across tasks when there are enough paired tasks, else on these tasks, and says
which; the other scope's answer is kept beside it (``TreatmentVerdict.on_tasks_label``, and the
across-tasks comparison in ``pass_rate``). Within the deciding scope, in this order:

1. "Insufficient clean data": the baseline has no trials, or no task has a pass rate under both
   treatments in the analysis set.
2. "Inconclusive due to data quality": more than ``EXCLUDED_SHARE_LIMIT`` of either side's trials were
   excluded; or the label changes within the bounds the excluded trials allow (the comparison redone
   with the treatment's excluded trials counted as failures and the baseline's as passes, and the
   other way round: scaffold.stats.exclusions); or it changes on the strict set (flagged trials
   dropped). The answer then depends on what the noisy trials would have shown.
3. "improvement" / "regression": the scope's test gives p <= ``alpha`` and the interval of the mean
   per-task pass-rate difference excludes 0 (both must agree); the sign names it.
4. "no significant difference" otherwise. Never a fixed threshold on the drop.

Why bounds rather than the raw set (excluded trials kept as they were recorded), which this replaced:
an excluded trial is usually recorded as ``error``, unscored, so the raw set equals the analysis set
and an exclusion tied to the outcome (failing trials three times as likely to time out) went unnoticed;
when excluded trials were recorded as ``failed``, the raw set was one particular guess (every excluded
trial a failure, on both sides) rather than a range. The bounds ask the one question that matters:
could any outcome of the excluded trials change the answer? They are stricter than the raw set was:
in benchmarks/calibration.py a true +20-point effect with 5-15% of trials excluded reads
"Inconclusive" about half the time at 10 and 20 tasks, against 13-18% under the raw-set rule.
Only the two extremes are computed: every other imputation gives per-task differences between
theirs, task by task. The label is not strictly monotone in the differences (the
sign-flip p and the interval also move with their spread), so the extremes stand in for all the
imputations rather than bound them exactly; 2^(excluded trials) recomputations would be the exact
answer and are out of reach. The raw label is still computed, for the sensitivity table. Fisher's
exact test of the exclusion rates (``ExclusionCheck.rate_p_value``) is shown beside, not decided on: a
difference in rates is a warning sign, the bounds are the answer.

Several treatments against one baseline (``decide_all``): a family of comparisons, each of which
could claim an effect by chance; tested each at alpha, 3 treatments without any effect gave at least
one false verdict 8-10% of the time, 5 treatments 16-17% (an outside simulation). So the family is
held to alpha by Holm's step-down procedure (Holm 1979): the comparisons' p-values (each in its own
scope) sorted from the smallest, the i-th of k claims an effect only at p <= alpha / (k - i + 1) and
only when every smaller one did. Each verdict line says the level it was held to and its own p; the
intervals stay per comparison (95% each, not simultaneous). With one treatment nothing changes.

Pure: per-task summaries in, a TreatmentVerdict out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import msgspec

from scaffold.reports.model import INCONCLUSIVE, INSUFFICIENT, Counts, ExclusionCheck, Label, TreatmentVerdict
from scaffold.stats import (
    Insufficient,
    Metric,
    PairedComparison,
    TaskSummary,
    compare_treatments,
    tasks_needed,
    trials_needed,
)
from scaffold.stats.exclusions import fisher_exact, impute_excluded
from scaffold.stats.stratified import OnTasksComparison, compare_on_tasks

__all__ = [
    "ACROSS_TASKS",
    "EXCLUDED_SHARE_LIMIT",
    "MIN_TASKS",
    "ON_THESE_TASKS",
    "TaskSets",
    "across_tasks_needed",
    "decide",
    "decide_all",
    "label_of",
]

ACROSS_TASKS: Final = "across tasks"
ON_THESE_TASKS: Final = "on these tasks"

MIN_TASKS: Final = 3  # paired tasks below which no comparison is attempted (stats.compare_treatments)
# More than half of a side's trials lost to noise: whatever survives is not a fair sample of the tasks.
EXCLUDED_SHARE_LIMIT: Final = 0.5


@dataclass(frozen=True, slots=True)
class TaskSets:
    """Per-task summaries of the three sets, computed once for all verdicts, and the excluded trials
    per (task, treatment) for the bounds."""

    analysis: tuple[TaskSummary, ...]
    raw: tuple[TaskSummary, ...]
    strict: tuple[TaskSummary, ...]
    excluded: Mapping[tuple[str, str], int] = field(default_factory=lambda: MappingProxyType({}))


def across_tasks_needed(alpha: float) -> int:
    """The fewest paired tasks at which the exact sign-flip test can reach p <= *alpha* at all (its
    smallest p is 2 / 2^n): 6 at 0.05. Below it the across-tasks scope cannot decide anything."""
    n = MIN_TASKS
    while 2.0 / (1 << n) > alpha:
        n += 1
    return n


def label_of(comparison: PairedComparison | OnTasksComparison | Insufficient, alpha: float) -> Label:
    """The label of one comparison alone (without the data-quality rules of a verdict)."""
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
    *,
    scope_alpha: float | None = None,
) -> TreatmentVerdict:
    """The verdict of *treatment* against *baseline* (the rules: the module docstring). *scope_alpha*:
    the level the scope is chosen at, when *alpha* is a share of it (Holm's, in a family)."""
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
    on_tasks = compare_on_tasks(sets.analysis, baseline, treatment)
    across = isinstance(pass_rate, PairedComparison) and pass_rate.n >= across_tasks_needed(scope_alpha or alpha)
    scope = ACROSS_TASKS if across else ON_THESE_TASKS
    compare = _across(baseline, treatment) if across else _on_tasks(baseline, treatment)
    decisive = pass_rate if across else on_tasks
    label = label_of(decisive, alpha)
    on_label = label_of(on_tasks, alpha)
    noisy = any(counts[t].excluded or counts[t].flagged for t in (baseline, treatment))
    raw_label = label_of(compare(sets.raw), alpha) if noisy else label
    strict_label = label_of(compare(sets.strict), alpha) if noisy else label
    if isinstance(decisive, Insufficient):
        excluded = ", ".join(f"{counts[t].excluded} of {counts[t].trials} {t} trials" for t in (baseline, treatment))
        reason = f"{decisive.reason}; excluded as noise: {excluded}"
        return TreatmentVerdict(
            treatment,
            baseline,
            label,
            reason,
            pass_rate,
            score,
            raw_label,
            strict_label,
            None,
            None,
            None,
            scope=scope,
            on_tasks=on_tasks,
            on_tasks_label=on_label,
        )
    power = trials = None
    if isinstance(pass_rate, PairedComparison):
        power = tasks_needed(pass_rate.sd, effect, alpha, trials=_typical_trials(sets.analysis, pass_rate))
    trials = trials_needed(_baseline_rate(sets.analysis, baseline, decisive.tasks), effect, alpha)
    bounds = _bounds(sets, baseline, treatment, counts, alpha, decisive, compare)
    lost = {t: counts[t].excluded_share for t in (baseline, treatment)}
    worst = max(lost, key=lambda t: (lost[t], t))
    if lost[worst] > EXCLUDED_SHARE_LIMIT:
        label = INCONCLUSIVE
        reason = (
            f"{counts[worst].excluded} of {counts[worst].trials} {worst} trials were excluded as noise "
            f"(more than {EXCLUDED_SHARE_LIMIT:.0%}); the rest are not a fair sample of the tasks"
        )
    elif label != bounds.worst_label or label != bounds.best_label:
        reason = (
            f"on the analysis set the answer is {label!r}, but counting the excluded trials "
            f"({bounds.treatment_excluded} of {treatment}, {bounds.baseline_excluded} of {baseline}) as failures of "
            f"{treatment} and passes of {baseline} it is {bounds.worst_label!r}, and the other way round "
            f"{bounds.best_label!r}: the conclusion depends on what the excluded trials would have shown"
        )
        label = INCONCLUSIVE
    elif label != strict_label:
        reason = (
            f"on the analysis set the answer is {label!r}, but without flagged trials it is {strict_label!r}: "
            f"the conclusion depends on noisy trials"
        )
        label = INCONCLUSIVE
    else:
        reason = _figures(decisive, alpha, label)
    on_reason = ""
    if not across:
        reason += "; " + _why_not_across(pass_rate, alpha)
    elif isinstance(on_tasks, OnTasksComparison):
        on_reason = _figures(on_tasks, alpha, on_label)
    return TreatmentVerdict(
        treatment,
        baseline,
        label,
        reason,
        pass_rate,
        score,
        raw_label,
        strict_label,
        power,
        trials,
        bounds,
        scope=scope,
        on_tasks=on_tasks,
        on_tasks_label=on_label,
        on_tasks_reason=on_reason,
    )


Compare = Callable[[Sequence[TaskSummary]], "PairedComparison | OnTasksComparison | Insufficient"]


def _across(baseline: str, treatment: str) -> Compare:
    return lambda summaries: _compare(summaries, baseline, treatment, "pass_rate")


def _on_tasks(baseline: str, treatment: str) -> Compare:
    return lambda summaries: compare_on_tasks(summaries, baseline, treatment)


def _why_not_across(pass_rate: PairedComparison | Insufficient, alpha: float) -> str:
    needed = across_tasks_needed(alpha)
    have = pass_rate.n
    return (
        f"decided on these tasks, about them only: across tasks (tasks like these) needs {needed} paired tasks "
        f"at alpha {alpha} and there {'is' if have == 1 else 'are'} {have}"
    )


def decide_all(
    sets: TaskSets,
    treatments: Sequence[str],
    baseline: str,
    baseline_found: bool,
    counts: Mapping[str, Counts],
    alpha: float,
    effect: float,
) -> tuple[TreatmentVerdict, ...]:
    """The verdicts of every treatment but the baseline, in *treatments* order, the family held to
    *alpha* by Holm's step-down procedure (the module docstring)."""
    others = [t for t in treatments if t != baseline]
    first = {t: decide(sets, t, baseline, baseline_found, counts, alpha, effect) for t in others}
    p_values = {t: _decisive_p(v) for t, v in first.items()}
    ranked = sorted((t for t in others if math.isfinite(p_values[t])), key=lambda t: (p_values[t], t))
    k = len(ranked)
    if k < 2:
        return tuple(first[t] for t in others)
    held: dict[str, TreatmentVerdict] = {}
    open_ = True
    for i, t in enumerate(ranked):
        level = alpha / (k - i)
        open_ = open_ and p_values[t] <= level
        v = decide(sets, t, baseline, baseline_found, counts, level, effect, scope_alpha=alpha)
        rule = f"{k} treatments compared with {baseline}: Holm's step-down test holds the family to alpha {alpha}; "
        if open_ or p_values[t] > level:
            rule += f"this comparison's p = {p_values[t]:.3g} was held to {level:.3g}"
        else:  # below its own level, but after one that was not: no effect may be claimed any more
            rule += f"its p = {p_values[t]:.3g} comes after one that did not reach its level, so no effect is claimed"
            if v.decisive:
                v = msgspec.structs.replace(v, label="no significant difference")
        held[t] = msgspec.structs.replace(v, reason=f"{v.reason}; {rule}")
    return tuple(held.get(t, first[t]) for t in others)


def _decisive_p(v: TreatmentVerdict) -> float:
    c = v.pass_rate if v.scope == ACROSS_TASKS else v.on_tasks
    return c.p_value if isinstance(c, (PairedComparison, OnTasksComparison)) else math.nan


def _typical_trials(summaries: Sequence[TaskSummary], c: PairedComparison) -> float:
    """Median scored trials of a paired task's side: the step 1/m of its pass rates (see tasks_needed)."""
    paired, sides = set(c.tasks), (c.baseline, c.treatment)
    return float(statistics.median(s.scored for s in summaries if s.treatment in sides and s.task in paired))


def _baseline_rate(summaries: Sequence[TaskSummary], baseline: str, tasks: Sequence[str]) -> float:
    """The baseline's mean pass rate over the paired tasks: where a one-task trial count starts from."""
    paired = set(tasks)
    rates = [s.pass_rate for s in summaries if s.treatment == baseline and s.task in paired]
    return math.fsum(rates) / len(rates) if rates else math.nan


def _bounds(
    sets: TaskSets,
    baseline: str,
    treatment: str,
    counts: Mapping[str, Counts],
    alpha: float,
    comparison: PairedComparison | OnTasksComparison,
    compare: Compare,
) -> ExclusionCheck:
    """The deciding comparison at both extremes of the excluded trials' outcomes (the module docstring)."""
    before, after = counts[baseline], counts[treatment]
    worst: PairedComparison | OnTasksComparison | Insufficient = comparison
    best: PairedComparison | OnTasksComparison | Insufficient = comparison
    if before.excluded or after.excluded:
        pair = [s for s in sets.analysis if s.treatment in (baseline, treatment)]
        worst = compare(impute_excluded(pair, sets.excluded, {baseline: True, treatment: False}))
        best = compare(impute_excluded(pair, sets.excluded, {baseline: False, treatment: True}))
    return ExclusionCheck(
        worst=worst,
        best=best,
        worst_label=label_of(worst, alpha),
        best_label=label_of(best, alpha),
        baseline_excluded=before.excluded,
        baseline_trials=before.trials,
        treatment_excluded=after.excluded,
        treatment_trials=after.trials,
        rate_p_value=fisher_exact(
            after.excluded, after.trials - after.excluded, before.excluded, before.trials - before.excluded
        ),
    )


def _figures(c: PairedComparison | OnTasksComparison, alpha: float, label: Label) -> str:
    why = (
        f"p = {c.p_value:.3g} <= {alpha} and the interval excludes 0"
        if label in ("improvement", "regression")
        else f"p = {c.p_value:.3g} (alpha {alpha}) or the interval includes 0"
    )
    interval = f"({c.confidence:.0%} CI {c.low:+.1%} to {c.high:+.1%})"
    if isinstance(c, OnTasksComparison):
        return (
            f"on these tasks: pass rate {c.mean_difference:+.1%} per task on average {interval} over {c.n} "
            f"task(s) and {c.trials} trials ({c.informative} task(s) where the trials did not all agree), "
            f"exact stratified test; {why}"
        )
    return (
        f"across tasks: pass rate {c.mean_difference:+.1%} per task on average {interval} over {c.n} paired "
        f"tasks ({c.improved} improved, {c.regressed} regressed, {c.unchanged} unchanged); {why}"
    )
