"""Intervals for a plain rate (Wilson) and for a mean over tasks (task-clustered standard error)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["Estimate", "Rate", "mean_over_tasks", "wilson_interval"]


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, exclusive (got {confidence})")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def t_quantile(confidence: float, df: int) -> float:
    """Two-sided Student t critical value; NaN without degrees of freedom."""
    _z(confidence)
    if df < 1:
        return math.nan
    # scipy.special, not scipy.stats: the same Student t quantile (scipy.stats.t.ppf calls stdtrit), and
    # importing scipy.stats costs about half a second more. Imported here, on the first interval that needs
    # it: a session of one task never does, and scipy alone is a quarter of its start-up.
    from scipy.special import stdtrit  # type: ignore[import-untyped]  # scipy ships no type stubs

    return float(stdtrit(df, 0.5 + confidence / 2.0))


@dataclass(frozen=True, slots=True)
class Rate:
    """successes / trials with a Wilson score interval; every number is NaN when trials == 0."""

    successes: int
    trials: int
    rate: float
    low: float
    high: float
    confidence: float = 0.95


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Rate:
    """Wilson (1927) score interval for a binomial proportion.

    center = (p + z^2/2n) / (1 + z^2/n),  half = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).
    Unlike the Wald interval it stays inside [0, 1] and is not degenerate at 0/n or n/n.
    """
    _z(confidence)  # an impossible confidence is refused before anything else
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ValueError(f"need 0 <= successes <= trials (got {successes}/{trials})")
    if trials == 0:
        return Rate(0, 0, math.nan, math.nan, math.nan, confidence)
    p = successes / trials
    below, above = wilson_bounds(p, trials, confidence)
    # Exact at the boundaries; clamp rounding so the interval always contains the point estimate.
    low = 0.0 if successes == 0 else min(max(0.0, below), p)
    high = 1.0 if successes == trials else max(min(1.0, above), p)
    return Rate(successes, trials, p, low, high, confidence)


def wilson_bounds(rate: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score bounds at *rate* (any value in [0, 1], not only successes / n) for *n* trials,
    unclamped: ``wilson_interval``'s, and the continuity-corrected ones taken at a shifted rate."""
    z = _z(confidence)
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (rate + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    return center - half, center + half


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean over tasks: ``n`` tasks with a value, its standard error and a two-sided interval.

    ``se``, ``low`` and ``high`` are NaN below two tasks; everything is NaN with none.
    """

    mean: float
    se: float
    low: float
    high: float
    n: int
    confidence: float = 0.95


def mean_over_tasks(
    values: Iterable[float], confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> Estimate:
    """Mean of per-task values with the task-clustered standard error sd(values) / sqrt(n).

    NaN values (tasks with nothing scored) are dropped. The interval is mean +- t_{n-1} * se, clipped to
    *bounds* when given (a mean of rates cannot leave [0, 1]).
    """
    _z(confidence)  # a bad confidence is an error even when no interval is computed
    kept = [float(v) for v in values if math.isfinite(v)]
    n = len(kept)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, math.nan, 0, confidence)
    mean = math.fsum(kept) / n
    if n == 1:
        return Estimate(mean, math.nan, math.nan, math.nan, 1, confidence)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in kept) / (n - 1))
    se = sd / math.sqrt(n)
    half = t_quantile(confidence, n - 1) * se
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(mean, se, low, high, n, confidence)
