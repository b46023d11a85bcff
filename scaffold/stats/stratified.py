"""Two treatments on *these* tasks: trials are the units, tasks the strata.

The across-tasks comparison (scaffold.stats.paired) treats the tasks as a sample from the tasks like
them and asks whether the skill helps on such tasks; with 2 to 5 tasks it cannot say (the sign-flip
test needs 6 tasks to reach p <= 0.05 at all). This one is conditional on the tasks that were run: it
asks whether the skill changes the pass rate *on these tasks*, which the repeated trials of each task
can answer with one task. It says nothing about other tasks.

Estimand: the mean over the tasks of the per-task pass-rate difference, treatment minus baseline,
every task weighing the same (the same weighting as across tasks, so the two scopes estimate the same
number and differ only in what counts as the noise: the trials here, the tasks there).

Test: the exact stratified permutation test of "the treatment changes no task's pass rate". Under it,
a task's passes are exchangeable between its two sides, so given each task's total of passes the
treatment's count is hypergeometric, independently across tasks; the statistic is the estimate itself
and the two-sided p-value is the probability, under that product of hypergeometric laws, of an
estimate at least as far from 0 (its null mean) as the one observed. Computed exactly by convolving
the tasks' distributions on the integer lattice of the statistic's values (multiples of one over the
least common multiple of the trial counts, over the number of tasks), with a seeded Monte Carlo of
20,000 draws (or, from 30 informative tasks, the normal law with the exact null variance) when that
lattice would pass four million values. With
one trial per side of a task, a task where both sides agree carries no information, and the test
knows: its hypergeometric law is a single point. This is the conditional test of Mantel-Haenszel
type (Mantel & Haenszel 1959; the exact form: Gart 1970, Agresti's "Categorical Data Analysis"
section 6.7), with the equally weighted difference of proportions as its statistic.

Interval: the MOVER combination (Zou & Donner 2008, "Construction of confidence limits about effect
measures: a general approach") of score intervals of every side of every task, Newcombe's hybrid
score interval (Newcombe 1998, method 10) extended to the weighted sum over strata: with w = 1/T, d the
estimate and (l, u) each side's interval,

    low  = d - sqrt(sum_t w^2 [(p_Tt - l_Tt)^2 + (u_Bt - p_Bt)^2])
    high = d + sqrt(sum_t w^2 [(u_Tt - p_Tt)^2 + (p_Bt - l_Bt)^2])

inside [-1, 1], never a point (score intervals are not degenerate at 0/n or n/n: 10 of 10 still
leaves the true rate anywhere above 0.72), and asymmetric where the rates are near their bounds. Each
side's interval is Wilson's with half the usual continuity correction (the bounds of the Wilson
interval taken at p -+ 1/(4n)). Why: measured over 1 to 50 tasks x 3 to 20 trials and effects of 0 to
40 points (2,000 experiments each), plain Wilson limits combined this way covered 90-94% once there
were several tasks (the quadrature sum of skewed distances runs short), the full correction 95-100%
(mean 97.7%: too wide, power lost), the half correction 93.5-100% with a mean of 96.3%, the closest
to the 95% asked. One trial a side is the exception: a side is then one of two points, the score
interval's normal approximation fails, and the combination covered 85-89% from 3 to 20 tasks (a task
where one side passed and the other failed moved the interval past the truth too easily); the exact
Clopper-Pearson limits of that side (1/1: [0.025, 1]) bring it to 93.0-99.5%, the highest where the
design is too discrete for any interval to sit at 95 (3 tasks x 1 trial: the estimate takes 7
values). tests/scaffold/stats/test_stratified.py checks coverage of at least 93% by simulation, and
benchmarks/calibration.py reports it.

Pure and deterministic, as the rest of scaffold.stats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Final

from scaffold.stats.outcomes import TaskSummary
from scaffold.stats.paired import DEFAULT_SEED, Insufficient
from scaffold.stats.rates import wilson_bounds

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EXACT_SPAN",
    "OnTasksComparison",
    "compare_on_tasks",
    "paired_tasks",
    "side_interval",
    "stratified_p_value",
]

_FFT_FROM: Final = 64  # laws longer than this are convolved by FFT
NORMAL_FROM: Final = 30
"""Informative tasks from which a design too large for the exact law uses the normal law (else draws)."""
EXACT_SPAN: Final = 4_000_000
"""Values of the statistic's law above which it is drawn by Monte Carlo (memory: 32 MB of float64)."""
_DRAWS: Final = 20_000
_CORRECTION: Final = 0.5  # of Wilson's continuity correction (the module docstring: measured coverage)


@dataclass(frozen=True, slots=True)
class OnTasksComparison:
    """*treatment* minus *baseline* on these tasks (the module docstring): the estimate, its interval and
    the exact stratified test, with the per-task differences it is made of."""

    baseline: str
    treatment: str
    tasks: tuple[str, ...]
    differences: tuple[float, ...]
    mean_difference: float
    low: float
    high: float
    p_value: float
    exact: bool
    trials: int
    """Scored trials of both sides over the paired tasks."""
    informative: int
    """Tasks whose trials did not all agree (all passed or all failed on both sides): only they can move
    the test."""
    unpaired: tuple[str, ...] = ()
    confidence: float = 0.95

    @property
    def n(self) -> int:
        return len(self.tasks)


def compare_on_tasks(
    summaries: Iterable[TaskSummary],
    baseline: str,
    treatment: str,
    *,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> OnTasksComparison | Insufficient:
    """The pass rates of *treatment* and *baseline* compared on the tasks scored under both (at least
    one); ``Insufficient`` when there is none."""
    paired, unpaired = paired_tasks(summaries, baseline, treatment)
    if not paired:
        return Insufficient(
            f"insufficient data: no task has a scored trial under both {baseline!r} and {treatment!r}", 0, 1
        )
    weight = 1.0 / len(paired)
    diffs = [after.pass_rate - before.pass_rate for _, after, before in paired]
    mean = math.fsum(diffs) * weight
    down = up = 0.0
    for _, after, before in paired:
        p_t, low_t, high_t = side_interval(after.passed, after.scored, confidence)
        p_b, low_b, high_b = side_interval(before.passed, before.scored, confidence)
        down += (p_t - low_t) ** 2 + (high_b - p_b) ** 2
        up += (high_t - p_t) ** 2 + (p_b - low_b) ** 2
    low = max(mean - weight * math.sqrt(down), -1.0)
    high = min(mean + weight * math.sqrt(up), 1.0)
    strata = [(a.scored, b.scored, a.passed + b.passed, a.passed) for _, a, b in paired]
    p_value, exact = stratified_p_value(strata, seed=seed)
    return OnTasksComparison(
        baseline=baseline,
        treatment=treatment,
        tasks=tuple(task for task, _, _ in paired),
        differences=tuple(diffs),
        mean_difference=mean,
        low=low,
        high=high,
        p_value=p_value,
        exact=exact,
        trials=sum(a + b for a, b, _, _ in strata),
        informative=sum(0 < c < a + b for a, b, c, _ in strata),
        unpaired=unpaired,
        confidence=confidence,
    )


def paired_tasks(
    summaries: Iterable[TaskSummary], baseline: str, treatment: str
) -> tuple[list[tuple[str, TaskSummary, TaskSummary]], tuple[str, ...]]:
    """(task, the treatment's summary, the baseline's) of every task scored under both, by name, and the
    tasks seen under either that are not."""
    rows: dict[str, dict[str, TaskSummary]] = {baseline: {}, treatment: {}}
    for s in summaries:
        if s.treatment in rows:
            rows[s.treatment][s.task] = s
    before, after = rows[baseline], rows[treatment]
    names = sorted(set(before) | set(after))
    paired = [
        (t, after[t], before[t])
        for t in names
        if t in before and t in after and before[t].scored > 0 and after[t].scored > 0
    ]
    found = {t for t, _, _ in paired}
    return paired, tuple(t for t in names if t not in found)


def side_interval(passed: int, scored: int, confidence: float) -> tuple[float, float, float]:
    """One side of one task: its pass rate and the Wilson limits with half the continuity correction;
    with one trial, the Clopper-Pearson limits (the module docstring says why)."""
    rate = passed / scored
    if scored == 1:
        tail = (1.0 - confidence) / 2.0
        # The exact limits of one Bernoulli trial: beta quantiles with a shape parameter of 1 in closed form.
        return rate, (tail if passed else 0.0), (1.0 if passed else 1.0 - tail)
    shift = _CORRECTION / (2 * scored)
    low = 0.0 if passed == 0 else wilson_bounds(max(rate - shift, 0.0), scored, confidence)[0]
    high = 1.0 if passed == scored else wilson_bounds(min(rate + shift, 1.0), scored, confidence)[1]
    return rate, min(max(low, 0.0), rate), max(min(high, 1.0), rate)


def stratified_p_value(strata: Sequence[tuple[int, int, int, int]], *, seed: int = DEFAULT_SEED) -> tuple[float, bool]:
    """Two-sided p-value of the stratified permutation test, and whether it is exact.

    *strata*: per task (treatment's scored trials, baseline's scored trials, passes of both together,
    the treatment's passes observed). Under the null each task's treatment passes are hypergeometric
    given its total; the statistic (the mean over tasks of the treatment's minus the baseline's pass
    rate) has null mean 0, and p is the null probability of a value at least as far from 0 as observed.

    Exact: with L the least common multiple of the trial counts, every task's difference times L is an
    integer, so the null law of the statistic is a convolution of short integer-indexed arrays (no
    rounding of the values, no tolerance in the comparison). When that law would have more than
    ``EXACT_SPAN`` values (trial counts whose common multiple is huge, as errored trials make them):
    with at least ``NORMAL_FROM`` informative tasks the normal law with the exact null variance, else
    20,000 seeded Monte Carlo draws, p = (1 + hits) / (1 + draws).
    """
    import numpy as np

    if not strata:
        return 1.0, True
    scale = math.lcm(*(a for a, _, _, _ in strata), *(b for _, b, _, _ in strata))
    span = 1 + sum((min(c, a) - max(0, c - b)) * (scale // a + scale // b) for a, b, c, _ in strata)
    if span > EXACT_SPAN:
        if sum(0 < c < a + b for a, b, c, _ in strata) >= NORMAL_FROM:
            return _normal(strata), False
        return _monte_carlo(strata, seed), False
    observed = abs(sum(x * (scale // a) - (c - x) * (scale // b) for a, b, c, x in strata))
    laws = []
    low = 0  # the value (in units of 1 / scale) of the first entry of the law of the sum
    for a, b, c, _ in strata:
        first, last = max(0, c - b), min(c, a)
        step = scale // a + scale // b  # one more treatment pass moves the difference by this many units
        kernel = np.zeros((last - first) * step + 1)
        for x in range(first, last + 1):
            kernel[(x - first) * step] = math.comb(a, x) * math.comb(b, c - x) / math.comb(a + b, c)
        laws.append(kernel)
        low += first * (scale // a) - (c - first) * (scale // b)
    law = _convolve_all(laws)
    values = np.arange(law.size) + low
    return min(1.0, float(law[np.abs(values) >= observed].sum())), True


def _convolve_all(laws: list[np.ndarray]) -> np.ndarray:
    """The law of the sum of independent integer-valued terms: their laws convolved in pairs, level by
    level (FFT for long ones: a thousand tasks of a hundred trials in about a tenth of a second, where
    one by one took minutes). FFT rounding leaves tiny negative entries: clipped to 0."""
    import numpy as np
    from scipy.signal import fftconvolve  # type: ignore[import-untyped]

    while len(laws) > 1:
        paired = []
        for i in range(0, len(laws) - 1, 2):
            left, right = laws[i], laws[i + 1]
            if min(left.size, right.size) > _FFT_FROM:
                paired.append(np.clip(fftconvolve(left, right), 0.0, None))
            else:
                paired.append(np.convolve(left, right))
        if len(laws) % 2:
            paired.append(laws[-1])
        laws = paired
    return laws[0]


def _normal(strata: Sequence[tuple[int, int, int, int]]) -> float:
    """The p-value from the normal law with the statistic's exact null mean (0) and variance: a sum of
    at least ``NORMAL_FROM`` independent bounded terms, the large-sample form of the same test (as
    Mantel-Haenszel's chi-square is of its exact test)."""
    variance = observed = 0.0
    for a, b, c, x in strata:
        n = a + b
        spread = a * b * c * (n - c) / (n * n * (n - 1)) if n > 1 else 0.0  # the hypergeometric variance
        variance += (1 / a + 1 / b) ** 2 * spread
        observed += x / a - (c - x) / b
    if variance <= 0:
        return 1.0
    return min(1.0, 2.0 * (1.0 - NormalDist().cdf(abs(observed) / math.sqrt(variance))))


def _monte_carlo(strata: Sequence[tuple[int, int, int, int]], seed: int) -> float:
    """The p-value from seeded draws of every task's hypergeometric law, in floating point (the lattice
    of a design sent here may not fit 64-bit integers): values within 1e-9 per task of the observed
    count as reaching it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    total = np.zeros(_DRAWS)
    observed = 0.0
    for a, b, c, x_seen in strata:
        x = rng.hypergeometric(c, a + b - c, a, size=_DRAWS) if c else np.zeros(_DRAWS)
        total += x / a - (c - x) / b
        observed += x_seen / a - (c - x_seen) / b
    hits = int(np.count_nonzero(np.abs(total) >= abs(observed) - 1e-9 * len(strata)))
    return (1 + hits) / (1 + _DRAWS)
