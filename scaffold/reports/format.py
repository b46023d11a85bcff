"""The one way numbers become text in every report: Markdown, HTML and the SVG charts.

One rule for what is not known: None (not reported), NaN (nothing to compute from) and infinities are
shown as ``N/A``, never as zero, and every formatter here follows it (:func:`known`). What differs
between the reports (digits, a unit) is an argument or a named function, not another copy.

Differences of rates come in two units, each a named function: :func:`signed_percent` ("+1.2%",
Markdown) and :func:`signed_points` ("+1.2 pts", HTML and its charts). Both reports have printed their
own since they were written; they are kept byte for byte here, and harmonising them is a change of the
reports' text for its own issue.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from scaffold.stats import Estimate, PairedComparison

__all__ = [
    "NA",
    "UNIT",
    "interval",
    "known",
    "money",
    "no_spread",
    "number",
    "paired_difference",
    "percent",
    "short_number",
    "signed_percent",
    "signed_points",
]

NA: Final = "N/A"
_SAME: Final = 1e-12
"""Differences (and interval widths) at or below this are floating-point noise: the same value."""


def known(value: float | None) -> float | None:
    """*value* as a float when it is a real number; None when it is None, NaN or infinite (shown as N/A)."""
    return float(value) if value is not None and math.isfinite(value) else None


def number(value: float | None, spec: str = ".2f") -> str:
    """``format(value, spec)``, or N/A."""
    v = known(value)
    return NA if v is None else format(v, spec)


def percent(value: float | None, digits: int = 0) -> str:
    """A fraction as a percentage: 0.125 -> "12%" (digits 0), "12.5%" (digits 1); or N/A."""
    v = known(value)
    return NA if v is None else f"{v:.{digits}%}"


def signed_percent(value: float | None, digits: int = 1) -> str:
    """A difference of fractions with its sign, as a percentage: "+1.2%"; or N/A."""
    v = known(value)
    return NA if v is None else f"{v:+.{digits}%}"


def signed_points(value: float | None, digits: int = 1) -> str:
    """A difference of fractions with its sign, in percentage points: "+1.2 pts"; or N/A."""
    v = known(value)
    return NA if v is None else f"{v * 100:+.{digits}f} pts"


def money(value: float | None) -> str:
    """US dollars: four decimals below a dollar ("$0.0123"), two above ("$12.30"); or N/A."""
    v = known(value)
    return NA if v is None else f"${v:,.4f}" if v < 1 else f"${v:,.2f}"


def short_number(value: float | None) -> str:
    """Three significant digits below 1,000 ("0.123", "12.3"), whole thousands above ("12,345"); or N/A."""
    v = known(value)
    if v is None:
        return NA
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


UNIT: Final = (0.0, 1.0)
"""The scale of pass rates, pass@k and weighted scores."""


def interval(est: Estimate, show: Callable[[float | None], str], scale: tuple[float, float] | None = None) -> str:
    """``mean [low, high]`` of a mean over tasks, each part by *show*; the mean alone without an interval
    (below two tasks), N/A without a mean. The interval ends are held to *scale* (None: no scale): a mean
    of values on a scale cannot leave it, and an end beyond it (``0.96 [0.49, 1.44]``) would claim so."""
    if known(est.mean) is None:
        return NA
    low, high = known(est.low), known(est.high)
    if low is None or high is None:
        return show(est.mean)
    if scale is not None:
        low, high = max(low, scale[0]), min(high, scale[1])
    return f"{show(est.mean)} [{show(low)}, {show(high)}]"


def paired_difference(c: PairedComparison, show: Callable[[float | None], str]) -> str:
    """A mean paired difference over tasks with its interval, ``+0.050 [-0.010, +0.110]``, each number by
    *show*.

    When every paired difference is the same there is no spread, and the t interval is a point
    (``+0.000 [+0.000, +0.000]``) that would read as certainty from any number of tasks: that is said in
    words instead, ``no difference on any of the 4 paired tasks (no spread, so no interval)``, or
    ``+0.100 on each of the 4 paired tasks (...)``. Pass rates never get here: their interval is held to
    the trials' binomial noise (scaffold.stats.paired), which the headline verdict shows."""
    if no_spread(c):
        tasks = f"{c.n} paired task{'' if c.n == 1 else 's'}"
        if abs(c.mean_difference) <= _SAME:
            return f"no difference on any of the {tasks} (no spread, so no interval)"
        return f"{show(c.mean_difference)} on each of the {tasks} (no spread, so no interval)"
    return f"{show(c.mean_difference)} [{show(c.low)}, {show(c.high)}]"


def no_spread(c: PairedComparison) -> bool:
    """Whether *c*'s interval is a point: every paired difference was the same, and nothing (a pass rate's
    binomial floor) widened it."""
    low, high = known(c.low), known(c.high)
    return low is not None and high is not None and high - low <= _SAME
