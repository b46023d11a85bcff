"""How many tasks (or trials of one task) would detect a difference of a given size."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["DEFAULT_EFFECT", "SampleSize", "t_test_power", "tasks_needed", "trials_needed"]

DEFAULT_EFFECT = 0.10  # ten percentage points of pass rate, or 0.10 of a [0, 1] weighted score
_NO_SPREAD = 1e-12  # an sd at or below this is floating-point noise around "every difference equal"


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


def t_test_power(n: int, sd: float, effect: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t test at level *alpha* over *n* tasks to show a mean difference
    *effect* in its direction, when per-task differences have standard deviation *sd*.

    Exact for normal differences: 1 - F(t_{1-alpha/2, n-1}; n-1, effect sqrt(n) / sd) with F the
    noncentral t distribution (only the tail of the right sign: a "significant" wrong sign is no
    detection). NaN below two tasks or without a positive finite *sd*.
    """
    if n < 2 or not math.isfinite(sd) or sd <= 0.0:
        return math.nan
    # scipy.special, not scipy.stats, and only here: see scaffold.stats.rates (start-up time).
    from scipy.special import nctdtr, stdtrit  # type: ignore[import-untyped]  # scipy ships no type stubs

    df = n - 1
    critical = float(stdtrit(df, 1.0 - alpha / 2.0))
    shift = effect * math.sqrt(n) / sd
    miss = float(nctdtr(df, shift, critical))
    if math.isnan(miss):
        # scipy's noncentral t can give NaN for a large noncentrality (seen at 39, power 1 - 1e-200), where the
        # normal approximation is exact to many digits.
        miss = NormalDist().cdf(critical - shift)
    return 1.0 - miss


def tasks_needed(
    sd: float,
    effect: float = DEFAULT_EFFECT,
    alpha: float = 0.05,
    power: float = 0.80,
    *,
    trials: float | None = None,
) -> SampleSize:
    """Tasks for a paired comparison to detect a mean per-task difference of *effect*.

    For the test the verdict uses, not a z approximation: the smallest n whose paired t test reaches
    *power* (``t_test_power``, the noncentral t, so the t quantiles at n - 1 degrees of freedom are in
    it), with *sd* the observed standard deviation of per-task differences (``PairedComparison.sd``).
    The sign-flip test on the sum of differences has the t test's power in large samples (the
    permutation distribution of sum s_i d_i has variance sum d_i^2, and the two statistics are monotone
    functions of each other), and the verdict needs both.

    *trials* (per task and side) makes it the power of the sign-flip test of pass rates, which is
    discrete: with m trials every difference is a multiple of 1/m, the sign-flip sums lie on a lattice
    of step 2/m, and a sum equal to the observed one counts as "at least as extreme", so the test needs
    more total difference than the t test. The textbook continuity correction is half a step (1/m);
    in simulation that still gave 0.79 to 0.80 at 1 to 3 trials per task, so a full step is taken:
    the effect counts as effect - 2 / (m n). It errs on the safe side by a few tasks (power 0.82 to
    0.85 at the answer; benchmarks/calibration.py checks it at 5 trials: 83.5% at the 66 tasks it asks
    for at +10 points). Without any correction the answer reached only 0.76 to 0.78; the normal formula
    ((z_{1-alpha/2} + z_power) sd / effect)^2 used before was short on both counts (0.74 to 0.79).
    Never below the fewest tasks with which the exact sign-flip test can reach p <= alpha at all
    (2 / 2^n <= alpha: 6 at 0.05).

    No spread at all (sd 0: every paired difference the same, e.g. every trial passed under both) is
    not "any number of tasks will do": the spread is unknown, and ``needed`` is None with the reason.
    """
    z_alpha, z_power = _quantiles(alpha, power, effect)
    method = "paired t test power (noncentral t), from the observed sd of per-task differences" + (
        f", corrected for the steps of pass rates of {trials:g} trials" if trials else ""
    )
    if not math.isfinite(sd) or sd < 0:
        return SampleSize(
            None, "tasks", effect, alpha, power, method, "the spread of paired differences needs 2+ paired tasks"
        )
    if sd <= _NO_SPREAD:
        return SampleSize(
            None,
            "tasks",
            effect,
            alpha,
            power,
            method,
            "no spread was observed (every paired difference is the same), so the number of tasks cannot be "
            "estimated; run more trials per task (or more tasks) to see how much tasks vary",
        )
    floor = max(2, _ceil(math.log2(2.0 / alpha)))
    # The normal formula is a lower bound of the t answer; step up from it (a few steps for the t quantiles,
    # tens more for the correction of 1-trial tasks; each step is one noncentral t evaluation).
    n = max(2, _ceil(((z_alpha + z_power) * sd / effect) ** 2))
    step = 2.0 / trials if trials is not None and trials > 0 else 0.0  # one lattice step of the sums
    while t_test_power(n, sd, effect - step / n, alpha) < power:
        n += 1
    note = ""
    if n < floor:
        note = f"raised to {floor}: with fewer tasks the exact sign-flip test cannot reach p <= {alpha}"
    return SampleSize(max(n, floor), "tasks", effect, alpha, power, method, note)


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
