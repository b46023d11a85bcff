"""The jinja2 environment of the Markdown reports and its filters (numbers through scaffold.reports.format)."""

from __future__ import annotations

import json
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from scaffold.reports.format import UNIT, interval, number, paired_difference, percent, signed_percent
from scaffold.reports.jinja import bytecode_cache
from scaffold.stats import Estimate, Insufficient, PairedComparison

__all__ = ["ENV", "cell_text", "render"]


def estimate(value: Estimate, as_pct: bool = True) -> str:
    """mean [low, high] of a mean over tasks (pass rates, pass@k: held to [0, 1]); the interval is left out
    below two tasks."""
    return interval(value, (lambda v: percent(v, 1)) if as_pct else (lambda v: number(v, ".3f")), UNIT)


def difference(value: PairedComparison | Insufficient | None, as_pct: bool = True) -> str:
    """Mean paired difference with its interval and p, or why there is none."""
    if value is None:
        return "—"
    if isinstance(value, Insufficient):
        return f"insufficient ({value.n} paired task(s), {value.needed} needed)"

    def show(v: float | None) -> str:
        return signed_percent(v, 1) if as_pct else number(v, "+.3f")

    return f"{paired_difference(value, show)}, p = {number(value.p_value, '.3g')}"


def cell_text(text: Any, limit: int = 200) -> str:
    """Text that is safe inside a Markdown table cell: one line, pipes escaped, bounded length."""
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, sort_keys=True, default=str)
    one_line = " ".join(text.split()).replace("|", "\\|")
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


ENV = Environment(
    loader=PackageLoader("scaffold.reports", "templates"),
    bytecode_cache=bytecode_cache("markdown"),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # Markdown, not HTML
)
ENV.filters.update(
    num=number, pct=percent, signed_pct=signed_percent, estimate=estimate, difference=difference, cell=cell_text
)


def render(template: str, **context: Any) -> str:
    """Render *template*; trailing spaces are removed from every line."""
    text = ENV.get_template(template).render(**context)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
