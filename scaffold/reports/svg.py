"""Inline SVG charts for report.html: point estimates with interval bars, and a scatter.

Pure and deterministic: plain values in, an escaped ``Markup`` string out (safe to place in an
autoescaped jinja2 template). No scripts, no external references, no fonts beyond the generic
``sans-serif``. Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` listing the
values as text, and the values are also printed beside the marks, so no reading depends on colour.

Missing data never raises: a ``None`` or NaN value is drawn as the text "N/A" without a mark, a
missing interval end leaves the bar out, and values outside the domain are clipped to its edge (the
printed text keeps the true value). Colours are presentation attributes, so the page's CSS (print
styles) can override them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from scaffold.reports.format import known, percent, short_number

__all__ = [
    "ERROR_BAR",
    "MARK",
    "Point",
    "Row",
    "interval_chart",
    "nice_ceiling",
    "scatter_chart",
    "symmetric_domain",
]

# Fixed colours, chosen to read on white and in greyscale; the browser test looks for these pixels.
ERROR_BAR = "#1d4e89"
MARK = "#d1495b"
AXIS = "#666666"
GRID = "#dddddd"
REFERENCE = "#222222"
TEXT = "#222222"

FONT = 12
ROW = 22
LABEL_CHARS = 28
CHAR_W = 8.4
"""A wide 12 px sans-serif glyph (capitals): label columns sized without measuring fonts. DejaVu Sans,
Chromium's sans-serif on Debian, draws capitals 8.3 px wide on average ("DYNAMIC_SKILL_WITH_EXAMPLES…",
28 characters, is 215 px); 7.4 px let such a name run out of the chart on the left."""
POINT_LABEL_CHARS = 20
"""Characters of a scatter point's label; the scatter's right margin holds that many."""

Format = Callable[[float], str]


_CONTROL = {i: "\ufffd" for i in (*range(0x20), 0x7F) if chr(i) not in "\t\n"}


def clean(text: str) -> str:
    """*text* without control characters, which XML forbids (a task name could carry one)."""
    return text.translate(_CONTROL)


def _esc(text: str) -> Markup:
    return escape(clean(text))


def short(label: str, limit: int = LABEL_CHARS) -> str:
    """*label* cut to *limit* characters with an ellipsis; the full text goes in a ``<title>``."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _n(value: float) -> str:
    """A coordinate with one decimal and no trailing zeros: short markup, stable output."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _text(x: float, y: float, body: str, *, anchor: str = "start", size: int = FONT, extra: str = "") -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" text-anchor="{anchor}" fill="{TEXT}"{extra}>'
        f"{_esc(body)}</text>"
    )


def _frame(ident: str, title: str, desc: str, width: float, height: float, body: list[str]) -> Markup:
    ident = _esc(ident)
    head = (
        f'<svg role="img" class="chart" id="{ident}" '
        f'aria-labelledby="{ident}-t {ident}-d" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="sans-serif">'
        f'<title id="{ident}-t">{_esc(title)}</title><desc id="{ident}-d">{_esc(desc)}</desc>'
    )
    return Markup(head + "".join(body) + "</svg>")


class _Scale:
    """Linear map of [lo, hi] onto [left, right], clipping outside values to the edges."""

    def __init__(self, domain: tuple[float, float], left: float, right: float) -> None:
        lo, hi = domain
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            lo, hi = 0.0, 1.0  # a degenerate domain (no data, one value) still draws an axis
        self.lo, self.hi, self.left, self.right = lo, hi, left, right

    def __call__(self, value: float) -> float:
        clipped = min(max(value, self.lo), self.hi)
        return self.left + (clipped - self.lo) / (self.hi - self.lo) * (self.right - self.left)

    def ticks(self) -> list[float]:
        """Evenly spaced ticks at a round step (1, 2, 2.5 or 5 times a power of ten), with 0 on a tick
        when the domain spans it; the ends are always ticks."""
        span = self.hi - self.lo
        for count in (4, 5, 2, 3, 6, 8, 10):
            step = span / count
            zero_on_tick = not self.lo < 0 < self.hi or math.isclose(-self.lo / step, round(-self.lo / step))
            if math.isclose(nice_ceiling(step), step, rel_tol=1e-9) and zero_on_tick:
                return [self.lo + i * step for i in range(count + 1)]
        return [self.lo + i * span / 4 for i in range(5)]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= *value* (positive values only)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if factor * power >= value * (1 - 1e-12):
            return factor * power
    return 10 * power


@dataclass(frozen=True, slots=True)
class Row:
    """One line of an interval chart: a point estimate and its interval; None or NaN means unknown."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""
    """Text printed after the value (for example "n=12"); the value and interval are printed anyway."""


def symmetric_domain(rows: Sequence[Row], minimum: float = 0.1) -> tuple[float, float]:
    """A domain centred on 0 wide enough for every finite value and interval end (differences)."""
    ends = [abs(v) for r in rows for v in (known(r.value), known(r.low), known(r.high)) if v is not None]
    reach = nice_ceiling(max([minimum, *ends]))
    return (-reach, reach)


def interval_chart(
    rows: Sequence[Row],
    *,
    ident: str,
    title: str,
    domain: tuple[float, float] = (0.0, 1.0),
    fmt: Format = percent,
    reference: float | None = None,
    tick_fmt: Format | None = None,
    width: int = 720,
) -> Markup:
    """Horizontal dot-and-whisker chart, one row per item: label, axis with the estimate and its
    interval, then the value and interval as text (*fmt*; ticks use *tick_fmt*, default *fmt*).
    *reference* draws a vertical line (0 for differences, the baseline's value for levels)."""
    label_w = min(max([8, *(len(short(r.label)) for r in rows)]), LABEL_CHARS) * CHAR_W + 12
    texts = [_row_text(r, fmt) for r in rows]
    value_w = max([170.0, *(len(t) * 6.4 + 16 for t in texts)])  # digits are narrower than capitals
    width = max(width, round(label_w + 320 + value_w))  # never squeeze the axis below 320 px
    left, right = label_w, width - value_w
    scale = _Scale(domain, left + 6, right - 6)
    top = 8.0
    axis_y = top + max(len(rows), 1) * ROW + 4
    height = axis_y + 24
    body: list[str] = []
    for tick in scale.ticks():
        x = scale(tick)
        body.append(f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(axis_y)}" stroke="{GRID}"/>')
        body.append(_text(x, axis_y + 16, (tick_fmt or fmt)(tick), anchor="middle", size=FONT - 1))
    body.append(f'<line x1="{_n(left)}" y1="{_n(axis_y)}" x2="{_n(right)}" y2="{_n(axis_y)}" stroke="{AXIS}"/>')
    ref = known(reference)
    if ref is not None:
        x = scale(ref)
        body.append(
            f'<line class="ref" x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(axis_y)}" '
            f'stroke="{REFERENCE}" stroke-dasharray="4 3"/>'
        )
    if not rows:
        body.append(_text((left + right) / 2, top + ROW / 2 + 4, "no data", anchor="middle"))
    described = []
    for i, (row, text) in enumerate(zip(rows, texts, strict=True)):
        y = top + i * ROW + ROW / 2
        described.append(f"{row.label}: {text}")
        tip = f"<title>{_esc(row.label)}: {_esc(text)}</title>"
        body.append(f"<g>{tip}")
        body.append(_text(left - 8, y + 4, short(row.label), anchor="end"))
        low, high, value = known(row.low), known(row.high), known(row.value)
        if low is not None and high is not None:
            x1, x2 = scale(low), scale(high)
            body.append(
                f'<path class="err" d="M{_n(x1)} {_n(y)}H{_n(x2)}M{_n(x1)} {_n(y - 5)}V{_n(y + 5)}'
                f'M{_n(x2)} {_n(y - 5)}V{_n(y + 5)}" stroke="{ERROR_BAR}" stroke-width="2" fill="none"/>'
            )
        if value is not None:
            body.append(f'<circle class="mark" cx="{_n(scale(value))}" cy="{_n(y)}" r="4.5" fill="{MARK}"/>')
        body.append(_text(right + 8, y + 4, text) + "</g>")
    return _frame(ident, title, "; ".join(described) or "no data", width, height, body)


def _row_text(row: Row, fmt: Format) -> str:
    value = known(row.value)
    if value is None:
        text = "N/A"
    else:
        low, high = known(row.low), known(row.high)
        text = fmt(value) if low is None or high is None else f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"
    return f"{text} {row.note}" if row.note else text


def _point_label(x: float, y: float, label: str) -> str:
    """A scatter point's label, up and to the right of it; below it when it would run above the chart's
    top (the best treatment sits at 100%, and its label was cut off). The right margin holds the longest
    label shown, ``POINT_LABEL_CHARS`` of ``CHAR_W``."""
    return _text(x + 8, y + 6 + FONT if y - 6 - FONT < 0 else y - 6, label)


@dataclass(frozen=True, slots=True)
class Point:
    """One item of a scatter: x and y with an optional interval on y; None or NaN means unknown."""

    label: str
    x: float | None
    y: float | None
    y_low: float | None = None
    y_high: float | None = None


def scatter_chart(
    points: Sequence[Point],
    *,
    ident: str,
    title: str,
    x_label: str,
    y_label: str,
    x_fmt: Format = short_number,
    y_fmt: Format = percent,
    y_domain: tuple[float, float] = (0.0, 1.0),
    width: int = 720,
    height: int = 360,
) -> Markup:
    """Scatter of items (x from 0 to a round maximum), each labelled, with its y interval as a whisker.

    Items without an x or y cannot be placed; they are listed under the chart as "not plotted".
    """
    placed: list[Point] = []
    missing: list[Point] = []
    for p in points:
        (placed if known(p.x) is not None and known(p.y) is not None else missing).append(p)
    left, right, top = 56.0, width - (POINT_LABEL_CHARS * CHAR_W + 16), 12.0
    bottom = height - 44.0 - (ROW if missing else 0)
    x_max = nice_ceiling(max([known(p.x) or 0.0 for p in placed], default=0.0))
    xs = _Scale((0.0, x_max), left, right)
    ys = _Scale(y_domain, bottom, top)  # inverted: larger y is higher up
    body: list[str] = []
    for tick in xs.ticks():
        x = xs(tick)
        body.append(f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(bottom)}" stroke="{GRID}"/>')
        body.append(_text(x, bottom + 16, x_fmt(tick), anchor="middle", size=FONT - 1))
    for tick in ys.ticks():
        y = ys(tick)
        body.append(f'<line x1="{_n(left)}" y1="{_n(y)}" x2="{_n(right)}" y2="{_n(y)}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y + 4, y_fmt(tick), anchor="end", size=FONT - 1))
    body.append(
        f'<path d="M{_n(left)} {_n(top)}V{_n(bottom)}H{_n(right)}" stroke="{AXIS}" fill="none"/>'
        + _text((left + right) / 2, bottom + 34, x_label, anchor="middle")
        + _text(
            14,
            (top + bottom) / 2,
            y_label,
            anchor="middle",
            extra=f' transform="rotate(-90 14 {_n((top + bottom) / 2)})"',
        )
    )
    if not placed:
        body.append(_text((left + right) / 2, (top + bottom) / 2, "no data to plot", anchor="middle"))
    described = []
    for p in placed:
        x, y = xs(p.x or 0.0), ys(p.y or 0.0)
        text = f"{x_fmt(p.x or 0.0)}, {_row_text(Row(p.label, p.y, p.y_low, p.y_high), y_fmt)}"
        described.append(f"{p.label}: {text}")
        body.append(f"<g><title>{_esc(p.label)}: {_esc(text)}</title>")
        low, high = known(p.y_low), known(p.y_high)
        if low is not None and high is not None:
            body.append(
                f'<path class="err" d="M{_n(x)} {_n(ys(low))}V{_n(ys(high))}M{_n(x - 5)} {_n(ys(low))}'
                f'H{_n(x + 5)}M{_n(x - 5)} {_n(ys(high))}H{_n(x + 5)}" stroke="{ERROR_BAR}" stroke-width="2" '
                'fill="none"/>'
            )
        body.append(f'<circle class="mark" cx="{_n(x)}" cy="{_n(y)}" r="5" fill="{MARK}"/>')
        body.append(_point_label(x, y, short(p.label, POINT_LABEL_CHARS)) + "</g>")
    if missing:
        names = ", ".join(short(p.label, POINT_LABEL_CHARS) for p in missing)
        body.append(_text(left, height - 8, f"not plotted (no {x_label} or {y_label}): {names}", size=FONT - 1))
        described.extend(f"{p.label}: not plotted" for p in missing)
    return _frame(ident, title, "; ".join(described) or "no data", width, height, body)
