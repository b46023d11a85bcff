"""The jinja2 environment of the Markdown reports and its number filters (N/A for None and NaN)."""

from __future__ import annotations

import json
import math
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from scaffold.stats import Estimate, Insufficient, PairedComparison

__all__ = ["ENV", "cell_text", "fmt", "pct", "render"]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def fmt(value: Any, spec: str = ".2f") -> str:
    """A number, or N/A when it is unknown (None) or undefined (NaN)."""
    return "N/A" if _missing(value) else format(value, spec)


def pct(value: Any, digits: int = 0) -> str:
    return "N/A" if _missing(value) else f"{value:.{digits}%}"


def signed_pct(value: Any, digits: int = 1) -> str:
    return "N/A" if _missing(value) else f"{value:+.{digits}%}"


def estimate(value: Estimate, as_pct: bool = True) -> str:
    """mean [low, high] of a mean over tasks; the interval is left out below two tasks."""

    def show(v: float) -> str:
        return pct(v, 1) if as_pct else fmt(v, ".3f")

    if _missing(value.mean):
        return "N/A"
    if _missing(value.low):
        return show(value.mean)
    return f"{show(value.mean)} [{show(value.low)}, {show(value.high)}]"


def difference(value: PairedComparison | Insufficient | None, as_pct: bool = True) -> str:
    """Mean paired difference with its interval and p, or why there is none."""
    if value is None:
        return "—"
    if isinstance(value, Insufficient):
        return f"insufficient ({value.n} paired task(s), {value.needed} needed)"

    def show(v: float) -> str:
        return signed_pct(v, 1) if as_pct else fmt(v, "+.3f")

    return f"{show(value.mean_difference)} [{show(value.low)}, {show(value.high)}], p = {fmt(value.p_value, '.3g')}"


def cell_text(text: Any, limit: int = 200) -> str:
    """Text that is safe inside a Markdown table cell: one line, pipes escaped, bounded length."""
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, sort_keys=True, default=str)
    one_line = " ".join(text.split()).replace("|", "\\|")
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


ENV = Environment(
    loader=PackageLoader("scaffold.reports", "templates"),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # Markdown, not HTML
)
ENV.filters.update(num=fmt, pct=pct, signed_pct=signed_pct, estimate=estimate, difference=difference, cell=cell_text)


def render(template: str, **context: Any) -> str:
    """Render *template*; trailing spaces are removed from every line."""
    text = ENV.get_template(template).render(**context)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
