"""transcript.html (scaffold.reports.transcript, .transcripts): what it shows, escaping, bounds, old trials."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

from scaffold.cli.main import main
from scaffold.experiment import CHANGES_FILE, INSTRUCTION_FILE, RECORD_FILE, TRANSCRIPT_FILE
from scaffold.records import TrialRecord
from scaffold.records.files import read_record, write_record
from scaffold.reports.transcript import BUDGETS, PAGE_LIMIT, Clip, clip_html, href, render_transcript
from scaffold.reports.transcripts import read_folder, write_transcript, write_transcripts
from tests.support.dom import Element, parse_dom
from tests.support.records import rec
from tests.support.synthetic import synthetic_records, task_names, treatment_names, write_experiment
from tests.support.transcripts import CHANGES, EVIL, claude_lines, long_trial
from tests.support.transcripts import transcript_record as record


def folder(tmp_path: Path, rec_: TrialRecord, *, lines: list[str] | None = None, changes: Any = CHANGES) -> Path:
    trial = tmp_path / rec_.case_id.replace("<", "_").replace(">", "_").replace("'", "_")
    trial.mkdir(parents=True)
    write_record(trial / RECORD_FILE, rec_)
    (trial / INSTRUCTION_FILE).write_text(f"Fix the bug. {EVIL}\n", encoding="utf-8")
    (trial / "agent.turn-1.jsonl").write_text("\n".join(lines or claude_lines(1, 3, "ok")) + "\n", encoding="utf-8")
    (trial / "agent.turn-1.stderr.log").write_text(f"warning {EVIL}\n", encoding="utf-8")
    if changes is not None:
        (trial / CHANGES_FILE).write_text(json.dumps(changes), encoding="utf-8")
    (trial / "validation").mkdir()
    (trial / "validation" / "test_x.stdout.log").write_text(f"FAILED title {EVIL}\n", encoding="utf-8")
    return trial


def page_of(trial: Path) -> tuple[str, Element]:
    html = write_transcript(trial, read_record(trial / RECORD_FILE)).read_text(encoding="utf-8")
    return html, parse_dom(html)


def test_every_section_is_shown_and_every_text_escaped(tmp_path: Path) -> None:
    html, dom = page_of(folder(tmp_path, record()))
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "Fix the bug." in dom.by_id("instruction").text()
    assert "report-skill" in dom.by_id("instruction").all(cls="skill")[0].text()
    turns = dom.by_id("turns").all("article", "turn")
    assert len(turns) == 1
    calls = turns[0].all(cls="tool-call")
    assert [c.attrs["data-tool"] for c in calls] == ["Bash"] * 3
    assert [e.text() for e in turns[0].all(cls="exit-code")] == ["exit 0", "exit 0", "exit 2"]
    assert "echo 0 <script>" in calls[0].text() and "ok" in calls[0].all(cls="result")[0].text()
    stats = turns[0].all(cls="turn-stats")[0].text()
    assert "$0.2500" in stats and "1.5 s" in stats and "100 in, 50 out" in stats
    assert "WebFetch" in turns[0].all(cls="denial")[0].text()
    assert "warning <script>" in turns[0].all(cls="stderr")[0].text()
    changes = dom.by_id("changes")
    assert [r.attrs["class"] for r in changes.all("tr")[1:]] == ["added", "modified", "deleted"]
    diff = changes.all("pre", "diff")
    assert len(diff) == 1
    assert [(s.attrs["class"], s.text()) for s in diff[0].all("span")][-2:] == [
        ("del", "-old"),
        ("add", f"+new {EVIL}"),
    ]
    assert "binary" in changes.text() and "too large" in changes.text()
    checks = dom.by_id("checks")
    assert "title <script>" in checks.text() and "FAILED title" in checks.all(cls="validation-output")[0].text()
    rows = dom.by_id("dimensions").all("tr", "dimension")
    assert [(r.all(cls="name")[0].text(), r.all(cls="score")[0].text()) for r in rows] == [
        ("completion", "0.50"),
        ("skill_invocation", "N/A"),
        ("output_quality", "0.80"),
    ]
    assert "judge" in rows[2].classes and "half <script>" in rows[0].text()
    assert "enabled_and_successful" in dom.by_id("judge").text()
    assert dom.by_id("noise-category").text() == "flagged" and "<script>" in dom.by_id("noise").text()
    links = {a.attrs["href"] for a in dom.by_id("files").all("a")}
    assert {"./record.json", "./agent.turn-1.jsonl", "./changes.json", "./instruction.md"} <= links


def test_the_model_comes_from_the_turns_when_none_was_asked_for(tmp_path: Path) -> None:
    # Run with the agent's default model: the record names none, every turn's stream names the one used.
    default = record(agent={"name": "claude-code", "model": None, "version": "2.1.112"})
    _, dom = page_of(folder(tmp_path, default))
    facts = dict(zip((d.text() for d in dom.all("dt")), (d.text() for d in dom.all("dd")), strict=True))
    assert facts["model"] == "m (as the turns name it; none was asked for)"
    _, asked = page_of(folder(tmp_path / "asked", record()))
    assert (
        dict(zip((d.text() for d in asked.all("dt")), (d.text() for d in asked.all("dd")), strict=True))["model"]
        == "claude-sonnet-4-5"
    )


def test_an_excluded_trial_has_an_excluded_badge_with_its_reason(tmp_path: Path) -> None:
    noise = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}
    _, dom = page_of(folder(tmp_path, record(noise=noise)))
    verdict = dom.by_id("verdict")
    (badge,) = verdict.all("span", "badge")
    assert badge.text() == "excluded" and badge.attrs["class"] == "badge excluded"
    assert dom.by_id("verdict-note").text() == "rate_limited: left out of every figure (recorded as failed)"
    counted, _ = page_of(folder(tmp_path / "counted", record()))  # flagged: counted, so its verdict shows
    assert '<span class="badge failed">failed</span>' in counted and 'id="verdict-note"' not in counted


def test_each_time_says_what_it_measures(tmp_path: Path) -> None:
    _, dom = page_of(folder(tmp_path, record(duration_s=62.5, phases={"workspace_s": 3.0, "agent_s": 41.0})))
    facts = dict(zip((d.text() for d in dom.all("dt")), (d.text() for d in dom.all("dd")), strict=True))
    assert facts["trial time"] == "62.5 s, workspace setup to scoring"
    assert facts["phases"] == "workspace 3.0 s, agent 41.0 s"
    stats = dom.by_id("turns").all(cls="turn-stats")[0].text()
    assert "time (agent-reported): 1.5 s" in stats


def test_an_old_trial_without_instruction_changes_or_streams_still_renders(tmp_path: Path) -> None:
    old = rec("t", "CONTROL", 1, "passed", agent={"name": "oracle"})
    trial = tmp_path / "t-CONTROL-r1"
    trial.mkdir()
    write_record(trial / RECORD_FILE, old)
    _, dom = page_of(trial)
    assert "not recorded" in dom.by_id("instruction").text()
    assert "not recorded" in dom.by_id("changes").text()
    assert "no conversation turns" in dom.by_id("turns").text()
    assert "no dimensions" in dom.by_id("dimensions").text()
    assert "not enabled" in dom.by_id("judge").text()


def test_an_oracle_trial_shows_its_output(tmp_path: Path) -> None:
    oracle = rec("t", "CONTROL", 1, "passed", agent={"name": "oracle"}, streams=("agent.stdout.log",))
    trial = tmp_path / "t-CONTROL-r1"
    trial.mkdir()
    write_record(trial / RECORD_FILE, oracle)
    (trial / "agent.stdout.log").write_text("solved\n", encoding="utf-8")
    _, dom = page_of(trial)
    assert "solved" in dom.by_id("turns").all(cls="output")[0].text()


def test_a_changes_file_of_another_shape_is_named_not_fatal(tmp_path: Path) -> None:
    trial = folder(tmp_path, record(), changes=["not", "an", "object"])
    _, dom = page_of(trial)
    assert "not a JSON object" in dom.by_id("changes").text() and dom.by_id("turns").all(cls="turn")


@pytest.mark.parametrize("line", ["line of output <b>\n", "<\"&'>\n", "日本語のテキスト😀\n"])
def test_a_200_turn_trial_with_huge_outputs_stays_under_the_limit(line: str) -> None:
    """Whatever the text (escaping makes ``<`` four bytes, UTF-8 a character up to four): under the limit
    with the full budgets (a page re-rendered with smaller ones, the last resort, would be under 1 MB)."""
    page = render_transcript(long_trial(200, line=line))
    size = len(page.encode("utf-8"))
    assert 1_200_000 < size <= PAGE_LIMIT, size
    assert sum(BUDGETS.values()) < PAGE_LIMIT - 40_000  # room for the fixed markup and the CSS
    dom = parse_dom(page)
    shown = dom.by_id("turns").all("article", "turn")
    assert len(shown) == 200  # every turn, each with a share of the page
    assert "prompt: reply · source: simulator" in shown[1].all("h3")[0].text()  # turn 1's reply came from it
    assert "decision point" in shown[0].all(cls="decision")[0].text()
    first = shown[0].all(cls="tool-call")[0]
    assert "more characters in agent.turn-1.jsonl" in first.text()
    assert "more events not shown: see agent.turn-1.jsonl" in shown[0].text()
    assert "more diff lines in changes.json" in dom.by_id("changes").text()
    assert dom.by_id("dimensions").all("tr", "dimension")  # later sections keep their own budget


def test_a_long_result_shows_its_head_and_the_full_text_one_click_away(tmp_path: Path) -> None:
    trial = folder(tmp_path, record(), lines=claude_lines(1, 1, "x" * 100_000))
    _, dom = page_of(trial)
    result = dom.by_id("turns").all(cls="tool-call")[0].all(cls="result")[0]
    head, full = result.all("pre")
    assert len(head.text()) == 2_000 and head.text().startswith("Exit code 2\nxxx")
    assert result.all("details") and len(full.text()) == 65_536
    assert "34,476 more characters in agent.turn-1.jsonl" in result.text()


def test_comet_report_transcripts_rewrites_every_trial(tmp_path: Path, capsys: Any) -> None:
    records = synthetic_records(task_names(11), treatment_names(2), 10)  # 220 trials: the forked path
    experiment = write_experiment(tmp_path / "logs", records)
    assert main(["report", str(experiment.root), "--transcripts"]) == 0
    assert "wrote 220 transcript(s)" in capsys.readouterr().out
    pages = sorted(experiment.trials_dir.glob(f"*/{TRANSCRIPT_FILE}"))
    assert len(pages) == 220
    dom = parse_dom(pages[0].read_text(encoding="utf-8"))
    assert dom.by_id("turns").all(cls="turn") and dom.by_id("dimensions").all("tr", "dimension")
    assert write_transcripts([experiment.root]).written == 220  # again, in place


def test_read_folder_sorts_turns_by_number(tmp_path: Path) -> None:
    streams = tuple(f"agent.turn-{i}.jsonl" for i in (1, 10, 2))
    trial = folder(tmp_path, record(streams=streams))
    for name in streams:
        (trial / name).write_text("\n".join(claude_lines(1, 1, "ok")), encoding="utf-8")
    assert [t.index for t in read_folder(trial, read_record(trial / RECORD_FILE)).turns] == [1, 2, 10]


# The clip macro transcript.html.j2 had before clip_html replaced it: the page's bytes must not change.
_CLIP_MACRO = """{% macro clip(c, cls="") -%}
<pre class="text {{ cls }}">{{ c.head }}</pre>
{% if c.full is not none %}
<details class="more"><summary>full text ({{ "{:,}".format(c.size) }} characters)</summary><pre class="text {{ cls }}">{{ c.full }}</pre></details>
{% endif %}
{% if c.missing %}
<p class="cut">… {{ "{:,}".format(c.missing) }} more characters{% if c.file %} in <a href="{{ c.file | href }}">{{ c.file }}</a>{% endif %}</p>
{% endif %}
{%- endmacro %}
"""  # noqa: E501 - the macro's own lines

_MARKUP = st.text(max_size=8).map(lambda s: Markup(escape(s)))


@settings(max_examples=300, deadline=None)
@given(
    head=_MARKUP,
    full=st.none() | _MARKUP,
    missing=st.integers(min_value=0, max_value=10**7),
    file=st.text(max_size=12),
    size=st.integers(min_value=0, max_value=10**7),
    cls=st.sampled_from(["", "input", "result", "instruction", 'a"<b>&']),
)
def test_clip_html_is_the_macro_it_replaced_byte_for_byte(
    head: Markup, full: Markup | None, missing: int, file: str, size: int, cls: str
) -> None:
    env = Environment(undefined=StrictUndefined, autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["href"] = href
    macro = env.from_string(_CLIP_MACRO + "{{ clip(c, cls) }}|{{ clip(c) }}")
    c = Clip(head, full, missing, file, size)
    assert macro.render(c=c, cls=cls) == f"{clip_html(c, cls)}|{clip_html(c)}"
