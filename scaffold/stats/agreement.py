"""Agreement of a scoring rater with a pass/fail truth: the LLM judge against the validators' verdict.

``calibrate(scores, truth)`` reads each score at or above a threshold (0.5) as "the rater says passed"
and reports, with the 2x2 counts:

- agreement: the share of trials where the rater and the truth say the same;
- Cohen's kappa: agreement corrected for the agreement two raters with these pass shares would reach by
  chance, (p_o - p_e) / (1 - p_e), in [-1, 1]; 1 is perfect agreement, 0 no better than chance;
- the point-biserial correlation: Pearson's r between the raw scores and the 0/1 truth (it uses the
  scores themselves, not the threshold, so a judge that ranks trials well but sits on the wrong side of
  0.5 shows it).

Below ``min_n`` trials, or when the truth has one class only (every trial passed, or every one failed:
kappa and r cannot tell agreement from chance there), the answer is "insufficient" with the reason and
no figure is to be read. Pure: plain numbers in, a frozen value out; no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["CALIBRATION_MIN_N", "CALIBRATION_THRESHOLD", "Calibration", "calibrate", "cohen_kappa", "pearson"]

CALIBRATION_THRESHOLD: Final = 0.5
"""A score at or above it counts as "passed" (the share the original's judge reports as its pass rate)."""
CALIBRATION_MIN_N: Final = 10
"""Fewer trials than this give kappa and r so wide (about +-0.6 at n = 10) that no figure is shown."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """A rater's scores against a pass/fail truth over ``n`` trials (see the module docstring)."""

    n: int
    threshold: float
    both_passed: int
    """Score >= threshold and the truth passed."""
    rater_only: int
    """Score >= threshold, but the truth failed (the rater is too lenient)."""
    truth_only: int
    """Score below threshold, but the truth passed (the rater is too strict)."""
    both_failed: int
    agreement: float
    """Share of trials where both say the same; NaN without trials."""
    kappa: float
    """Cohen's kappa; NaN when chance agreement is 1 (both sides one and the same class)."""
    correlation: float
    """Point-biserial r of the scores with the truth; NaN when either has no spread."""
    insufficient: str | None
    """Why the figures are not to be read (too few trials, one class only); None when they are."""


def cohen_kappa(rater: Sequence[bool], truth: Sequence[bool]) -> float:
    """Cohen's kappa of two binary ratings of the same items; NaN without items or when chance agreement
    is 1 (both rate every item the same one class, so there is nothing to correct for).

    Computed from counts, (n * agreements - E) / (n^2 - E) with E = n * n * p_e, so that identical
    ratings give exactly 1.0 and no rounding creeps in before the one division.
    """
    if len(rater) != len(truth):
        raise ValueError(f"cohen_kappa: {len(rater)} ratings against {len(truth)} truths")
    n = len(rater)
    agreements = sum(a == b for a, b in zip(rater, truth, strict=True))
    rater_yes, truth_yes = sum(rater), sum(truth)
    chance = rater_yes * truth_yes + (n - rater_yes) * (n - truth_yes)
    denominator = n * n - chance
    return (n * agreements - chance) / denominator if denominator else math.nan


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r of paired values, in [-1, 1]; NaN below two pairs or when either side has no spread.
    With a 0/1 side it is the point-biserial correlation."""
    if len(x) != len(y):
        raise ValueError(f"pearson: {len(x)} values against {len(y)}")
    n = len(x)
    if n < 2:
        return math.nan
    mean_x, mean_y = math.fsum(x) / n, math.fsum(y) / n
    dx = [v - mean_x for v in x]
    dy = [v - mean_y for v in y]
    sxx = math.fsum(d * d for d in dx)
    syy = math.fsum(d * d for d in dy)
    if sxx <= 0.0 or syy <= 0.0:
        return math.nan
    r = math.fsum(a * b for a, b in zip(dx, dy, strict=True)) / math.sqrt(sxx * syy)
    return min(1.0, max(-1.0, r))  # rounding can leave |r| a hair above 1


def calibrate(
    scores: Sequence[float],
    truth: Sequence[bool],
    *,
    threshold: float = CALIBRATION_THRESHOLD,
    min_n: int = CALIBRATION_MIN_N,
) -> Calibration:
    """*scores* (in [0, 1]) against *truth*, item by item; non-finite scores are left out."""
    if len(scores) != len(truth):
        raise ValueError(f"calibrate: {len(scores)} scores against {len(truth)} truths")
    pairs = [(s, t) for s, t in zip(scores, truth, strict=True) if math.isfinite(s)]
    kept = [s for s, _ in pairs]
    said = [s >= threshold for s in kept]
    real = [t for _, t in pairs]
    n = len(pairs)
    both = sum(a and b for a, b in zip(said, real, strict=True))
    rater_only = sum(a and not b for a, b in zip(said, real, strict=True))
    truth_only = sum(b and not a for a, b in zip(said, real, strict=True))
    insufficient = None
    if n < min_n:
        insufficient = f"{n} trial(s) with both a judge score and a validator verdict, {min_n} needed"
    elif all(real) or not any(real):
        which = "passed" if all(real) else "failed"
        insufficient = f"the validators {which} all {n} trials, so agreement cannot be told from chance"
    return Calibration(
        n=n,
        threshold=threshold,
        both_passed=both,
        rater_only=rater_only,
        truth_only=truth_only,
        both_failed=n - both - rater_only - truth_only,
        agreement=sum(a == b for a, b in zip(said, real, strict=True)) / n if n else math.nan,
        kappa=cohen_kappa(said, real),
        correlation=pearson(kept, [1.0 if t else 0.0 for t in real]),
        insufficient=insufficient,
    )
