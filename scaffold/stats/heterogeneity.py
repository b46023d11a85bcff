"""Does the skill act differently on different tasks? Per-task effects, a within-task test, and the tasks
it helps or hurts.

A mean over tasks can hide everything: a skill that adds 40 points on half the tasks and takes 40
from the other half has a mean effect of 0, and the verdict reads "no significant difference" though
the skill changes almost every outcome. The verdict's tests are built to ask about the mean; this
module asks the other question, on the tasks that were run (trials the units, tasks the strata, as
scaffold.stats.stratified):

* **Per-task effects**: each task's pass-rate difference, treatment minus baseline, with its 95%
  interval (Newcombe's hybrid score interval, the one-task case of the on-these-tasks interval: the same
  half-corrected Wilson limits combined by MOVER). Each interval is 95% on its own, not jointly.
* **The within-task omnibus test** of "the skill changes no task's pass rate" against "it changes some":
  the statistic is the sum over tasks of each task's squared standardized difference,
  ``(x - E[x])^2 / Var[x]`` with ``x`` the treatment's passes and the moments of its hypergeometric law
  given the task's total of passes (Cochran 1954, "Some methods for strengthening the common chi-square
  tests": the total of the per-stratum chi-squares, which Mantel-Haenszel's one degree of freedom is a
  part of; Agresti, "Categorical Data Analysis", 3rd ed., section 6.4). Opposite effects add up in it
  instead of cancelling. Its null law is the product of the tasks' hypergeometric laws, as in the
  stratified test: computed exactly while the tasks' terms have at most 20,000 joint values, otherwise from
  ``DRAWS`` seeded draws (p = (1 + hits) / (1 + draws), a valid p-value however few the draws), and
  from ``GAMMA_FROM`` informative tasks by a gamma law with the statistic's exact null mean and
  variance (Satterthwaite's two-moment match; the sum of that many bounded terms is close to it, and
  it keeps a report on thousands of tasks fast). tests/scaffold/stats/test_heterogeneity.py measures
  its level by simulation.
* **Helped and hurt tasks** under false-discovery-rate control: each task's two-sided Fisher exact
  p-value, and the Benjamini-Hochberg step-up procedure at rate ``q`` (Benjamini & Hochberg 1995) over
  the informative tasks only. A task whose trials all agree (all passed or all failed on both sides)
  has a conditional law that is a single point: its p-value is 1 whatever happens, it cannot be a
  discovery, and counting it would only make the procedure stricter for the others (the argument of
  Tarone 1990 and Gilbert 2005 for discrete tests). Among the tasks named, at most a share ``q`` is
  expected to be named wrongly.

The null of every test here is the strong one of the on-these-tasks scope: within each task, the trials
are exchangeable between the two sides. Pure and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from scaffold.stats.exclusions import fisher_exact
from scaffold.stats.outcomes import TaskSummary
from scaffold.stats.paired import DEFAULT_SEED
from scaffold.stats.stratified import paired_tasks, side_interval

__all__ = ["DRAWS", "GAMMA_FROM", "Heterogeneity", "TaskEffect", "benjamini_hochberg", "omnibus", "per_task_effects"]

DRAWS: Final = 10_000
"""Monte Carlo draws of the omnibus statistic's null law (MC error at p = 0.05: 0.002)."""
GAMMA_FROM: Final = 30
"""Informative tasks from which the omnibus p-value comes from the moment-matched gamma law."""
_EXACT_SUMS: Final = 20_000  # joint values of the tasks' terms at most for the exact law (else Monte Carlo)
_TIE: Final = 1e-9  # relative: a null value within it of the observed one counts as reaching it


@dataclass(frozen=True, slots=True)
class TaskEffect:
    """One task's pass-rate difference, treatment minus baseline, its 95% interval and Fisher's p."""

    task: str
    difference: float
    low: float
    high: float
    p_value: float
    treatment_passed: int
    treatment_scored: int
    baseline_passed: int
    baseline_scored: int

    @property
    def informative(self) -> bool:
        """False when every trial of both sides agreed: the task's conditional test cannot reject."""
        passes = self.treatment_passed + self.baseline_passed
        return 0 < passes < self.treatment_scored + self.baseline_scored


@dataclass(frozen=True, slots=True)
class Heterogeneity:
    """Per-task effects of *treatment* against *baseline*, the omnibus test, and the discoveries."""

    baseline: str
    treatment: str
    effects: tuple[TaskEffect, ...]
    """Every task scored under both, sorted by name."""
    omnibus_p: float
    """p-value of "the treatment changes no task's pass rate" (1.0 with no informative task)."""
    method: str
    """How omnibus_p was computed: "exact", "Monte Carlo" or "gamma"."""
    rate: float
    """The false discovery rate the helped and hurt tasks are named at."""
    helped: tuple[str, ...]
    hurt: tuple[str, ...]

    @property
    def informative(self) -> int:
        return sum(e.informative for e in self.effects)

    def mixed(self, alpha: float) -> bool:
        """The omnibus test rejects: the skill changes outcomes on some tasks, whatever the mean says."""
        return self.omnibus_p <= alpha


def per_task_effects(
    summaries: Iterable[TaskSummary],
    baseline: str,
    treatment: str,
    *,
    rate: float = 0.05,
    seed: int = DEFAULT_SEED,
) -> Heterogeneity | None:
    """Per-task effects, the omnibus test and the helped/hurt tasks at false discovery rate *rate*;
    None when no task is scored under both treatments."""
    paired, _ = paired_tasks(summaries, baseline, treatment)
    if not paired:
        return None
    effects = tuple(_effect(task, after, before) for task, after, before in paired)
    strata = [
        (e.treatment_scored, e.baseline_scored, e.treatment_passed + e.baseline_passed, e.treatment_passed)
        for e in effects
    ]
    p_value, method = omnibus(strata, seed=seed)
    informative = [e for e in effects if e.informative]
    found = set(benjamini_hochberg([e.p_value for e in informative], rate))
    named = [e for i, e in enumerate(informative) if i in found]
    return Heterogeneity(
        baseline=baseline,
        treatment=treatment,
        effects=effects,
        omnibus_p=p_value,
        method=method,
        rate=rate,
        helped=tuple(e.task for e in named if e.difference > 0),
        hurt=tuple(e.task for e in named if e.difference < 0),
    )


def _effect(task: str, after: TaskSummary, before: TaskSummary) -> TaskEffect:
    p_t, low_t, high_t = side_interval(after.passed, after.scored, 0.95)
    p_b, low_b, high_b = side_interval(before.passed, before.scored, 0.95)
    d = p_t - p_b
    return TaskEffect(
        task=task,
        difference=d,
        low=max(d - math.hypot(p_t - low_t, high_b - p_b), -1.0),
        high=min(d + math.hypot(high_t - p_t, p_b - low_b), 1.0),
        p_value=fisher_exact(after.passed, after.scored - after.passed, before.passed, before.scored - before.passed),
        treatment_passed=after.passed,
        treatment_scored=after.scored,
        baseline_passed=before.passed,
        baseline_scored=before.scored,
    )


def benjamini_hochberg(p_values: Sequence[float], rate: float) -> tuple[int, ...]:
    """Indices (into *p_values*) of the hypotheses the Benjamini-Hochberg step-up procedure rejects at
    false discovery rate *rate*: the largest k with p_(k) <= k * rate / m, and every smaller p."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    cut = 0
    for k, i in enumerate(order, start=1):
        if p_values[i] <= k * rate / m:
            cut = k
    return tuple(sorted(order[:cut]))


def _law(a: int, b: int, c: int) -> tuple[list[float], list[float]]:
    """One task's null law of the standardized squared difference: its values and their probabilities
    (*a* treatment trials, *b* baseline trials, *c* passes of both)."""
    n = a + b
    mean = a * c / n
    variance = a * b * c * (n - c) / (n * n * (n - 1))
    first, last = max(0, c - b), min(c, a)
    total = math.comb(n, c)
    values = [(x - mean) ** 2 / variance for x in range(first, last + 1)]
    chances = [math.comb(a, x) * math.comb(b, c - x) / total for x in range(first, last + 1)]
    return values, chances


def omnibus(strata: Sequence[tuple[int, int, int, int]], *, seed: int = DEFAULT_SEED) -> tuple[float, str]:
    """p-value of the within-task omnibus test and how it was computed (the module docstring).

    *strata*: per task (treatment's scored trials, baseline's scored trials, passes of both, the
    treatment's passes observed). Tasks whose trials all agree add nothing and are left out.
    """
    informative = [(a, b, c, x) for a, b, c, x in strata if 0 < c < a + b]
    if not informative:
        return 1.0, "exact"
    laws = [_law(a, b, c) for a, b, c, _ in informative]
    observed = 0.0
    for (_, b, c, x), (values, _chances) in zip(informative, laws, strict=True):
        observed += values[x - max(0, c - b)]
    reach = observed * (1 - _TIE) - _TIE
    if len(informative) >= GAMMA_FROM:
        return _gamma(laws, observed), "gamma"
    # Exact only while the joint outcomes, counted by the distinct values of each task's term, are few:
    # merging the sums is pure Python, and past that it cost more (30-400 ms at 20-29 tasks) than the
    # 10,000 draws (about 7 ms) whose p-value is valid too.
    if math.prod(len(set(values)) for values, _ in laws) <= _EXACT_SUMS:
        exact = _exact(laws, reach)
        if exact is not None:
            return exact, "exact"
    return _monte_carlo(informative, laws, reach, seed), "Monte Carlo"


def _exact(laws: list[tuple[list[float], list[float]]], reach: float) -> float | None:
    """The null probability of a sum at least *reach*, every joint outcome enumerated; None when the
    distinct sums would pass ``_EXACT_SUMS``. Sums are merged on their value rounded to 1e-9: a task's
    law takes few distinct values (x and its mirror about the mean give the same one), so tasks alike in
    their trials add few new sums, and 8 tasks of 5 trials a side take a few hundred, not 6^8."""
    sums: dict[float, float] = {0.0: 1.0}
    for values, chances in laws:
        merged: dict[float, float] = {}
        for total, chance in sums.items():
            for v, p in zip(values, chances, strict=True):
                key = round(total + v, 9)
                merged[key] = merged.get(key, 0.0) + chance * p
        if len(merged) > _EXACT_SUMS:
            return None
        sums = merged
    return min(1.0, math.fsum(p for total, p in sums.items() if total >= reach))


def _monte_carlo(
    strata: Sequence[tuple[int, int, int, int]], laws: list[tuple[list[float], list[float]]], reach: float, seed: int
) -> float:
    import numpy as np

    rng = np.random.default_rng(seed)
    total = np.zeros(DRAWS)
    for (a, b, c, _), (values, _chances) in zip(strata, laws, strict=True):
        x = rng.hypergeometric(c, a + b - c, a, size=DRAWS)
        total += np.asarray(values)[x - max(0, c - b)]
    hits = int(np.count_nonzero(total >= reach))
    return (1 + hits) / (1 + DRAWS)


def _gamma(laws: list[tuple[list[float], list[float]]], observed: float) -> float:
    """The upper tail of the gamma law with the statistic's exact null mean and variance."""
    from scipy.special import gammaincc  # type: ignore[import-untyped]  # scipy ships no type stubs

    mean = variance = 0.0
    for values, chances in laws:
        m = math.fsum(v * p for v, p in zip(values, chances, strict=True))
        mean += m
        variance += math.fsum((v - m) ** 2 * p for v, p in zip(values, chances, strict=True))
    if variance <= 0:
        return 1.0
    shape, scale = mean * mean / variance, variance / mean
    return min(1.0, float(gammaincc(shape, observed / scale)))
