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

from scaffold.stats import Estimate

__all__ = [
    "NA",
    "interval",
    "known",
    "money",
    "number",
    "percent",
    "short_number",
    "signed_percent",
    "signed_points",
]

NA: Final = "N/A"


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


def interval(est: Estimate, show: Callable[[float | None], str]) -> str:
    """``mean [low, high]`` of a mean over tasks, each part by *show*; the mean alone without an interval
    (below two tasks), N/A without a mean."""
    if known(est.mean) is None:
        return NA
    if known(est.low) is None or known(est.high) is None:
        return show(est.mean)
    return f"{show(est.mean)} [{show(est.low)}, {show(est.high)}]"
