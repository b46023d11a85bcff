"""Run until decided: tests that stay valid however often the trials are looked at.

A fixed-design test read after every round of trials and stopped at the first p <= alpha is wrong far
more often than alpha (an outside simulation: 13-17% instead of 5%). The tests here are e-processes
(Ramdas, Grünwald, Vovk & Shafer 2023, "Game-theoretic statistics and safe anytime-valid inference"):
nonnegative processes whose expectation stays at most 1 under the null at every stopping time, so by
Ville's inequality the chance that one *ever* reaches 1/alpha is at most alpha, whenever one looks.

The data: trials run in **rounds**, round r holding trial r of every task under both treatments. Task
k's pair in round r is (treatment's outcome, baseline's outcome); a pair is **discordant** when they
differ, "+" when the treatment passed alone and "-" when the baseline did. With Δ the mean over the
tasks of the pass-rate difference (the on-these-tasks estimand of scaffold.stats.stratified), each
task's P(+) - P(-) is its difference Δ_k, and their mean is Δ.

Improvement: for a sign probability θ > 1/2, one round multiplies the process by the product over its
pairs of 2θ for a "+", 2(1-θ) for a "-" and 1 for a concordant pair. A task's factor has expectation
1 + (2θ-1)Δ_k; the tasks of a round are independent, so the round's expectation is the product of
these, which is at most (1 + (2θ-1)Δ)^K by the inequality of arithmetic and geometric means: at most 1
whenever Δ <= 0, however the tasks' effects differ. So it is an e-process for "Δ <= 0", not only for
"no task changes" (the sharp null of the fixed test). The argument needs only that θ >= 1/2 is fixed
before the round, so θ may also be learnt from the earlier rounds (a predictable plug-in), and a
mixture of such processes is one too. The one used weighs three (``_PLANNED``, ``_LARGE``,
``_LEARNT``): θ = 1/2 + 1.4 times the planned effect (weight 0.65); θ = 0.95 (weight 0.1); and the
sign share of the discordant pairs of the rounds so far (weight 0.25; one prior pair at 0.75, kept
within [1/2, 0.95]). Why 1.4: at mid pass rates an effect δ makes θ = 1/2 + δ, but the discordant pairs
come more often from tasks near 0 or 1, where θ is farther from 1/2; over pass rates spread evenly the
discordant pairs' θ is 1/2 + 1.35δ. The other two carry effects far from the plan: the learnt one
anything in between, the fixed 0.95 the few-task, large-effect runs ``comet eval`` makes (a skill that
always passes 2 tasks against a baseline that passes half the time decides at round 7, after 8 "+"
pairs; the learnt component alone, which spends its first rounds learning, would need round 9).
Measured (66 tasks against the 5-trial fixed design at equal power, 83.5%; 6,000 simulated runs
each): 0.98 of the fixed design's trials at the planned effect and 0.38 at twice it. The earlier mixture
of four fixed values (1/2 + 0.5, 1 and 2 times the effect, and 0.95) spent 1.09 and 0.44; the planned
and learnt components alone 0.96 and 0.375, but round 9 in the case above.

Regression: the mirror image. Each side is held to alpha/2, so a directional claim is wrong with
probability at most alpha/2 whatever the truth, and the two together at most alpha under Δ = 0.

Equivalence within a margin m is claimed when the confidence sequence below lies inside (-m, m): it
covers Δ at every round with probability 1 - alpha, so the claim is wrong with probability at most alpha
whenever |Δ| >= m. (An e-process on the signs alone cannot show equivalence when the two sides always
agree; the confidence sequence learns from the concordant pairs too.)

Rounds must be whole: an e-process is updated once a round's every pair is in. A pair with an unscored
trial counts as concordant (factor 1); then the argument above holds under the sharp null ("the skill
changes no task's pass rate") rather than for every Δ <= 0.

The interval shown beside is an anytime-valid confidence sequence for Δ itself: the hedged betting
confidence sequence of Waudby-Smith & Ramdas (2024, "Estimating means of bounded random variables by
betting", JRSS B; the hedged capital process with the predictable plug-in bets of their section 5.1),
on a grid of candidate values of Δ, each pair's difference (1, 0 or -1) a bet. The same argument
carries it over from identically distributed data to tasks that differ: a round's bets are fixed before
it, its pairs are independent, and the product of their factors 1 + λ(d - m) has expectation
prod(1 + λ(Δ_k - m)) <= (1 + λ(Δ - m))^K = 1 at m = Δ. It covers Δ at every round at once with
probability at least 1 - alpha. An improvement or regression is the e-processes' decision (tuned to the
planned effect, they are the more powerful); near the boundary the two can disagree, and the reports
show both.

Pure: counts in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "Decision",
    "Round",
    "SequentialResult",
    "confidence_sequence",
    "decide_sequence",
    "spent_alpha",
    "track",
]

Decision = Literal["improvement", "regression", "equivalence", ""]

_PLANNED: Final = (1.4, 0.65)
"""The planned component: its shift of the sign probability above 1/2 as a multiple of the planned
effect, and its weight in the mixture (the module docstring says why 1.4)."""
_LARGE: Final = (0.45, 0.1)
"""A fixed sign probability of 0.95 (a "+" nineteen times as likely as a "-") and its weight."""
_LEARNT: Final = (1.0, 0.75, 0.95, 0.25)
"""The learnt component: its prior (pairs, sign share), its largest sign share, and its weight."""
_GRID: Final = 401  # candidate means of the confidence sequence, every 0.5 point of [-1, 1]
_MAX_BET: Final = 0.5  # the largest fraction of its capital a bet may stake (Waudby-Smith & Ramdas: c = 1/2)


@dataclass(frozen=True, slots=True)
class Round:
    """One whole round: per task, (treatment passed, baseline passed), None for an unscored trial."""

    pairs: tuple[tuple[bool | None, bool | None], ...]

    @property
    def plus(self) -> int:
        return sum(1 for t, b in self.pairs if t is True and b is False)

    @property
    def minus(self) -> int:
        return sum(1 for t, b in self.pairs if t is False and b is True)

    def differences(self) -> list[int]:
        """Treatment minus baseline, 1, 0 or -1, of each pair with both trials scored."""
        return [int(t) - int(b) for t, b in self.pairs if t is not None and b is not None]


@dataclass(frozen=True, slots=True)
class SequentialResult:
    """Where the e-processes stand after ``rounds`` whole rounds, and what they decided."""

    rounds: int
    plus: int
    minus: int
    improvement_e: float
    regression_e: float
    low: float
    high: float
    """The anytime-valid confidence sequence for Δ at this round."""
    decision: Decision
    decided_at: int | None
    """The first round at which the decision was reached (None while undecided)."""
    alpha: float
    effect: float
    margin: float


def _log_up(plus: int, minus: int, shift: float) -> float:
    """log of the improvement process at sign probability 1/2 + shift."""
    theta = 0.5 + shift
    return plus * math.log(2 * theta) + minus * math.log(2 * (1 - theta))


class _Wealth:
    """One direction's e-process, round by round: the mixture of the planned and the learnt components.
    *plus* counts the pairs that favour the direction, *minus* those against it."""

    def __init__(self, effect: float) -> None:
        self.shift = min(effect * _PLANNED[0], _LEARNT[2] - 0.5)
        self.plus = self.minus = 0
        self.learnt = 0.0  # log of the learnt component's capital

    def add(self, plus: int, minus: int) -> float:
        prior, share, top, _ = _LEARNT
        # The sign share of the rounds before this one only: a bet fixed before the round it is paid on.
        theta = min(max((self.plus + prior * share) / (self.plus + self.minus + prior), 0.5), top)
        self.learnt += _log_up(plus, minus, theta - 0.5)
        self.plus, self.minus = self.plus + plus, self.minus + minus
        logs = (
            math.log(_PLANNED[1]) + _log_up(self.plus, self.minus, self.shift),
            math.log(_LARGE[1]) + _log_up(self.plus, self.minus, _LARGE[0]),
            math.log(_LEARNT[3]) + self.learnt,
        )
        high = max(logs)
        return math.exp(high) * math.fsum(math.exp(v - high) for v in logs) if high > -700 else 0.0


def track(
    rounds: Sequence[Round], *, alpha: float = 0.05, effect: float = 0.10, margin: float = 0.10
) -> list[SequentialResult]:
    """Where the tests stand after each of *rounds* (the module docstring): improvement or regression
    when its e-process reaches 2/alpha, equivalence when the confidence sequence lies within *margin*;
    a decision, once reached, is kept by every later entry."""
    out = []
    plus = minus = 0
    decision: Decision = ""
    decided_at = None
    interval = _Interval(alpha)
    rising, falling = _Wealth(effect), _Wealth(effect)
    for i, r in enumerate(rounds, start=1):
        plus, minus = plus + r.plus, minus + r.minus
        up, down = rising.add(r.plus, r.minus), falling.add(r.minus, r.plus)
        low, high = interval.add(r.differences())
        if not decision:
            if up >= 2 / alpha:
                decision = "improvement"
            elif down >= 2 / alpha:
                decision = "regression"
            elif margin > 0 and -margin < low and high < margin:
                decision = "equivalence"
            decided_at = i if decision else None
        out.append(SequentialResult(i, plus, minus, up, down, low, high, decision, decided_at, alpha, effect, margin))
    return out


def decide_sequence(
    rounds: Sequence[Round], *, alpha: float = 0.05, effect: float = 0.10, margin: float = 0.10
) -> SequentialResult:
    """The tests over *rounds* in order, stopped at the first round that decides (see :func:`track`)."""
    found = track(rounds, alpha=alpha, effect=effect, margin=margin)
    for result in found:
        if result.decision:
            return result
    if found:
        return found[-1]
    return SequentialResult(0, 0, 0, 1.0, 1.0, -1.0, 1.0, "", None, alpha, effect, margin)


def confidence_sequence(rounds: Sequence[Sequence[int]], alpha: float = 0.05) -> tuple[float, float]:
    """The hedged betting confidence sequence for Δ after all *rounds*, each the differences (1, 0 or -1)
    of its scored pairs, treatment minus baseline (the module docstring)."""
    interval = _Interval(alpha)
    found = (-1.0, 1.0)
    for pairs in rounds:
        found = interval.add(pairs)
    return found


class _Interval:
    """The confidence sequence, one round at a time: for every candidate Δ on a grid, the log capital of
    betting that the truth is above it and below it; a candidate is refuted for good once the hedged
    capital (the mean of the two) reaches 1/alpha. What is left, at every round, is the interval."""

    def __init__(self, alpha: float) -> None:
        import numpy as np

        self.alpha = alpha
        self.grid = np.linspace(-1.0, 1.0, _GRID)
        self.m = (self.grid + 1) / 2  # on the [0, 1] scale of (d + 1) / 2
        self.up = np.zeros(_GRID)
        self.down = np.zeros(_GRID)
        self.alive = np.ones(_GRID, dtype=bool)
        self.seen, self.total, self.squares = 0, 0.0, 0.0

    def add(self, pairs: Sequence[int]) -> tuple[float, float]:
        import numpy as np

        if pairs:
            # The predictable plug-in bet of Waudby-Smith & Ramdas (their section 5.1), from the pairs of
            # earlier rounds only (a prior of one pair at variance 1/4 to start): fixed for the round.
            t = self.seen + 1
            centre, spread = (0.5 + self.total) / t, (0.25 + self.squares) / t
            bet = math.sqrt(2 * math.log(2 / self.alpha) / (spread * t * math.log(t + 1)))
            lam_up = np.minimum(bet, _MAX_BET / self.m.clip(1e-9))
            lam_down = np.minimum(bet, _MAX_BET / (1 - self.m).clip(1e-9))
            for d in (-1, 0, 1):
                n = sum(1 for x in pairs if x == d)
                if n:
                    y = (d + 1) / 2
                    self.up += n * np.log1p(lam_up * (y - self.m))
                    self.down += n * np.log1p(-lam_down * (y - self.m))
                    self.total += n * y
                    self.squares += n * (y - centre) ** 2
                    self.seen += n
            self.alive &= np.logaddexp(self.up, self.down) - math.log(2) < math.log(1 / self.alpha)
        if not self.alive.any():  # every candidate refuted: the truth lies between two grid points
            mean = self.total / self.seen * 2 - 1
            return mean, mean
        kept = self.grid[self.alive]
        return float(kept.min()), float(kept.max())


def spent_alpha(alpha: float, look: int) -> float:
    """The level of look *look* (1, 2, ...) when a fixed-design test is read after every round: alpha
    spent as 6 alpha / (pi^2 look^2), which sums to alpha over any number of looks (a union bound), so
    the across-tasks comparison stays valid under the same monitoring."""
    return 6 * alpha / (math.pi**2 * look * look)
