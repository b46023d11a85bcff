"""Two treatments on the same tasks: paired per-task differences, a sign-flip permutation test, flips."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from scaffold.stats.outcomes import TaskSummary
from scaffold.stats.rates import t_quantile

__all__ = [
    "DEFAULT_SEED",
    "EXACT_MAX_TASKS",
    "MONTE_CARLO_DRAWS",
    "Insufficient",
    "Metric",
    "PairedComparison",
    "compare_treatments",
    "sign_flip_p_value",
]

Metric = Literal["pass_rate", "mean_score"]
EXACT_MAX_TASKS = 16  # 2^16 = 65,536 sign patterns: exact enumeration still takes milliseconds
MONTE_CARLO_DRAWS = 20_000
DEFAULT_SEED = 20240912
_CHUNK = 4096  # rows of signs per matrix product, bounding memory for many tasks
_UNCHANGED = 1e-12  # |difference| at or below this counts as unchanged (floating-point noise)


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
    d = np.asarray([x for x in differences if math.isfinite(x)], dtype=float)
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(math.fsum(d.tolist()))
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))  # ties must count as "at least as extreme"
    if n <= exact_max:
        bits = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
        sums = (2 * bits - 1) @ d
        return int(np.count_nonzero(np.abs(sums) >= observed - tol)) / (1 << n)
    rng = np.random.default_rng(seed)
    hits, left = 0, draws
    while left > 0:
        rows = min(left, _CHUNK)
        signs = 2 * rng.integers(0, 2, size=(rows, n), dtype=np.int8).astype(float) - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
        left -= rows
    return (1 + hits) / (1 + draws)


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """*treatment* minus *baseline* on the tasks scored under both, one difference per task.

    ``low``/``high``: t-interval on the differences; ``p_value``: sign-flip permutation test
    (``exact`` says whether all patterns were enumerated); ``sd``: of the differences (feed it to
    ``tasks_needed``). ``unpaired`` names tasks left out because one side had nothing scored.
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

    @property
    def n(self) -> int:
        return len(self.tasks)


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
    for s in summaries:
        if s.treatment in sides:
            sides[s.treatment][s.task] = s.pass_rate if metric == "pass_rate" else s.mean_score
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
    half = t_quantile(confidence, n - 1) * se
    low, high = mean - half, mean + half
    if metric == "pass_rate":
        low, high = max(low, -1.0), min(high, 1.0)
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
    )
