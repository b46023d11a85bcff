"""report.html in a real browser: headless Chromium renders it; the screenshot and the DOM show the charts.

Needs Debian's ``chromium`` (/usr/bin/chromium). Locally the test skips without it; in CI (.ci/run sets
COMET_REQUIRE_BROWSER=1 and installs it) a missing browser is a failure, as tests/conftest.py does for
Docker with COMET_REQUIRE_DOCKER.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from scaffold.reports.html import render_html
from scaffold.reports.svg import ERROR_BAR, MARK
from tests.support.png import Image, read_png
from tests.support.records import changed, judge_info, judged
from tests.support.report_html import LAYOUT_TREATMENTS, analysis_of, layout_outcome, trial_set

CHROMIUM = Path("/usr/bin/chromium")
WINDOW = (1300, 3000)  # tall enough for the verdict, comparison, cost and first dimension charts
# Matrix colours of report.css.j2: 0%, 25% and 100% pass rate.
B0, B3, B10 = "#543005", "#dfc27d", "#003c30"


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not os.access(CHROMIUM, os.X_OK):
        reason = f"no {CHROMIUM} (Debian's chromium package; .ci/run installs it)"
        if os.environ.get("COMET_REQUIRE_BROWSER") == "1":
            pytest.fail(f"COMET_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return CHROMIUM


def run_chromium(browser: Path, tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [
        str(browser),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
        page.as_uri(),
    ]
    # The timeout only stops a hung browser; it is not a performance assertion.
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 tasks: CONTROL fails all, SKILL_A passes all, SKILL_B passes 0-100% by task (one all excluded)."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(analysis_of(trial_set(12, LAYOUT_TREATMENTS, 4, layout_outcome))), encoding="utf-8")
    return path


def dominant_column(points: Iterable[tuple[int, int]]) -> tuple[int, int, list[tuple[int, int]]]:
    """The x range (first, last) of the contiguous run of columns holding most of *points*, and them."""
    points = list(points)
    assert points, "colour not found anywhere in the screenshot"
    per_x = Counter(x for x, _ in points)
    runs: list[tuple[int, int]] = []
    for x in sorted(per_x):
        if runs and x == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], x)
        else:
            runs.append((x, x))
    first, last = max(runs, key=lambda r: sum(per_x[x] for x in range(r[0], r[1] + 1)))
    return first, last, [p for p in points if first <= p[0] <= last]


def blobs(points: Iterable[tuple[int, int]]) -> list[tuple[float, float]]:
    """Centres of the 8-connected groups of *points* (the chart dots)."""
    left = set(points)
    centres = []
    while left:
        stack = [left.pop()]
        group = []
        while stack:
            x, y = stack.pop()
            group.append((x, y))
            for n in ((x + dx, y + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)):
                if n in left:
                    left.remove(n)
                    stack.append(n)
        if len(group) >= 12:  # a dot, not an anti-aliasing speck of text
            centres.append((sum(p[0] for p in group) / len(group), sum(p[1] for p in group) / len(group)))
    return centres


@pytest.mark.browser
@pytest.mark.slow
def test_screenshot_shows_the_matrix_colours_in_their_columns_and_error_bars_around_the_dots(
    chromium: Path, report: Path, tmp_path: Path
) -> None:
    shot = tmp_path / "shot.png"
    run_chromium(chromium, tmp_path, report, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    image = read_png(shot)
    assert (image.width, image.height) == WINDOW

    # Matrix: CONTROL's column is all 0% (brown), SKILL_A's all 100% (dark teal), left to right, each a
    # tall stack of cells: 12 task rows and the mean row.
    _, control_x1, control = dominant_column(image.find(B0))
    skill_a_x0, skill_a_x1, skill_a = dominant_column(image.find(B10))
    assert control_x1 < skill_a_x0
    for cells in (control, skill_a):
        rows = sorted({y for _, y in cells})
        assert rows[-1] - rows[0] >= 13 * 15, "the column should span 13 stacked cells"
        assert len(cells) >= 13 * 15 * 30
    # SKILL_B's 25% cells (tasks 1 and 6) are right of SKILL_A, inside the matrix rows (the legend is above).
    top, bottom = min(y for _, y in control), max(y for _, y in control)
    quarter = [(x, y) for x, y in image.find(B3) if top <= y <= bottom]
    x0, _, quarter = dominant_column(quarter)
    assert x0 > skill_a_x1 and len({y for _, y in quarter}) >= 2 * 15

    # Charts: dots with their interval bars. SKILL_B's intervals have a width, so in the verdict, pass-rate,
    # score and dimension charts its dot sits on a horizontal bar that leaves it on both sides.
    bars = set(image.find(ERROR_BAR))
    assert len(bars) > 200
    dots = blobs(image.find(MARK))
    assert len(dots) >= 10

    def bar_through(cx: float, cy: float) -> bool:
        y = round(cy)
        row = {x for x, by in bars if abs(by - y) <= 1}
        return any(x < cx - 6 for x in row) and any(x > cx + 6 for x in row)

    def whisker_through(cx: float, cy: float) -> bool:
        x = round(cx)
        column = {y for bx, y in bars if abs(bx - x) <= 1}
        return any(y < cy - 6 for y in column) and any(y > cy + 6 for y in column)

    assert sum(bar_through(cx, cy) for cx, cy in dots) >= 4
    assert any(whisker_through(cx, cy) for cx, cy in dots), "the cost scatter's vertical interval is missing"


@pytest.mark.browser
def test_rendered_dom_has_every_chart_and_cell(chromium: Path, report: Path, tmp_path: Path) -> None:
    dom = run_chromium(chromium, tmp_path, report, "--dump-dom").stdout
    source = report.read_text(encoding="utf-8")
    assert dom.count('role="img"') == source.count('role="img"') >= 4
    assert dom.count('class="mark"') == source.count('class="mark"') > 10
    assert dom.count('class="err"') == source.count('class="err"') > 10
    matrix = dom[dom.index('<table class="matrix">') : dom.index("</table>", dom.index('<table class="matrix">'))]
    assert len(re.findall(r"<td class=\"(b\d+|na)\"", matrix)) == 12 * 3 + 3
    assert "<script" not in dom


@pytest.mark.browser
def test_rendered_dom_has_the_judge_section(chromium: Path, tmp_path: Path) -> None:
    # Every trial judged: task_completion re-scores completion, output_quality stands alone.
    records = [
        changed(
            r,
            dimensions=(*r.dimensions, *judged(task_completion=0.8, output_quality=0.6)),
            judge=judge_info(cost_usd=0.01, input_tokens=900, output_tokens=40),
        )
        for r in trial_set(4, LAYOUT_TREATMENTS, 2, layout_outcome)
    ]
    page = tmp_path / "judge.html"
    page.write_text(render_html(analysis_of(records)), encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, page, "--dump-dom").stdout
    section = dom[dom.index('<section id="judge"') : dom.index("</section>", dom.index('<section id="judge"'))]
    assert "LLM-judge overlay (rule vs judge)" in section
    overlay = section[section.index('<table class="data judge-overlay">') :]
    overlay = overlay[: overlay.index("</table>")]
    treatments = len(LAYOUT_TREATMENTS)
    assert overlay.count("<td>task_completion (rule: completion)</td>") == treatments
    assert section.count("<td>output_quality</td>") == treatments
    assert '<table class="data judge-cost">' in section and '<table class="data judge-calibration">' in section
    assert '<a href="#judge">LLM judge</a>' in dom


def write_png(path: Path, width: int, height: int, rows: list[bytes], filters: list[int]) -> None:
    """A PNG with the given filter type per row (the pixel bytes are filtered accordingly)."""
    out = bytearray()
    prev = bytes(width * 3)
    for row, kind in zip(rows, filters, strict=True):
        line = bytearray()
        for i, value in enumerate(row):
            a = row[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            p = a + b - c
            paeth = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c
            predictor = [0, a, b, (a + b) // 2, paeth][kind]
            line.append((value - predictor) & 255)
        out += bytes([kind]) + line
        prev = row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(out)) + chunk(b"IEND", b"")
    )


def test_png_reader_undoes_every_filter(tmp_path: Path) -> None:
    width, height = 7, 10
    rows = [bytes((x * 37 + y * 91 + c * 53) % 256 for x in range(width) for c in range(3)) for y in range(height)]
    write_png(tmp_path / "t.png", width, height, rows, [y % 5 for y in range(height)])
    image: Image = read_png(tmp_path / "t.png")
    assert image.rows == tuple(rows)
    assert image.pixel(2, 3) == tuple(rows[3][6:9])
    colour = "#" + rows[4][9:12].hex()
    assert (3, 4) in image.find(colour)
