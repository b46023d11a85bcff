"""pass@k and pass^k of one task from its counts, and the choice of k for a comparison."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["DEFAULT_MAX_K", "KPlan", "k_ladder", "pass_at_k", "pass_hat_k", "pass_hat_k_observed", "plan_ks"]

DEFAULT_MAX_K = 10


def _check(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    if n < 0 or not 0 <= c <= max(n, 0):
        raise ValueError(f"need 0 <= c <= n for c passed out of n scored trials (got n={n}, c={c})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn without replacement from n passes.

    HumanEval's unbiased estimator 1 - C(n-c, k)/C(n, k), computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i)
    (no large binomials); 1.0 when n - c < k. NaN when n < k (k trials were never observed).
    """
    _check(n, c, k)
    if n < k:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k trials drawn without replacement from n pass: C(c, k)/C(n, k) (tau-bench).

    Computed as prod_{i=0}^{k-1} (c-i)/(n-i); NaN when n < k.
    """
    _check(n, c, k)
    if n < k:
        return math.nan
    if c < k:
        return 0.0
    return math.prod((c - i) / (n - i) for i in range(k))


def pass_hat_k_observed(n: int, c: int, k: int) -> float:
    """The original Comet eval's observed pass^k: 1.0 when every scored trial passed, else 0.0; NaN when n < k."""
    _check(n, c, k)
    if n < k:
        return math.nan
    return 1.0 if c == n else 0.0


def k_ladder(limit: int) -> tuple[int, ...]:
    """1, 2, 5, 10, 20, 50, 100, ... up to and including *limit*."""
    ks: list[int] = []
    decade = 1
    while True:
        for step in (1, 2, 5):
            k = step * decade
            if k > limit:
                return tuple(ks)
            ks.append(k)
        decade *= 10


class _Counted(Protocol):
    @property
    def task(self) -> str: ...
    @property
    def treatment(self) -> str: ...
    @property
    def scored(self) -> int: ...


@dataclass(frozen=True, slots=True)
class KPlan:
    """The ks to report. ``clamped_from`` is the requested maximum when too few trials dropped some k."""

    ks: tuple[int, ...]
    clamped_from: int | None
    reason: str
    min_trials: int | None = None


def plan_ks(summaries: Iterable[_Counted], max_k: int = DEFAULT_MAX_K) -> KPlan:
    """ks from the 1-2-5 ladder up to *max_k*, but never above the fewest scored trials of any task compared.

    Tasks with no scored trial have no pass@k at all; they are left out of the minimum (and named).
    """
    if max_k < 1:
        raise ValueError(f"max_k must be at least 1 (got {max_k})")
    rows = sorted(summaries, key=lambda s: (s.scored, s.treatment, s.task))
    empty = [s for s in rows if s.scored == 0]
    counted = [s for s in rows if s.scored > 0]
    note = ""
    if empty:
        names = ", ".join(f"{s.task!r} ({s.treatment})" for s in empty)
        note = f"; left out {len(empty)} task(s) without a scored trial: {names}"
    if not counted:
        return KPlan((), max_k, "no task has a scored trial, so no pass@k can be estimated" + note)
    fewest = counted[0]
    limit = fewest.scored
    if k_ladder(limit) == k_ladder(max_k):  # also when the fewest trials fall between two rungs above max_k
        return KPlan(k_ladder(max_k), None, f"every task has enough scored trials for k up to {max_k}{note}", limit)
    ks = k_ladder(limit)
    # Name the ks shown, not the limit: with 3 trials the ladder 1, 2, 5 stops at 2, and "at most 3"
    # beside pass@1 and pass@2 columns reads as a missing column.
    reason = (
        f"k limited to {', '.join(map(str, ks))} (asked up to {max_k}; k runs 1, 2, 5, 10, ...): "
        f"task {fewest.task!r} under {fewest.treatment!r} has only {limit} scored trial(s), and pass@k / pass^k "
        f"need at least k trials per task; run more trials (--count) to report larger k{note}"
    )
    return KPlan(ks, max_k, reason, limit)
