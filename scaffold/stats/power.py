"""How many tasks (or trials of one task) would detect a difference of a given size."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["DEFAULT_EFFECT", "SampleSize", "tasks_needed", "trials_needed"]

DEFAULT_EFFECT = 0.10  # ten percentage points of pass rate, or 0.10 of a [0, 1] weighted score


@dataclass(frozen=True, slots=True)
class SampleSize:
    """``needed`` units (None when it cannot be estimated, with the reason in ``note``)."""

    needed: int | None
    unit: str
    effect: float
    alpha: float
    power: float
    method: str
    note: str = ""


def _quantiles(alpha: float, power: float, effect: float) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie strictly between 0 and 1 (got {alpha}, {power})")
    if not effect > 0.0:
        raise ValueError(f"effect must be a positive difference (got {effect})")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0), NormalDist().inv_cdf(power)


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-9)  # 6.0000000001 from rounding is 6


def tasks_needed(sd: float, effect: float = DEFAULT_EFFECT, alpha: float = 0.05, power: float = 0.80) -> SampleSize:
    """Tasks for a paired comparison to detect a mean per-task difference of *effect*.

    Normal approximation: n = ((z_{1-alpha/2} + z_{power}) * sd / effect)^2, with *sd* the observed
    standard deviation of per-task differences (``PairedComparison.sd``). Never below the fewest tasks
    with which the exact sign-flip test can reach p <= alpha at all (2 / 2^n <= alpha: 6 at 0.05).
    """
    z_alpha, z_power = _quantiles(alpha, power, effect)
    method = "normal approximation, n = ((z_{1-alpha/2} + z_power) * sd / effect)^2"
    if not math.isfinite(sd) or sd < 0:
        return SampleSize(
            None, "tasks", effect, alpha, power, method, "the spread of paired differences needs 2+ paired tasks"
        )
    floor = max(2, _ceil(math.log2(2.0 / alpha)))
    normal = _ceil(((z_alpha + z_power) * sd / effect) ** 2)
    note = ""
    if normal < floor:
        note = f"raised to {floor}: with fewer tasks the exact sign-flip test cannot reach p <= {alpha}"
    return SampleSize(max(normal, floor), "tasks", effect, alpha, power, method, note)


def trials_needed(rate: float, effect: float = DEFAULT_EFFECT, alpha: float = 0.05, power: float = 0.80) -> SampleSize:
    """Trials per treatment for one task to detect a pass-rate change of *effect* from *rate*.

    Two independent proportions p1 = rate and p2 = rate + effect (rate - effect when that would pass 1),
    normal approximation without continuity correction (Fleiss):
    n = (z_{1-alpha/2} sqrt(2 pbar qbar) + z_power sqrt(p1 q1 + p2 q2))^2 / effect^2.
    """
    z_alpha, z_power = _quantiles(alpha, power, effect)
    method = "normal approximation for two proportions (Fleiss, no continuity correction)"
    if not math.isfinite(rate) or not 0.0 <= rate <= 1.0:
        return SampleSize(
            None, "trials per treatment", effect, alpha, power, method, "no observed pass rate (nothing scored)"
        )
    p1 = rate
    p2 = p1 + effect if p1 + effect <= 1.0 else p1 - effect
    if p2 < 0.0:
        impossible = f"a change of {effect} from a rate of {rate} leaves [0, 1]"
        return SampleSize(None, "trials per treatment", effect, alpha, power, method, impossible)
    pbar = (p1 + p2) / 2.0
    root = z_alpha * math.sqrt(2.0 * pbar * (1.0 - pbar)) + z_power * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return SampleSize(max(1, _ceil(root**2 / effect**2)), "trials per treatment", effect, alpha, power, method)
