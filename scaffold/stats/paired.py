"""Two treatments on the same tasks: paired per-task differences, a sign-flip permutation test, flips."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

from scaffold.stats.outcomes import TaskSummary
from scaffold.stats.rates import t_quantile, wilson_interval

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy are imported by the functions that compute with them: a session whose report compares
# nothing (one treatment) never needs them, and they are a quarter of its start-up.

__all__ = [
    "DEFAULT_SEED",
    "EXACT_MAX_TASKS",
    "MONTE_CARLO_DRAWS",
    "Insufficient",
    "Metric",
    "PairedComparison",
    "binomial_floor",
    "compare_treatments",
    "sign_flip_p_value",
]

Metric = Literal["pass_rate", "mean_score"]
EXACT_MAX_TASKS = 16  # 2^16 = 65,536 sign patterns: exact enumeration still takes milliseconds
MONTE_CARLO_DRAWS = 20_000
DEFAULT_SEED = 20240912
_CHUNK = 4096  # rows of signs per matrix product, bounding memory for many tasks
_UNCHANGED = 1e-12  # |difference| at or below this counts as unchanged (floating-point noise)
_FLOOR_TAIL = 0.05  # the binomial floor of an observed spread: its 5% quantile under binomial noise alone


@dataclass(frozen=True, slots=True)
class Insufficient:
    """Not enough data for the asked quantity: why, how many units there were and how many are needed."""

    reason: str
    n: int
    needed: int


def sign_flip_p_value(
    differences: Sequence[float],
    *,
    exact_max: int = EXACT_MAX_TASKS,
    draws: int = MONTE_CARLO_DRAWS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided p-value of the paired sign-flip (randomization) test of "no treatment effect".

    Under the null each task's difference is as likely to have either sign, so the statistic |sum d_i| is
    compared with |sum s_i d_i| over sign patterns s: all 2^n patterns when n <= *exact_max* (exact p,
    at least 2/2^n), else *draws* random patterns from a generator seeded with *seed* and
    p = (1 + hits) / (1 + draws), never 0. Non-finite differences are ignored. Swapping the treatments
    negates every difference and leaves the p-value unchanged.
    """
    import numpy as np

    d = np.asarray([x for x in differences if math.isfinite(x)], dtype=float)
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(math.fsum(d.tolist()))
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))  # ties must count as "at least as extreme"
    if n <= exact_max:
        sums = _all_signs(n) @ d
        return int(np.count_nonzero(np.abs(sums) >= observed - tol)) / (1 << n)
    if n * draws <= _CACHED_SIGNS:
        hits = int(np.count_nonzero(np.abs(_drawn_signs(n, draws, seed) @ d) >= observed - tol))
        return (1 + hits) / (1 + draws)
    hits = 0
    for signs in _sign_chunks(n, draws, seed):
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
    return (1 + hits) / (1 + draws)


# Every comparison with the same number of tasks uses the same sign patterns (the seed is fixed), so
# they are made once per process: a report compares each treatment up to five times (analysis, score,
# strict set, two bounds), and the calibration benchmark runs the comparison tens of thousands of times.
# Drawn in the same chunks from the same generator as without the cache: identical p-values.
_CACHED_SIGNS = 8_000_000  # n x draws up to this (64 MB of float64 per matrix) are kept


@functools.lru_cache(maxsize=4)
def _all_signs(n: int) -> np.ndarray:
    import numpy as np

    bits = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
    signs = (2 * bits - 1).astype(float)
    signs.flags.writeable = False
    return signs


@functools.lru_cache(maxsize=2)
def _drawn_signs(n: int, draws: int, seed: int) -> np.ndarray:
    import numpy as np

    signs = np.concatenate(list(_sign_chunks(n, draws, seed)))
    signs.flags.writeable = False
    return signs


def _sign_chunks(n: int, draws: int, seed: int) -> Iterator[np.ndarray]:
    import numpy as np

    rng = np.random.default_rng(seed)
    left = draws
    while left > 0:
        rows = min(left, _CHUNK)
        yield 2 * rng.integers(0, 2, size=(rows, n), dtype=np.int8).astype(float) - 1
        left -= rows


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """*treatment* minus *baseline* on the tasks scored under both, one difference per task.

    ``low``/``high``: t-interval on the differences, mean +- t_{n-1} * ``se`` within [-1, 1]; ``p_value``: sign-flip
    permutation test (``exact`` says whether all patterns were enumerated); ``sd``: of the differences
    (feed it to ``tasks_needed``). For pass rates ``se`` is never below ``se_floor``, the standard error
    the per-task binomial uncertainty alone gives (``binomial_floor``; scaled to its 5% chi-square
    quantile when the differences vary), so that an experiment without any observed spread (every
    difference 0, or every one +1) does not get a point interval.
    ``unpaired`` names tasks left out because one side had nothing scored.
    """

    metric: Metric
    baseline: str
    treatment: str
    tasks: tuple[str, ...]
    differences: tuple[float, ...]
    mean_difference: float
    sd: float
    se: float
    low: float
    high: float
    p_value: float
    exact: bool
    improved: int
    regressed: int
    unchanged: int
    unpaired: tuple[str, ...] = ()
    confidence: float = 0.95
    se_floor: float = math.nan
    """The floor ``se`` was held to: the per-task binomial standard error of the mean difference, scaled
    when the differences vary (pass rates only; NaN for scores)."""

    @property
    def n(self) -> int:
        return len(self.tasks)

    @property
    def floored(self) -> bool:
        """True when the binomial floor, not the observed spread, set the interval's width."""
        return math.isfinite(self.se_floor) and not self.sd / math.sqrt(self.n) >= self.se_floor


def binomial_floor(pairs: Sequence[tuple[TaskSummary, TaskSummary]], confidence: float = 0.95) -> float:
    """Standard error of the mean per-task pass-rate difference from the trials' binomial noise alone.

    Each side of each task contributes the standard error its own trials give its pass rate, read off
    its Wilson interval as (high - low) / (2 z): unlike p(1-p)/n it is not zero at 0/n or n/n (10 of 10
    passed still leaves the true rate anywhere above about 0.72), and it is a little below p(1-p)/n in
    between, so it rarely binds when the tasks do show spread. The mean of T independent differences
    then has SE = sqrt(sum of the 2T variances) / T.

    Why a floor at all: the t interval's width comes from the spread of the observed differences, and
    with few trials per task that spread is often exactly zero (all passing under both, or 5 tasks x 1
    trial all unchanged), which gives a point interval, "certainty" from no information; in the
    calibration study this alone cut coverage to 0.89 at 5 tasks x 1 trial. Why Wilson-based rather
    than a Laplace (c+1)/(n+2) variance: the Laplace form overstates the noise of 1-trial tasks (2/9
    against an average of 1/6 for rates spread over [0, 1]), so it bound almost always and pushed the
    coverage well above 95%, costing power for nothing.

    ``compare_treatments`` uses all of it only when every difference is the same; when the tasks do
    differ it scales it to the 5% quantile of the spread binomial noise alone would give (chi-square
    with n - 1 degrees of freedom): the floor then catches only a spread too small to be believed.
    """
    total = math.fsum(_wilson_variance(side.passed, side.scored, confidence) for pair in pairs for side in pair)
    return math.sqrt(total) / len(pairs) if pairs else math.nan


@functools.lru_cache(maxsize=4096)
def _wilson_variance(passed: int, scored: int, confidence: float) -> float:
    # Cached: counts are small integers that repeat across tasks, treatments and comparisons.
    w = wilson_interval(passed, scored, confidence)
    return ((w.high - w.low) / (2.0 * NormalDist().inv_cdf(0.5 + confidence / 2.0))) ** 2


def compare_treatments(
    summaries: Iterable[TaskSummary],
    baseline: str,
    treatment: str,
    metric: Metric = "pass_rate",
    *,
    min_tasks: int = 3,
    confidence: float = 0.95,
    exact_max: int = EXACT_MAX_TASKS,
    draws: int = MONTE_CARLO_DRAWS,
    seed: int = DEFAULT_SEED,
) -> PairedComparison | Insufficient:
    """Paired comparison of per-task *metric* ("pass_rate" or "mean_score"); the task is the unit.

    Fewer than *min_tasks* tasks scored under both treatments gives ``Insufficient``, not a number.
    """
    if min_tasks < 1:
        raise ValueError(f"min_tasks must be at least 1 (got {min_tasks})")
    if metric not in ("pass_rate", "mean_score"):
        raise ValueError(f"metric must be 'pass_rate' or 'mean_score' (got {metric!r})")
    sides: dict[str, dict[str, float]] = {baseline: {}, treatment: {}}
    rows: dict[str, dict[str, TaskSummary]] = {baseline: {}, treatment: {}}
    for s in summaries:
        if s.treatment in sides:
            sides[s.treatment][s.task] = s.pass_rate if metric == "pass_rate" else s.mean_score
            rows[s.treatment][s.task] = s
    before, after = sides[baseline], sides[treatment]
    names = sorted(set(before) | set(after))
    paired = [t for t in names if math.isfinite(before.get(t, math.nan)) and math.isfinite(after.get(t, math.nan))]
    unpaired = tuple(t for t in names if t not in paired)
    if len(paired) < min_tasks:
        left_out = f"; left out (not scored under both): {', '.join(unpaired)}" if unpaired else ""
        return Insufficient(
            f"insufficient data: {len(paired)} task(s) have a {metric} under both {baseline!r} and "
            f"{treatment!r}, and a paired comparison needs at least {min_tasks}{left_out}",
            len(paired),
            min_tasks,
        )
    diffs = [after[t] - before[t] for t in paired]
    n = len(diffs)
    mean = math.fsum(diffs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in diffs) / (n - 1)) if n > 1 else math.nan
    se = sd / math.sqrt(n)
    floor = math.nan
    if metric == "pass_rate":
        # Pass rates only: a weighted score has no binomial model to take a floor from.
        floor = binomial_floor([(rows[baseline][t], rows[treatment][t]) for t in paired], confidence)
        if math.isfinite(sd) and sd > _UNCHANGED:
            # Some spread was observed: it estimates the noise, and the floor only stops it from being
            # implausibly small, at the lowest spread binomial noise alone gives in 95% of experiments:
            # s^2 ~ floor_var * chi2_{n-1} / (n-1), so its 5% quantile (chdtri: the upper-tail inverse).
            # The full floor here made the interval too wide (coverage 97% at 10 tasks x 10 trials);
            # with every difference the same there is no spread to trust, and the floor is all there is.
            from scipy.special import chdtri  # type: ignore[import-untyped]  # scipy ships no type stubs

            floor *= math.sqrt(float(chdtri(n - 1, 1.0 - _FLOOR_TAIL)) / (n - 1))
        se = max(se, floor) if math.isfinite(se) else se
    half = t_quantile(confidence, n - 1) * se
    # A difference of two values in [0, 1] (pass rates, scores) lies in [-1, 1]: clipped there, the
    # interval loses only impossible differences, never one it covered that could be true.
    low, high = max(mean - half, -1.0), min(mean + half, 1.0)
    return PairedComparison(
        metric=metric,
        baseline=baseline,
        treatment=treatment,
        tasks=tuple(paired),
        differences=tuple(diffs),
        mean_difference=mean,
        sd=sd,
        se=se,
        low=low,
        high=high,
        p_value=sign_flip_p_value(diffs, exact_max=exact_max, draws=draws, seed=seed),
        exact=n <= exact_max,
        improved=sum(x > _UNCHANGED for x in diffs),
        regressed=sum(x < -_UNCHANGED for x in diffs),
        unchanged=sum(abs(x) <= _UNCHANGED for x in diffs),
        unpaired=unpaired,
        confidence=confidence,
        se_floor=floor,
    )
