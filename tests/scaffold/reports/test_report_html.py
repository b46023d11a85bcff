"""report.html: content, self-containment, escaping, accessibility and size (no browser needed)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest

from scaffold.records import TrialRecord
from scaffold.reports import html as report_html
from scaffold.reports.analysis import build_analysis
from scaffold.reports.html import href, render_html
from tests.support.records import changed, dims, rec, suite, tasks
from tests.support.report_html import (
    EXCLUDED,
    LAYOUT_TREATMENTS,
    analysis_of,
    files_of,
    layout_outcome,
    rename,
    trial_set,
)
from tests.support.synthetic import synthetic_records, task_names, treatment_names


class Page(HTMLParser):
    """Every start tag with its attributes, the text, and the content of <style>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.style = ""
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
        self.text.append(data)

    def all(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def by_id(self, ident: str) -> dict[str, str]:
        found = [a for _, a in self.tags if a.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]


def layout_page() -> tuple[str, Page]:
    text = render_html(analysis_of(trial_set(12, LAYOUT_TREATMENTS, 4, layout_outcome)))
    return text, Page(text)


def matrix_cells(page: Page) -> list[dict[str, str]]:
    """The <td>s of the matrix body and footer, in document order."""
    tds, inside = [], False
    for tag, attrs in page.tags:
        if tag == "table":
            inside = attrs.get("class") == "matrix"
        elif tag == "td" and inside:
            tds.append(attrs)
    return tds


def assert_self_contained(text: str, page: Page) -> None:
    forbidden = {"script", "link", "img", "iframe", "object", "embed", "base", "frame", "audio", "video", "source"}
    assert not [t for t, _ in page.tags if t in forbidden]
    for tag, attrs in page.tags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)  # no event handlers
        assert "src" not in attrs and "srcset" not in attrs and "xlink:href" not in attrs, (tag, attrs)
        assert "url(" not in attrs.get("style", "")
        if "href" in attrs:
            parts = urlsplit(attrs["href"])
            assert not parts.scheme and not parts.netloc, f"external link in <{tag}>: {attrs['href']!r}"
    assert "url(" not in page.style and "@import" not in page.style and "@font-face" not in page.style
    assert not re.search(r"https?:", text, re.IGNORECASE)


def test_verdict_comes_first_then_every_section() -> None:
    text, page = layout_page()
    order = ["verdict", "comparison", "matrix", "cost", "dimensions", "spend", "quality", "failures", "trials"]
    positions = [text.index(f'<section id="{name}"') for name in order]
    assert positions == sorted(positions)
    verdicts = text[positions[0] : positions[1]]
    assert "SKILL_A" in verdicts and "improvement" in verdicts
    # verdict, 2 levels, cost, and the dimensions with a difference to chart: skill_invocation is N/A for
    # CONTROL (it installs no skill), so it gets one line instead of an empty axis.
    assert "skill_invocation" in build_dims()
    assert len(page.all("svg", role="img")) == 3 + 1 + len(build_dims()) - 1
    assert "<strong>skill_invocation</strong>: not compared: CONTROL has no score" in text


def build_dims() -> tuple[str, ...]:
    return analysis_of(trial_set(12, LAYOUT_TREATMENTS, 4, layout_outcome)).dimensions


def test_matrix_cells_are_coloured_by_pass_rate_with_the_value_as_text() -> None:
    text, page = layout_page()
    cells = matrix_cells(page)
    body, foot = cells[:-3], cells[-3:]
    assert len(body) == 12 * 3
    control, skill_a, skill_b = body[0::3], body[1::3], body[2::3]
    assert {c["class"] for c in control} == {"b0"} and {c["class"] for c in skill_a} == {"b10"}
    # SKILL_B passes (task % 5) of 4 trials: 0%, 25%, 50%, 75%, 100%, ...
    expected = ["b0", "b3", "b5", "b8", "b10"] * 2 + ["b0", "na"]
    assert [c["class"] for c in skill_b] == expected
    assert "task-011 × SKILL_B: 0/0 passed (N/A)" in skill_b[11]["title"]
    assert "task-001 × SKILL_B: 1/4 passed (25%)" in skill_b[1]["title"]
    assert [c["class"] for c in foot] == ["b0", "b10", "b5"]
    # The value is printed in the cell (not only its colour), N/A distinct from 0.
    row = re.search(r'<th scope="row" title="task-011">task-011</th>(.*?)</tr>', text)
    assert row is not None
    assert re.findall(r">([^<>]+)</a>", row.group(1)) == ["0", "100", "N/A*"]


def test_missing_pairs_are_not_run_not_zero() -> None:
    records = [
        r
        for r in trial_set(4, LAYOUT_TREATMENTS, 2, layout_outcome)
        if (r.task, r.treatment) != ("task-002", "SKILL_A")
    ]
    page = Page(render_html(analysis_of(records)))
    cell = matrix_cells(page)[2 * 3 + 1]
    assert cell["class"] == "na" and cell["title"] == "task-002 × SKILL_A: no trials"


def test_comparison_charts_show_intervals_and_text_values() -> None:
    text, page = layout_page()
    chart = text[text.index('id="chart-pass-rate"') : text.index("</svg>", text.index('id="chart-pass-rate"'))]
    assert chart.count('class="mark"') == 3 and chart.count('class="err"') == 3
    assert "0% [0%, 0%]" in chart and "100% [100%, 100%]" in chart
    assert re.search(r"SKILL_B: 4\d% \[\d+%, \d+%\]", chart)
    for svg in page.all("svg", role="img"):
        title, desc = svg["aria-labelledby"].split()
        page.by_id(title)
        page.by_id(desc)


def test_page_is_self_contained_and_printable() -> None:
    text, page = layout_page()
    assert_self_contained(text, page)
    assert "@media print" in page.style and "print-color-adjust: exact" in page.style
    assert "position: sticky" in page.style


HOSTILE_TASK = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
HOSTILE_TREATMENT = "https://evil.example/x?a=1#f"


def test_hostile_names_are_escaped_everywhere() -> None:
    records = rename(
        trial_set(3, LAYOUT_TREATMENTS, 2, layout_outcome),
        {"task-000": HOSTILE_TASK, "task-001": "javascript:alert(3)", "task-002": "//evil.example/share"},
        {"SKILL_B": HOSTILE_TREATMENT},
    )
    text = render_html(build_analysis(records, files=files_of(records, prefix="exp/trials")))
    page = Page(text)
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert not [t for t, a in page.tags for k in a if k.startswith("on")]
    for _, attrs in page.tags:
        if "href" in attrs:
            parts = urlsplit(attrs["href"])
            assert not parts.scheme and not parts.netloc, attrs["href"]
    # The names are still shown, as text, and every trial link still finds its file.
    shown = "".join(page.text)
    assert HOSTILE_TASK in shown and HOSTILE_TREATMENT in shown
    targets = {unquote(a["href"]) for a in page.all("a") if not a["href"].startswith("#")}
    assert all(f"exp/trials/{r.case_id}/record.json" in targets for r in records)


def test_href_never_yields_a_scheme_or_network_path() -> None:
    for path in ("a:b/record.json", "//host/share/record.json", "/abs/x y#z?.json", "javascript:alert(1)"):
        parts = urlsplit(href(path))
        assert not parts.scheme and not parts.netloc and not parts.query and not parts.fragment
        assert unquote(href(path)).lstrip("/") == path.lstrip("/")


def test_small_reports_link_every_trial_record_and_stream() -> None:
    records = trial_set(4, LAYOUT_TREATMENTS, 3, layout_outcome)
    page = Page(render_html(analysis_of(records)))
    hrefs = {a["href"] for a in page.all("a")}
    for r in records:
        assert f"exp/trials/{r.case_id}/record.json" in hrefs
        assert f"exp/trials/{r.case_id}/agent.turn-1.jsonl" in hrefs
    anchors = {a["href"][1:] for a in page.all("a") if re.fullmatch(r"#c\d+-\d+", a["href"])}
    assert len(anchors) == 4 * 3
    for anchor in anchors:
        page.by_id(anchor)  # every matrix link lands on its cell's trials


def test_large_reports_link_folders_and_the_trials_worth_a_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_html, "INLINE_TRIALS", 10)
    records = trial_set(4, LAYOUT_TREATMENTS, 6, layout_outcome)
    # One failed and one excluded trial among SKILL_A's passes: they are the ones linked first.
    records = [changed(r, verdict="failed") if r.case_id == "task-000-SKILL_A-r5" else r for r in records]
    text = render_html(analysis_of(records))
    page = Page(text)
    record_links = [a["href"] for a in page.all("a") if a["href"].endswith("record.json")]
    assert len(record_links) == 4 * 3 * report_html.CELL_SAMPLE
    row = text[text.index('<tr id="c0-1">') : text.index("</tr>", text.index('<tr id="c0-1">'))]
    assert 'href="exp/trials/"' in row and "task-000-SKILL_A-r*" in row
    assert "+3 more" in row
    first = re.findall(r"trials/([^/]+)/record\.json", row)
    assert first[0] == "task-000-SKILL_A-r5"
    assert "more than this page lists one by one" in text


def trials_of(tasks: int, treatments: int, trials: int) -> list[TrialRecord]:
    return list(synthetic_records(task_names(tasks), treatment_names(treatments), trials, seed=5))


def test_size_grows_with_cells_not_with_trials() -> None:
    """At 100 tasks x 10 treatments the page stays far under 2 MB, whether 4 or 8 trials per cell."""
    sizes = []
    for trials in (4, 8):
        records = trials_of(100, 10, trials)
        assert len(records) > report_html.INLINE_TRIALS
        sizes.append(len(render_html(analysis_of(records)).encode()))
    assert sizes[1] < 1.05 * sizes[0]
    assert sizes[1] < 1_600_000


def test_empty_and_baseline_less_analyses_render() -> None:
    empty = Page(render_html(build_analysis([])))
    assert "no trial records were found" in "".join(empty.text)
    records = trial_set(3, ("A", "B"), 2, lambda i, t, n: "passed")
    text = render_html(analysis_of(records, baseline="CONTROL"))
    assert "baseline 'CONTROL' has no trials" in text.replace("&#39;", "'")
    assert "Insufficient clean data" in text


def test_long_lists_stop_at_the_limit_and_say_how_many_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_html, "LIST_LIMIT", 5)
    # SKILL_B's task 11 is all excluded (4 trials); make every CONTROL trial of tasks 0-1 excluded too.
    records = trial_set(12, LAYOUT_TREATMENTS, 4, layout_outcome)
    records = [
        changed(r, verdict="error", noise=EXCLUDED, weighted_score=None, dimensions=())
        if r.treatment == "CONTROL" and r.task in ("task-000", "task-001")
        else r
        for r in records
    ]
    text = render_html(analysis_of(records))
    section = text[text.index('<section id="quality"') : text.index('<section id="failures"')]
    assert "Excluded trials (12)" in section
    assert section.count("rate_limited</td>") == 5
    assert "And 7 more" in section
    # The counts per reason stay complete.
    assert "rate_limited 8" in section and "rate_limited 4" in section


def test_judge_scores_are_shown_beside_the_rubric_not_in_it() -> None:
    records = [
        changed(
            r,
            dimensions=(
                *r.dimensions,
                {"name": "judge_quality", "weight": 1.0, "score": 0.9, "reason": "j", "source": "judge"},
            ),
        )
        for r in trial_set(4, LAYOUT_TREATMENTS, 2, layout_outcome)
    ]
    text = render_html(analysis_of(records))
    dims = text[text.index('<section id="dimensions"') : text.index('<section id="judge"')]
    judge = text[text.index('<section id="judge"') : text.index('<section id="spend"')]
    assert "chart-dim-" in dims and "judge_quality" not in dims
    assert "LLM-judge overlay (rule vs judge)" in judge and '<a href="#judge">LLM judge</a>' in text
    assert "<td>judge_quality</td><td>SKILL_A</td>" in judge


def test_the_verdict_shows_tasks_and_trials_needed_and_the_exclusion_bounds() -> None:
    # Both sample sizes and what the excluded trials could do, in the verdict.
    excluded = {"category": "excluded", "reason": "api_timeout", "source": "structured", "evidence": {}}
    records = suite({"CONTROL": tasks(8, "PPFF"), "SKILL": tasks(8, "PPPF")})
    records += [rec(f"t{i}", "SKILL", 4 + k, "error", noise=excluded) for i in range(8) for k in (1, 2)]
    page = render_html(build_analysis(records))
    assert "tasks (and trials) for a 10-point effect" in page
    assert "; 388 trials per treatment on one task</td>" in page
    assert "excluded trials: 0 of 32 CONTROL, 16 of 48 SKILL (Fisher&#39;s exact p = 0.000104)" in page
    assert "counted as failures of SKILL and passes of CONTROL: no significant difference" in page
    spread = suite({"CONTROL": tasks(6, "PF"), "SKILL": tasks(3, "PP") | {"t3": "FF", "t4": "PF", "t5": "PP"}})
    assert re.search(r">\d+ tasks; \d+ trials per treatment on one task</td>", render_html(build_analysis(spread)))


def test_each_trial_says_how_many_files_the_agent_changed() -> None:
    records = trial_set(2, ("CONTROL", "SKILL"), 2, lambda task, treatment, trial: "passed")
    records[0] = changed(records[0], changes={"added": 2, "modified": 1, "deleted": 0})
    page = Page(render_html(analysis_of(records)))
    transcripts = [a for a in page.all("a") if a["href"].endswith("/transcript.html")]
    assert len(transcripts) == len(records)
    assert [a.get("title", "") for a in transcripts].count("3 file(s) changed") == 1
    names = [s for s in page.all("span", **{"class": "name"}) if "changed by the agent" in s.get("title", "")]
    assert len(names) == 1 and names[0]["title"].endswith("; 3 file(s) changed by the agent")


def test_score_differences_without_spread_are_said_in_words_and_drawn_without_a_bar() -> None:
    # Every trial of both treatments scores 1.0 on every dimension: each paired difference is 0.
    records = [
        rec(f"t{i}", treatment, k, dimensions=dims(1.0, 1.0)) for i in range(4) for treatment in ("CONTROL", "SKILL")
        for k in (1, 2)
    ]  # fmt: skip
    text = render_html(build_analysis(records))
    assert "+0.000 [+0.000, +0.000]" not in text and "[+0.00, +0.00]" not in text
    said = "no difference on any of the 4 paired tasks (no spread, so no interval)"
    assert text.count(f'<td class="n">{said}</td>') == 3  # the verdict's score, completion, skill_invocation
    chart = text[text.index('id="chart-dim-0"') : text.index("</svg>", text.index('id="chart-dim-0"'))]
    assert chart.count('class="mark"') == 1 and 'class="err"' not in chart
    assert "+0.00 n=4, the same on every task: no spread, no interval" in chart
