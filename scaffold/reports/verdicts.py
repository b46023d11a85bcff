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

Beside every verdict, the per-task effects (scaffold.stats.heterogeneity): a "no significant difference"
whose within-task omnibus test rejects says the effect is mixed rather than absent and names the tasks
helped and hurt at a false discovery rate of alpha; an improvement that hurts named tasks (or a
regression that helps some) says so too. The label itself is the mean's: the gates decide on it, and
"mixed" is what the reports add to it. Why not a label of its own: the omnibus test is about these
tasks only, while the mean's label may be decided across tasks; the two answer different questions,
and the reports show both.

Pure: per-task summaries in, a TreatmentVerdict out.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, TypeVar, cast

import msgspec

from scaffold.experiment.sequential import Design, SequentialVerdict
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
from scaffold.stats.exclusions import excess_recovered, fisher_exact, impute_at_rates, impute_excluded
from scaffold.stats.heterogeneity import Heterogeneity, per_task_effects
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
    "decide_sequential",
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
    recovered: Mapping[tuple[str, str], int] = field(default_factory=lambda: MappingProxyType({}))
    """Per (task, treatment): trials recovered by a retry (``stats.exclusions.excess_recovered``)."""


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
    once: Once | None = None,
) -> TreatmentVerdict:
    """The verdict of *treatment* against *baseline* (the rules: the module docstring). *scope_alpha*:
    the level the scope is chosen at, when *alpha* is a share of it (Holm's, in a family). *once*: the
    comparisons of an earlier call for the same pair, reused."""
    once = once or Once()
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
    pass_rate = once.get("pass_rate", lambda: _compare(sets.analysis, baseline, treatment, "pass_rate"))
    score = once.get("mean_score", lambda: _compare(sets.analysis, baseline, treatment, "mean_score"))
    on_tasks = once.get("on_tasks", lambda: compare_on_tasks(sets.analysis, baseline, treatment))
    across = isinstance(pass_rate, PairedComparison) and pass_rate.n >= across_tasks_needed(scope_alpha or alpha)
    scope = ACROSS_TASKS if across else ON_THESE_TASKS
    compare = _across(baseline, treatment) if across else _on_tasks(baseline, treatment)
    decisive = pass_rate if across else on_tasks
    label = label_of(decisive, alpha)
    on_label = label_of(on_tasks, alpha)
    noisy = any(counts[t].excluded or counts[t].flagged for t in (baseline, treatment))
    raw_label = label_of(once.get(("raw", scope), lambda: compare(sets.raw)), alpha) if noisy else label
    strict_label = label_of(once.get(("strict", scope), lambda: compare(sets.strict)), alpha) if noisy else label
    # What every verdict of this comparison holds; the label, reason and the figures of a comparison
    # that could be made are set below.
    verdict = TreatmentVerdict(
        treatment,
        baseline,
        label,
        "",
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
    if isinstance(decisive, Insufficient):
        excluded = ", ".join(f"{counts[t].excluded} of {counts[t].trials} {t} trials" for t in (baseline, treatment))
        return msgspec.structs.replace(verdict, reason=f"{decisive.reason}; excluded as noise: {excluded}")
    power = trials = None
    if isinstance(pass_rate, PairedComparison):
        power = tasks_needed(pass_rate.sd, effect, alpha, trials=_typical_trials(sets.analysis, pass_rate))
    trials = trials_needed(_baseline_rate(sets.analysis, baseline, decisive.tasks), effect, alpha)
    bounds = _bounds(sets, baseline, treatment, counts, alpha, decisive, once.bind(scope, compare))
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
            f"({bounds.treatment_excluded} of {treatment}, {bounds.baseline_excluded} of {baseline}"
            f"{_excess_note(bounds, baseline, treatment)}) as failures of "
            f"{treatment} and passes of {baseline} it is {bounds.worst_label!r}, and the other way round "
            f"{bounds.best_label!r}: the conclusion depends on what the excluded trials would have shown"
        )
        reason += _tipping_point(sets, baseline, treatment, alpha, label, compare)
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
    rate = scope_alpha or alpha
    mixed = once.get(("mixed", rate), lambda: per_task_effects(sets.analysis, baseline, treatment, rate=rate))
    reason += _mixed_note(mixed, label, scope_alpha or alpha)
    return msgspec.structs.replace(
        verdict,
        label=label,
        reason=reason,
        power=power,
        trials=trials,
        exclusions=bounds,
        on_tasks_reason=on_reason,
        heterogeneity=mixed,
    )


def _mixed_note(mixed: Heterogeneity | None, label: Label, alpha: float) -> str:
    """What the per-task effects add to the label: a mean of about 0 can be many changes that cancel
    (the skill helps some tasks and hurts others), and an improvement can still hurt some tasks."""
    if mixed is None:
        return ""
    rate = f"named at a {mixed.rate:.0%} false discovery rate"
    named = "; ".join(
        f"{word} {', '.join(tasks)}" for word, tasks in (("helps", mixed.helped), ("hurts", mixed.hurt)) if tasks
    )
    if label == "no significant difference" and mixed.mixed(alpha):
        which = f"{named} ({rate})" if named else f"no single task is {rate}"
        return (
            f"; mixed rather than absent: the skill changes outcomes on some of these tasks (within-task test "
            f"p = {mixed.omnibus_p:.3g} <= {alpha:.3g}): {which}"
        )
    if label == "improvement" and mixed.hurt:
        return f"; but it hurts {', '.join(mixed.hurt)} ({rate})"
    if label == "regression" and mixed.helped:
        return f"; but it helps {', '.join(mixed.helped)} ({rate})"
    return ""


Compare = Callable[[Sequence[TaskSummary]], "PairedComparison | OnTasksComparison | Insufficient"]
T = TypeVar("T")


class Once:
    """The comparisons of one pair of treatments, each computed on its first use. Holm's procedure
    decides a treatment twice (at the family's alpha to rank the p-values, then at its step's level),
    and only the labels depend on alpha: the comparisons, the extremes of the bounds and the per-task
    effects are the same both times."""

    def __init__(self) -> None:
        self._found: dict[object, Any] = {}

    def get(self, key: object, make: Callable[[], T]) -> T:
        if key not in self._found:
            self._found[key] = make()
        return cast("T", self._found[key])

    def bind(self, scope: str, compare: Compare) -> Compare:
        """*compare* of the deciding scope, remembered per set of summaries (the bounds' extremes)."""
        return lambda summaries: self.get((scope, _key_of(summaries)), lambda: compare(summaries))


def _key_of(summaries: Sequence[TaskSummary]) -> tuple[tuple[str, str, int, int], ...]:
    return tuple((s.task, s.treatment, s.passed, s.scored) for s in summaries)


def _across(baseline: str, treatment: str) -> Compare:
    return lambda summaries: _compare(summaries, baseline, treatment, "pass_rate")


def _on_tasks(baseline: str, treatment: str) -> Compare:
    return lambda summaries: compare_on_tasks(summaries, baseline, treatment)


def _why_not_across(pass_rate: PairedComparison | Insufficient, alpha: float) -> str:
    needed = across_tasks_needed(alpha)
    have = pass_rate.n
    return (
        f"decided on these tasks, about them only: across tasks (tasks like these) needs {needed} paired tasks "
        f"at alpha {alpha:.3g} and there {'is' if have == 1 else 'are'} {have}"
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
    once = {t: Once() for t in others}
    first = {t: decide(sets, t, baseline, baseline_found, counts, alpha, effect, once=once[t]) for t in others}
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
        v = decide(sets, t, baseline, baseline_found, counts, level, effect, scope_alpha=alpha, once=once[t])
        rule = f"{k} treatments compared with {baseline}: Holm's step-down test holds the family to alpha {alpha:.3g}; "
        if open_ or p_values[t] > level:
            rule += f"this comparison's p = {p_values[t]:.3g} was held to {level:.3g}"
        else:  # below its own level, but after one that was not: no effect may be claimed any more
            rule += f"its p = {p_values[t]:.3g} comes after one that did not reach its level, so no effect is claimed"
            if v.decisive:
                v = msgspec.structs.replace(v, label="no significant difference")
        held[t] = msgspec.structs.replace(v, reason=f"{v.reason}; {rule}")
    return tuple(held.get(t, first[t]) for t in others)


def decide_sequential(
    v: TreatmentVerdict, found: SequentialVerdict, design: Design, counts: Mapping[str, Counts]
) -> TreatmentVerdict:
    """*v* decided by the anytime-valid tests of a run until decided (scaffold.stats.sequential), with
    why the run stopped; the fixed-design comparisons stay in it as descriptions."""
    if v.label == INSUFFICIENT:
        return v
    r = found.analysis
    spent = counts[v.treatment].trials + counts[v.baseline].trials
    fixed = 2 * design.max_count * _tasks_of(v)
    figures = (
        f"e-values {r.improvement_e:.3g} for an improvement and {r.regression_e:.3g} for a regression (a claim at "
        f"{2 / found.alpha:.3g}: alpha {found.alpha:.3g} split between the two), {r.plus} pair(s) where only "
        f"{v.treatment} passed and {r.minus} where only {v.baseline} did; anytime-valid {1 - found.alpha:.0%} interval "
        f"of the difference {r.low:+.1%} to {r.high:+.1%}; {spent} trials of the {fixed} a fixed design of "
        f"{design.max_count} per task and treatment would run"
    )
    label: Label
    if v.label == INCONCLUSIVE and "excluded as noise (more than" in v.reason:
        label, why = INCONCLUSIVE, v.reason
    elif found.decision in ("improvement", "regression"):
        label, why = found.decision, f"decided at round {found.decided_at}: {found.decision}"  # type: ignore[assignment]
    elif found.decision == "equivalence":
        label = "no significant difference"
        why = f"decided at round {found.decided_at}: equivalent within {design.margin:.0%} of pass rate either way"
    elif r.decision in ("improvement", "regression"):
        label = INCONCLUSIVE
        why = (
            f"on the analysis set the answer is {r.decision!r}, but not with the excluded trials counted as failures "
            f"of {v.treatment} and passes of {v.baseline} ({found.worst.decision or 'undecided'}) and the other way "
            f"round ({found.best.decision or 'undecided'}): the conclusion depends on what the excluded trials would "
            f"have shown"
        )
    else:
        label = "no significant difference"
        end = "reached --max-count" if found.rounds >= design.max_count else "stopped"
        why = f"undecided: the run {end} after {found.rounds} whole round(s) without a decision"
    reason = f"run until decided, on these tasks: {why}; {figures}"
    if found.alpha < design.alpha:
        reason += f"; each of the treatments compared with {v.baseline} held to alpha {found.alpha:.3g} (Bonferroni)"
    return msgspec.structs.replace(v, label=label, reason=reason, scope=ON_THESE_TASKS, sequential=found)


def _tasks_of(v: TreatmentVerdict) -> int:
    c = v.on_tasks
    return c.n + len(c.unpaired) if isinstance(c, OnTasksComparison) else 0


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
    # The first attempts of one side's recovered trials beyond the other side's share count as excluded
    # too: retries redraw them, but not the lean of the trials that were never excluded.
    excess = excess_recovered(sets.recovered, {baseline: before.trials, treatment: after.trials}, baseline, treatment)
    if before.excluded or after.excluded or excess:
        pair = [s for s in sets.analysis if s.treatment in (baseline, treatment)]
        lost = Counter(sets.excluded)
        lost.update(excess)
        worst = compare(impute_excluded(pair, lost, {baseline: True, treatment: False}))
        best = compare(impute_excluded(pair, lost, {baseline: False, treatment: True}))
    return ExclusionCheck(
        worst=worst,
        best=best,
        worst_label=label_of(worst, alpha),
        best_label=label_of(best, alpha),
        baseline_excluded=before.excluded,
        baseline_trials=before.trials,
        treatment_excluded=after.excluded,
        treatment_trials=after.trials,
        baseline_excess=sum(n for (_, t), n in excess.items() if t == baseline),
        treatment_excess=sum(n for (_, t), n in excess.items() if t == treatment),
        rate_p_value=fisher_exact(
            after.excluded, after.trials - after.excluded, before.excluded, before.trials - before.excluded
        ),
    )


def _excess_note(bounds: ExclusionCheck, baseline: str, treatment: str) -> str:
    side, count = treatment, bounds.treatment_excess
    if not count:
        side, count = baseline, bounds.baseline_excess
    if not count:
        return ""
    other = baseline if side == treatment else treatment
    return (
        f"; and the first attempts of {count} {side} trials recovered by a retry, beyond {other}'s share of "
        f"recovered trials"
    )


_TIPPING: Final = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.5, 10.0, 20.0, math.inf)
"""Multiples of the treatment's observed failure (or pass) rate tried for the excluded trials."""


def _tipping_point(sets: TaskSets, baseline: str, treatment: str, alpha: float, label: Label, compare: Compare) -> str:
    """By how much the excluded trials would have to differ from the others to overturn an improvement
    (or a regression) on the analysis set: the excluded trials of the treatment put back failing at k
    times the rate its other trials of the same task failed (for a regression: passing at k times their
    pass rate), the baseline's at the rate of its others; the smallest k of ``_TIPPING`` that changes
    the answer. Beside the bounds (which ask about the extremes) it says how extreme the truth would
    have to be: "unless they fail at 3 times the observed rate" is a different worry from "at 1.25"."""
    if label not in ("improvement", "regression"):
        return ""
    rates = {(s.task, s.treatment): s.pass_rate for s in sets.analysis if s.treatment in (baseline, treatment)}
    cells = {(task, t) for task, t in sets.excluded if t in (baseline, treatment)} | set(rates)
    pooled = {t: _pooled_rate(sets.analysis, t) for t in (baseline, treatment)}
    for k in _TIPPING:
        chance: dict[tuple[str, str], float] = {}
        for key in cells:
            rate = rates.get(key, math.nan)
            rate = pooled[key[1]] if math.isnan(rate) else rate
            if key[1] == treatment:
                rate = 1 - min(1.0, k * (1 - rate)) if label == "improvement" else min(1.0, k * rate)
            chance[key] = rate
        if label_of(compare(impute_at_rates(sets.analysis, sets.excluded, chance)), alpha) != label:
            how = "fail" if label == "improvement" else "pass"
            if k == 1.0:
                return (
                    f"; even with the excluded trials passing at the rate of the others of their task and "
                    f"treatment the answer would not be {label!r}"
                )
            others = f"({baseline}'s excluded trials at the rate of its others)"
            if math.isinf(k):
                return f"; it holds unless every excluded {treatment} trial would have {how}ed {others}"
            return (
                f"; it holds unless the excluded {treatment} trials {how} at {k:g} times the rate of its other "
                f"trials of the same task, or more {others}"
            )
    how = "failing" if label == "improvement" else "passing"
    return (
        f"; with the {baseline} excluded trials at the rate of its others, even every excluded {treatment} trial "
        f"{how} would leave it {label!r}: only the {baseline} excluded trials could overturn it"
    )


def _pooled_rate(summaries: Sequence[TaskSummary], treatment: str) -> float:
    scored = sum(s.scored for s in summaries if s.treatment == treatment)
    passed = sum(s.passed for s in summaries if s.treatment == treatment)
    return passed / scored if scored else 0.5


def _figures(c: PairedComparison | OnTasksComparison, alpha: float, label: Label) -> str:
    why = (
        f"p = {c.p_value:.3g} <= {alpha:.3g} and the interval excludes 0"
        if label in ("improvement", "regression")
        else f"p = {c.p_value:.3g} (alpha {alpha:.3g}) or the interval includes 0"
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
