"""SVG chart primitives of report.html: escaping, missing data, bounds, long names, determinism."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from scaffold.reports.format import percent
from scaffold.reports.svg import (
    CHAR_W,
    ERROR_BAR,
    FONT,
    MARK,
    Point,
    Row,
    interval_chart,
    nice_ceiling,
    scatter_chart,
    symmetric_domain,
)

HOSTILE = '<script>alert("x")</script> & "quotes" \'single\''


def parse(markup: str) -> ET.Element:
    """The chart must be well-formed XML on its own (inline SVG that any parser accepts)."""
    return ET.fromstring(markup)


def marks(root: ET.Element) -> list[ET.Element]:
    return [e for e in root.iter("circle") if e.get("class") == "mark"]


def bars(root: ET.Element) -> list[ET.Element]:
    return [e for e in root.iter("path") if e.get("class") == "err"]


def cx(element: ET.Element) -> float:
    return float(element.get("cx", "nan"))


def bar_ends(element: ET.Element) -> tuple[float, float]:
    """x of the start and end of an interval chart's horizontal whisker (path "M x1 y H x2 ...")."""
    found = re.match(r"M([-0-9.]+) [-0-9.]+H([-0-9.]+)", element.get("d", ""))
    assert found, element.get("d")
    return float(found.group(1)), float(found.group(2))


def test_interval_chart_draws_one_mark_and_bar_per_row_with_values_as_text() -> None:
    rows = [Row("CONTROL", 0.5, 0.4, 0.6), Row("SKILL", 0.75, 0.7, 0.8, note="n=12")]
    svg = interval_chart(rows, ident="pass", title="Pass rate")
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "pass-t pass-d"
    assert root.find("title") is not None and root.find("title").text == "Pass rate"  # type: ignore[union-attr]
    assert len(marks(root)) == 2 and len(bars(root)) == 2
    texts = [t.text for t in root.iter("text")]
    assert "50% [40%, 60%]" in texts and "75% [70%, 80%] n=12" in texts
    assert all(b.get("stroke") == ERROR_BAR for b in bars(root))
    assert all(m.get("fill") == MARK for m in marks(root))
    desc = root.find("desc")
    assert desc is not None and "SKILL: 75% [70%, 80%] n=12" in (desc.text or "")


def test_positions_follow_the_values_and_the_bounds_map_to_the_axis_ends() -> None:
    rows = [Row("zero", 0.0, 0.0, 0.0), Row("half", 0.5, 0.25, 0.75), Row("one", 1.0, 1.0, 1.0)]
    root = parse(interval_chart(rows, ident="b", title="t"))
    zero, half, one = (cx(m) for m in marks(root))
    assert zero < half < one
    assert math.isclose(half, (zero + one) / 2, abs_tol=0.1)
    low, high = bar_ends(bars(root)[1])
    assert math.isclose(low, zero + (one - zero) / 4, abs_tol=0.1)
    assert math.isclose(high, zero + 3 * (one - zero) / 4, abs_tol=0.1)


def test_none_and_nan_are_shown_as_na_without_marks() -> None:
    rows = [Row("none", None), Row("not a number", math.nan, math.nan, math.nan), Row("half", 0.3, math.inf, None)]
    root = parse(interval_chart(rows, ident="na", title="t"))
    texts = [t.text for t in root.iter("text")]
    assert texts.count("N/A") == 2
    assert "30%" in texts
    assert len(marks(root)) == 1 and not bars(root)
    coordinates = [v.lower() for e in root.iter() for k, v in e.attrib.items() if k not in ("id", "aria-labelledby")]
    assert not [v for v in coordinates if "nan" in v or "inf" in v]


def test_empty_data_draws_an_axis_and_says_so() -> None:
    root = parse(interval_chart([], ident="e", title="nothing"))
    assert "no data" in [t.text for t in root.iter("text")]
    assert root.find("desc").text == "no data"  # type: ignore[union-attr]
    scatter = parse(scatter_chart([], ident="s", title="t", x_label="cost", y_label="pass rate"))
    assert "no data to plot" in [t.text for t in scatter.iter("text")]


def test_values_outside_the_domain_are_clipped_but_printed_true() -> None:
    root = parse(interval_chart([Row("in", 0.0), Row("over", 1.7, 1.2, 2.0)], ident="c", title="t"))
    inside, over = marks(root)
    low, high = bar_ends(bars(root)[0])
    assert cx(over) == low == high  # everything pinned to the right end of the axis
    assert cx(over) > cx(inside)
    assert "170% [120%, 200%]" in [t.text for t in root.iter("text")]


def test_labels_and_titles_are_escaped() -> None:
    svg = str(interval_chart([Row(HOSTILE, 0.5, 0.4, 0.6)], ident='x"><b', title=HOSTILE))
    assert "<script>" not in svg and 'x"><b' not in svg
    root = parse(svg)  # still well-formed
    assert root.find("title").text == HOSTILE  # type: ignore[union-attr]
    scatter = str(scatter_chart([Point(HOSTILE, 1.0, 0.5)], ident="s", title=HOSTILE, x_label="<x>", y_label="&"))
    assert "<script>" not in scatter and "<x>" not in scatter
    parse(scatter)


def test_long_names_are_shortened_on_screen_and_kept_whole_in_titles() -> None:
    name = "treatment-" + "x" * 200
    svg = interval_chart([Row(name, 0.5)], ident="long", title="t")
    root = parse(svg)
    shown = [t.text or "" for t in root.iter("text")]
    assert any(s.endswith("…") and len(s) == 28 for s in shown)
    assert any(name in (t.text or "") for t in root.iter("title"))
    # The label column is capped: a longer name does not make the chart wider.
    shorter = parse(interval_chart([Row(name[:40], 0.5)], ident="long", title="t"))
    assert root.get("width") == shorter.get("width")


def test_reference_line_and_symmetric_domain_for_differences() -> None:
    rows = [Row("A", 0.12, -0.03, 0.27), Row("B", -0.3, -0.41, -0.19)]
    domain = symmetric_domain(rows)
    assert domain == (-0.5, 0.5)
    root = parse(interval_chart(rows, ident="d", title="t", domain=domain, reference=0.0))
    ref = next(e for e in root.iter("line") if e.get("class") == "ref")
    a, b = marks(root)
    assert cx(b) < float(ref.get("x1", "nan")) < cx(a)
    assert symmetric_domain([Row("flat", 0.0, 0.0, 0.0)]) == (-0.1, 0.1)
    assert symmetric_domain([Row("nan", math.nan)]) == (-0.1, 0.1)


def test_scatter_places_points_with_y_whiskers_and_lists_the_unplottable() -> None:
    points = [Point("CONTROL", 0.1, 0.4, 0.3, 0.5), Point("SKILL", 0.3, 0.8, 0.7, 0.9), Point("NOCOST", None, 0.6)]
    root = parse(scatter_chart(points, ident="s", title="t", x_label="cost per trial", y_label="pass rate"))
    control, skill = marks(root)
    assert cx(control) < cx(skill)
    assert float(skill.get("cy", "nan")) < float(control.get("cy", "nan"))  # higher pass rate is higher up
    assert len(bars(root)) == 2
    texts = [t.text or "" for t in root.iter("text")]
    assert any("not plotted" in t and "NOCOST" in t for t in texts)


def test_scatter_labels_stay_inside_the_chart_at_its_edges() -> None:
    # The best and the most expensive treatment sit at the top and right edges: their labels must not be
    # cut off by the chart's frame (CHAR_W: the widest glyph, so this bounds the drawn text).
    points = [Point("DYNAMIC_SKILL_VARIANT", 0.30, 1.0, 0.8, 1.0), Point("CONTROL", 0.05, 0.0, 0.0, 0.2)]
    root = parse(scatter_chart(points, ident="s", title="t", x_label="cost", y_label="pass rate", width=480))
    width = float(root.get("width", "nan"))
    labels = [t for t in root.iter("text") if t.text in ("DYNAMIC_SKILL_VARIA…", "CONTROL")]
    assert len(labels) == 2
    for label in labels:
        x, y, extent = float(label.get("x", "nan")), float(label.get("y", "nan")), len(label.text or "") * CHAR_W
        left, right = (x - extent, x) if label.get("text-anchor") == "end" else (x, x + extent)
        assert left >= 0 and right <= width, (label.text, left, right, width)
        assert y - FONT >= 0, (label.text, y)  # the baseline leaves room for the glyphs above it


def test_output_is_deterministic() -> None:
    rows = [Row(f"t{i}", i / 10, i / 20, i / 10 + 0.05) for i in range(10)]
    assert interval_chart(rows, ident="a", title="t") == interval_chart(rows, ident="a", title="t")


def test_formatting() -> None:
    assert percent(None) == percent(math.nan) == "N/A"
    assert percent(0.0) == "0%" and percent(1.0) == "100%"
    assert [nice_ceiling(v) for v in (0.0, 0.03, 0.1, 0.11, 0.3, 0.7, 3.2, math.inf)] == [
        1.0,
        0.05,
        0.1,
        0.2,
        0.5,
        1.0,
        5.0,
        1.0,
    ]


values = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32))


@given(st.lists(st.tuples(st.text(max_size=40), values, values, values), max_size=12))
def test_any_rows_give_well_formed_svg_inside_the_frame(data: list[tuple[str, float | None, ...]]) -> None:
    rows = [Row(label, v, lo, hi) for label, v, lo, hi in data]
    root = parse(interval_chart(rows, ident="h", title="t"))
    width = float(root.get("width", "0"))
    for mark in marks(root):
        assert 0 <= cx(mark) <= width
    for bar in bars(root):
        assert all(0 <= x <= width for x in bar_ends(bar))


def tick_texts(root: ET.Element) -> list[str]:
    """Axis tick labels: the texts drawn below the axis, smaller than the rest."""
    return [t.text or "" for t in root.iter("text") if t.get("font-size") == "11"]


def test_ticks_are_round_and_include_zero() -> None:
    rows = [Row("a", 0.1, -0.2, 0.25)]
    root = parse(interval_chart(rows, ident="t", title="t", domain=symmetric_domain(rows), fmt=lambda v: f"{v:+.2f}"))
    assert tick_texts(root) == ["-0.25", "+0.00", "+0.25"]
    root = parse(interval_chart(rows, ident="t", title="t", domain=(-0.2, 0.2), fmt=lambda v: f"{v:+.2f}"))
    assert tick_texts(root) == ["-0.20", "-0.10", "+0.00", "+0.10", "+0.20"]
    scatter = parse(scatter_chart([Point("a", 0.21, 0.5)], ident="s", title="t", x_label="x", y_label="y"))
    assert tick_texts(scatter)[:6] == ["0", "0.05", "0.1", "0.15", "0.2", "0.25"]
