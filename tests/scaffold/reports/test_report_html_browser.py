"""report.html in a real browser: headless Chromium renders it; the screenshot and the DOM show the charts.

Needs Debian's ``chromium`` (/usr/bin/chromium). Locally the test skips without it; in CI (.ci/run sets
COMET_REQUIRE_BROWSER=1 and installs it) a missing browser is a failure, as tests/conftest.py does for
Docker with COMET_REQUIRE_DOCKER.
"""

from __future__ import annotations

import itertools
import os
import re
import struct
import subprocess
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from scaffold.records import TrialRecord
from scaffold.reports.html import render_html
from scaffold.reports.svg import ERROR_BAR, MARK
from tests.support.png import Image, read_png
from tests.support.records import changed, judge_info, judged
from tests.support.report_html import LAYOUT_TREATMENTS, analysis_of, first_look, layout_outcome, trial_set

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


# --- report.html as a new user first saw it ----------------------------------------------------------

WIDE = (1900, 2400)
AXIS = "#666666"  # svg.AXIS: every chart's axis line
THEAD = "#f3f3f3"  # report.css.j2: table header background
FIRST_LOOK_STREAMS = ("agent.turn-1.jsonl", "agent.turn-1.stderr.log", "agent.version.log")
# Written into a copy of the page only: report.html itself has no script. It records each box as the
# browser laid it out, which --dump-dom alone does not show.
MEASURE = """<script>
document.body.setAttribute("data-window", String(document.documentElement.clientWidth));
for (const e of document.querySelectorAll("section, table.data, svg.chart, p.nothing")) {
  const r = e.getBoundingClientRect();
  e.setAttribute("data-box", [r.left, r.top + window.scrollY, r.width, r.height].map(Math.round).join(" "));
}
</script>"""


def measured_dom(browser: Path, tmp_path: Path, page: Path, window: tuple[int, int]) -> str:
    copy = tmp_path / f"measured-{page.name}"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    return run_chromium(browser, tmp_path, copy, "--dump-dom", f"--window-size={window[0]},{window[1]}").stdout


def box(dom: str, opening: str) -> tuple[int, int, int, int]:
    """left, top, width, height of the element whose start tag begins with *opening*."""
    tag = re.search(re.escape(opening) + r'[^>]*data-box="(-?\d+) (-?\d+) (\d+) (\d+)"', dom)
    assert tag is not None, f"{opening!r} not measured"
    left, top, width, height = map(int, tag.groups())
    return left, top, width, height


def dom_section(dom: str, name: str) -> str:
    start = dom.index(f'<section id="{name}"')
    return dom[start : dom.index("</section>", start)]


def axis_lines(image: Image, top: int, bottom: int) -> int:
    """Horizontal runs of the axis colour at least 200 px long between rows *top* and *bottom*: one per
    chart (interval charts draw one axis line, the scatter its L-shaped axes)."""
    lines = 0
    points = sorted(image.find(AXIS))
    by_row: dict[int, list[int]] = {}
    for x, y in points:
        if top <= y <= bottom:
            by_row.setdefault(y, []).append(x)
    previous = -2
    for y in sorted(by_row):
        xs = sorted(by_row[y])
        run = best = 1
        for a, b in itertools.pairwise(xs):
            run = run + 1 if b == a + 1 else 1
            best = max(best, run)
        if best >= 200:
            lines += y != previous + 1  # a 2 px line is one line
            previous = y
    return lines


@pytest.fixture(scope="module")
def first_look_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("first-look") / "report.html"
    page = render_html(analysis_of(first_look(), streams=FIRST_LOOK_STREAMS))
    path.write_text(page, encoding="utf-8")
    return path


@pytest.mark.browser
def test_a_wide_window_is_used_by_the_page(chromium: Path, report: Path, tmp_path: Path) -> None:
    dom = measured_dom(chromium, tmp_path, report, WIDE)
    window = int(re.search(r'data-window="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    assert window == WIDE[0]
    for name in ("verdict", "comparison", "matrix", "spend", "quality", "failures", "trials"):
        left, _, width, _ = box(dom, f'<section id="{name}"')
        assert width >= 0.9 * window and left + width >= 0.95 * window, (name, left, width)
    for table in ('<table class="data verdicts"', '<table class="data trials"'):
        assert box(dom, table)[2] >= 0.9 * window, table
    # The two level charts sit side by side, each drawn larger than its natural 720 px.
    pass_rate, score = (
        box(dom, '<svg role="img" class="chart" id="chart-pass-rate"'),
        box(dom, '<svg role="img" class="chart" id="chart-score"'),
    )
    assert pass_rate[1] == score[1] and score[0] > pass_rate[0] + pass_rate[2]
    assert min(pass_rate[2], score[2]) > 720

    shot = tmp_path / "wide.png"
    run_chromium(chromium, tmp_path, report, f"--screenshot={shot}", f"--window-size={WIDE[0]},{WIDE[1]}")
    image = read_png(shot)
    # Table headers (their grey background) reach close to the right edge of the window.
    assert max(x for x, _ in image.find(THEAD)) >= 0.95 * WIDE[0]


@pytest.mark.browser
def test_the_first_look_defects_are_gone_in_the_browser(chromium: Path, first_look_page: Path, tmp_path: Path) -> None:
    dom = measured_dom(chromium, tmp_path, first_look_page, WIDE)
    shot = tmp_path / "first-look.png"
    run_chromium(chromium, tmp_path, first_look_page, f"--screenshot={shot}", f"--window-size={WIDE[0]},{WIDE[1]}")
    image = read_png(shot)

    # 2. Cost against quality with nothing to plot: one line, no chart.
    cost = dom_section(dom, "cost")
    assert "<svg" not in cost and "no data to plot" not in dom
    assert "Nothing to plot: no treatment has both a mean cost per trial and a pass rate" in cost
    _, top, _, height = box(dom, '<section id="cost"')
    assert height < 120
    assert axis_lines(image, top, top + height) == 0

    # 3. skill_invocation, N/A in every trial: one line, no chart (the completion chart stays).
    dims = dom_section(dom, "dimensions")
    assert dims.count('<svg role="img"') == 1 and 'id="chart-dim-0"' in dims
    assert "<strong>skill_invocation</strong>: not applicable: no trial has a score (N/A in every trial)" in dims
    _, top, _, height = box(dom, '<section id="dimensions"')
    assert top + height < WIDE[1], "the window must show the whole section"
    assert axis_lines(image, top, top + height) == 1

    # 4. No p is Monte Carlo (3 tasks): no footnote about it.
    assert "(MC)" not in dom and "random sign patterns" not in dom

    # 5. The k note names the ks whose columns are shown.
    comparison = dom_section(dom, "comparison")
    assert re.findall(r'<th scope="col">pass@(\d+)</th>', comparison) == ["1", "2"]
    assert "k limited to 1, 2 (asked up to 10" in comparison and "at most" not in comparison

    # 6. Every trial: its transcript first, then its record and its streams by name.
    trials = dom_section(dom, "trials")
    entries = re.findall(r'<span class="trial"><span class="name"[^>]*>[^<]*</span>(.*?)</span>', trials)
    assert len(entries) == 18
    for links in entries:
        texts = re.findall(r">([^<]+)</a>", links)
        assert texts == ["transcript", "record", "turn 1", "turn 1 stderr", "version"]
        assert re.findall(r'href="([^"]+)"', links)[0].endswith("/transcript.html")
    assert "stream" not in trials

    # 7. Failure-cause rows start with the treatment; no cell starts with a dash.
    failures = dom_section(dom, "failures")
    rows = re.findall(r"<tr>(<td.*?)</tr>", failures)
    assert len(rows) == 3
    for row in rows:
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in row.split("</td>") if c]
        assert cells[0] in ("CONTROL", "SKILL") and not any(c.startswith(("-", "–", "—")) for c in cells), row


@pytest.mark.browser
def test_the_monte_carlo_footnote_shows_when_a_p_is_monte_carlo(chromium: Path, tmp_path: Path) -> None:
    page = tmp_path / "many.html"
    page.write_text(render_html(analysis_of(first_look(tasks=20))), encoding="utf-8")
    verdict = dom_section(run_chromium(chromium, tmp_path, page, "--dump-dom").stdout, "verdict")
    assert re.search(r'<td class="n">[\d.e-]+ \(MC\)</td>', verdict)
    assert "p marked (MC) comes\nfrom 20,000 random sign patterns" in verdict


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


# Written into a copy of the page only: what the browser drew outside its box, by its own layout.
MEASURE_CUTS = """<script>
const cut = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  const frame = svg.getBoundingClientRect();
  for (const text of svg.querySelectorAll("text")) {
    const r = text.getBoundingClientRect();
    const outside = r.left < frame.left - 1 || r.right > frame.right + 1;
    if (outside || r.top < frame.top - 1 || r.bottom > frame.bottom + 1) {
      cut.push(svg.id + ": " + text.textContent);
    }
  }
}
// A header shows its whole name when the name fits on one line, or wraps without overflowing. (An
// ellipsis clips the text's own boxes too: the name's width on one line is measured apart.)
for (const th of document.querySelectorAll("table.matrix thead th")) {
  const style = getComputedStyle(th);
  const probe = document.createElement("span");
  probe.style.cssText = "position: absolute; visibility: hidden; white-space: nowrap";
  probe.style.font = style.font;
  probe.textContent = th.textContent;
  document.body.appendChild(probe);
  const natural = probe.getBoundingClientRect().width;
  probe.remove();
  const room = th.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  if (!(natural <= room + 1 || (style.whiteSpace !== "nowrap" && th.scrollWidth <= th.clientWidth))) {
    cut.push("matrix header: " + th.title);
  }
}
document.body.setAttribute("data-cut", cut.join(" | "));
</script>"""


LONG_NAME = "DYNAMIC_SKILL_WITH_EXAMPLES_AND_REFERENCE_FILES"


def two_task_records() -> list[TrialRecord]:
    """Two tasks (an interval over tasks with one degree of freedom is wide): DYNAMIC_SKILL passes all,
    with scores 0.92 and 1.0, and costs the most; CONTROL fails one task; a treatment with a long name
    passes all."""
    records = trial_set(
        2,
        ("CONTROL", "DYNAMIC_SKILL", LONG_NAME),
        3,
        lambda t, treatment, i: "passed" if treatment != "CONTROL" or t == 0 else "failed",
    )
    first = records[0].task
    return [
        changed(r, weighted_score=0.92) if r.treatment == "DYNAMIC_SKILL" and r.task == first else r for r in records
    ]


@pytest.mark.browser
def test_intervals_stay_on_their_scale_and_no_label_or_name_is_cut(chromium: Path, tmp_path: Path) -> None:
    page = tmp_path / "two-tasks.html"
    page.write_text(render_html(analysis_of(two_task_records())), encoding="utf-8")
    copy = tmp_path / "measured-two-tasks.html"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE_CUTS + "</body>"), encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, copy, "--dump-dom", "--window-size=1300,2400").stdout
    cut = re.search(r'data-cut="([^"]*)"', dom)
    assert cut is not None and cut.group(1) == "", cut and cut.group(1)
    # The mean score 0.96 over two tasks: its t interval (0.45 to 1.47) ends at the top of the scale.
    comparison = dom_section(dom, "comparison")
    assert "0.96 [0.45, 1.00]" in comparison and "0.960 [0.452, 1.000]" in comparison
    matrix = dom_section(dom, "matrix")
    assert "DYNAMIC_SKILL" in matrix and LONG_NAME.replace("_", "_<wbr>") in matrix
