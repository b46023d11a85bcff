"""report.html as a new user first saw it: what the page says when there is nothing to draw,
footnotes only when they apply, trial links named by what they open, transcripts linked from report.html
and summary.md (no browser needed; test_report_html_browser.py renders the same pages)."""

from __future__ import annotations

import re

import pytest

from scaffold.reports import html as report_html
from scaffold.reports.html import render_html, stream_label
from scaffold.reports.summary import render_summary
from tests.support.records import changed
from tests.support.report_html import LAYOUT_TREATMENTS, analysis_of, first_look, layout_outcome, trial_set


def section(text: str, name: str) -> str:
    start = text.index(f'<section id="{name}"')
    return text[start : text.index("</section>", start)]


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("agent.turn-1.jsonl", "turn 1"),
        ("agent.turn-12.jsonl", "turn 12"),
        ("agent.turn-1.stderr.log", "turn 1 stderr"),
        ("agent.version.log", "version"),
        ("agent.version.stderr.log", "version stderr"),
        ("agent.stdout.log", "stdout"),
        ("agent.stderr.log", "stderr"),
        ("exp/trials/t-A-r1/agent.stdout.log", "stdout"),
        ("agent.trace.json", "trace json"),
    ],
)
def test_streams_are_named_by_what_they_are(name: str, label: str) -> None:
    assert stream_label(name) == label


def test_every_trial_links_its_transcript_first_then_record_and_named_streams() -> None:
    records = first_look()
    text = render_html(analysis_of(records, streams=STREAMS))
    trials = section(text, "trials")
    assert "stream" not in trials
    spans = re.findall(r'<span class="trial"><span class="name"[^>]*>[^<]*</span>(.*?)</span>', trials)
    assert len(spans) == len(records)
    for r, links in zip(sorted(records, key=lambda r: (r.task, r.treatment, r.trial)), spans, strict=True):
        assert re.findall(r">([^<]+)</a>", links) == ["transcript", "record", "turn 1", "turn 1 stderr", "version"]
        hrefs = re.findall(r'href="([^"]+)"', links)
        assert hrefs[0] == f"exp/trials/{r.case_id}/transcript.html"
        assert hrefs[1] == f"exp/trials/{r.case_id}/record.json"


def test_above_the_threshold_each_cell_names_its_transcripts_and_links_those_worth_a_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(report_html, "INLINE_TRIALS", 10)
    text = render_html(analysis_of(trial_set(4, LAYOUT_TREATMENTS, 6, layout_outcome)))
    row = text[text.index('<tr id="c0-1">') : text.index("</tr>", text.index('<tr id="c0-1">'))]
    assert "<code>task-000-SKILL_A-r*/transcript.html</code>" in row
    assert row.count('/transcript.html">transcript</a>') == report_html.CELL_SAMPLE
    assert "each with its\n<code>transcript.html</code>" in text


def test_excluded_and_flagged_trials_link_their_transcript() -> None:
    records = trial_set(12, LAYOUT_TREATMENTS, 4, layout_outcome)  # SKILL_B's task 11 is excluded
    quality = section(render_html(analysis_of(records)), "quality")
    link = '<a href="exp/trials/task-011-SKILL_B-r1/transcript.html" title="transcript">task-011-SKILL_B-r1</a>'
    assert link + ' <a href="exp/trials/task-011-SKILL_B-r1/record.json">record</a>' in quality


def test_nothing_to_plot_is_one_line_not_an_empty_chart() -> None:
    text = render_html(analysis_of(first_look()))
    cost = section(text, "cost")
    assert "<svg" not in cost and "no data to plot" not in text
    assert "Nothing to plot: no treatment has both a mean cost per trial and a pass rate" in cost
    assert "CONTROL 0/9, SKILL 0/9" in cost
    # With costs the chart is back.
    costly = [changed(r, trajectory={"agent": "claude-code", "cost_usd": 0.25}) for r in first_look()]
    assert 'id="chart-cost"' in section(render_html(analysis_of(costly)), "cost")


def test_a_dimension_without_any_score_is_one_line_not_an_empty_axis() -> None:
    dims = section(render_html(analysis_of(first_look())), "dimensions")
    assert 'id="chart-dim-0"' in dims  # completion has a difference
    assert 'id="chart-dim-1"' not in dims
    assert (
        "<strong>skill_invocation</strong>: not applicable: no trial has a score (N/A in every trial), "
        "so there is nothing to compare." in dims
    )


def test_the_monte_carlo_footnote_only_when_a_p_is_monte_carlo() -> None:
    few = section(render_html(analysis_of(first_look())), "verdict")
    assert "(MC)" not in few and "random sign patterns" not in few
    many = section(render_html(analysis_of(first_look(tasks=20))), "verdict")
    assert re.search(r'<td class="n">[\d.e-]+ \(MC\)</td>', many)
    assert "p marked (MC) comes\nfrom 20,000 random sign patterns" in many


def test_the_k_note_names_the_ks_shown() -> None:
    text = render_html(analysis_of(first_look()))
    comparison = section(text, "comparison")
    shown = re.findall(r'<th scope="col">pass@(\d+)</th>', comparison)
    assert shown == ["1", "2"]
    assert "k limited to 1, 2 (asked up to 10; k runs 1, 2, 5, 10, ...)" in comparison
    assert "at most 3" not in text
    summary = render_summary(analysis_of(first_look()), "exp")
    assert "k limited to 1, 2 (asked up to 10" in summary and "| pass@1 | pass@2 | pass^1 | pass^2 |" in summary


def test_summary_gives_the_transcript_of_each_failed_and_errored_trial() -> None:
    records = first_look()
    summary = render_summary(analysis_of(records), "exp")
    failed = summary[summary.index("## Failed trials") : summary.index("## Errored trials")]
    errored = summary[summary.index("## Errored trials") :]
    assert "| trial | weighted score | why | transcript |" in failed
    for r in records:
        line = f"`exp/trials/{r.case_id}/transcript.html` |"
        if r.verdict == "failed":
            assert re.search(rf"^\| {r.case_id} \|.*\| {re.escape(line)}$", failed, re.MULTILINE)
        elif r.verdict == "error":
            assert re.search(rf"^\| {r.case_id} \|.*\| {re.escape(line)}$", errored, re.MULTILINE)
        else:
            assert r.case_id not in failed + errored


STREAMS = ("agent.turn-1.jsonl", "agent.turn-1.stderr.log", "agent.version.log")
