"""The report files: results.jsonl (schema and its documentation), the report configuration,
comparison_report.md (the original Comet eval's sections) and the extended summary.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from scaffold.errors import ReportError
from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import ROW_LIMIT, render_comparison
from scaffold.reports.config import ENV_VAR, ReportOutputs, parse_report_config, resolve_outputs
from scaffold.reports.html import render_html
from scaffold.reports.model import TrialFiles
from scaffold.reports.results import result_lines, result_row
from scaffold.reports.summary import render_summary
from tests.support.factories import REPO
from tests.support.records import changed, dims, rec, suite, tasks

# --- results.jsonl ----------------------------------------------------------------------------------------


def test_a_row_has_every_documented_field_and_nothing_else() -> None:
    row = result_row(rec("a", "S", 1), TrialFiles("trials/a-S-r1/record.json", ("trials/a-S-r1/agent.log",)))
    documented = re.findall(r"^\| `(\w+)` \|", (REPO / "docs" / "results-schema.md").read_text(), re.MULTILINE)
    assert list(row) == documented
    assert row["schema"] == "comet-eval/results" and row["schema_version"] == 1
    assert row["record"] == "trials/a-S-r1/record.json" and row["streams"] == ["trials/a-S-r1/agent.log"]


def test_rows_say_null_for_unknown_never_nan_or_zero() -> None:
    errored = result_row(
        rec("a", "S", 1, "error", trajectory={"agent": "claude-code", "tokens": None, "cost_usd": None})
    )
    assert errored["passed"] is None and errored["weighted_score"] is None
    assert errored["tokens"] is None and errored["cost_usd"] is None
    assert errored["record"] is None and errored["streams"] == []
    # A record file cannot hold NaN (scaffold.records.files reads it as None), but a record made in memory can.
    nan_score = result_row(msgspec.structs.replace(rec("a", "S", 2, "failed"), weighted_score=float("nan")))
    assert nan_score["weighted_score"] is None and nan_score["passed"] is False


def test_rows_carry_noise_dimensions_judge_and_failures() -> None:
    noise = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {"status": 429}}
    check = {"name": "tests pass", "status": "failed", "source": "script:t.py", "reason": ""}
    row = result_row(
        rec(
            "a",
            "S",
            1,
            "failed",
            noise=noise,
            dimensions=dims(0.5, None, judge=0.9),
            checks=(check,),
            hard_failures=("no skill",),
            errors=({"type": "TimeoutError", "message": "m"},),
            trajectory={"agent": "claude-code", "tokens": {"input": 3, "output": 2}, "cost_usd": 0.5},
        )
    )
    assert row["noise"] == {"category": "excluded", "reason": "rate_limited", "source": "structured"}
    assert row["analysis_set"] is False
    assert row["dimensions"] == {"completion": 0.5, "skill_invocation": None}
    assert row["judge"] == {"output_quality": 0.9}
    assert row["failed_checks"] == ["tests pass"] and row["hard_failures"] == ["no skill"]
    assert row["errors"] == ["TimeoutError"]
    assert row["tokens"] == {"input": 3, "output": 2, "cache_read": 0, "cache_write": 0}


def test_lines_are_sorted_json_one_per_trial() -> None:
    records = [rec("b", "S", 1), rec("a", "T", 2), rec("a", "T", 1), rec("a", "S", 1)]
    lines = list(result_lines(records))
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    rows = [json.loads(line) for line in lines]
    assert [r["case_id"] for r in rows] == ["a-S-r1", "a-T-r1", "a-T-r2", "b-S-r1"]


# --- report configuration ---------------------------------------------------------------------------------


def test_the_seed_configuration_and_its_defaults() -> None:
    assert parse_report_config('{"report_outputs": {"markdown": true, "html": true}}', "f") == ReportOutputs(True, True)
    assert parse_report_config('{"report_outputs": {}}', "f") == ReportOutputs(True, False)
    assert resolve_outputs() == ReportOutputs(True, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{nope", "f.json: not valid JSON"),
        ("[]", "f.json: needs an object with a 'report_outputs' object"),
        ('{"report_outputs": {"pdf": true}}', "f.json: report_outputs.pdf is not known; the keys are markdown, html"),
        ('{"report_outputs": {"html": "yes"}}', "f.json: report_outputs.html must be true or false (got 'yes')"),
    ],
)
def test_configuration_mistakes_name_the_file_and_field(text: str, message: str) -> None:
    with pytest.raises(ReportError, match=re.escape(message)):
        parse_report_config(text, "f.json")


def test_file_over_environment_and_the_html_flag_over_both(tmp_path: Path) -> None:
    config = tmp_path / "report.json"
    config.write_text('{"report_outputs": {"markdown": false, "html": false}}')
    inline = {ENV_VAR: '{"report_outputs": {"html": true}}'}
    assert resolve_outputs(environ=inline) == ReportOutputs(True, True)
    assert resolve_outputs(environ={ENV_VAR: str(config)}) == ReportOutputs(False, False)
    assert resolve_outputs(config_file=config, environ=inline) == ReportOutputs(False, False)
    assert resolve_outputs(html=True, config_file=config) == ReportOutputs(False, True)
    with pytest.raises(ReportError, match=r"\$COMET_EVAL_REPORT_CONFIG=/nope.json: cannot be read"):
        resolve_outputs(environ={ENV_VAR: "/nope.json"})
    with pytest.raises(ReportError, match=r"--report-config .*missing.json: cannot be read"):
        resolve_outputs(config_file=tmp_path / "missing.json")


# --- comparison_report.md and summary.md ------------------------------------------------------------------

SECTIONS = [
    "Metric guide",
    "Data quality",
    "Run counts",
    "pass@k and pass^k",
    "Task outcomes",
    "Spend",
    "Runtime",
    "Rubric dimensions",
    "Dimension weights",
    "Excluded runs",
    "Flagged runs",
    "Raw versus analysis sensitivity",
    "Failure attribution",
    "Verdict",
    "LLM-judge overlay (rule vs judge)",
]


def noisy_suite() -> list:  # type: ignore[type-arg]
    records = suite({"CONTROL": tasks(6, "FFX"), "SKILL": tasks(6, "PPG")})
    records += [
        rec("t0", "CONTROL", 9, profile="generic", dimensions=dims(0.5, None, judge=0.25)),
        rec("t0", "SKILL", 9, profile="generic", dimensions=dims(1.0, 1.0, judge=0.75)),
    ]
    return records


def test_the_comparison_report_has_the_seed_sections_in_order() -> None:
    text = render_comparison(build_analysis(noisy_suite()), "exp")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings == SECTIONS
    assert text.startswith("# Comparison report: exp\n")
    assert "- **SKILL** vs CONTROL: **improvement**" in text
    assert "| CONTROL | 19 | 13 | 0 | 6 | rate_limited 6 | — | 32% | — |" in text
    assert "| SKILL | 19 | 13 | 6 | 0 | — | — | 0% | validator_assumption 6 |" in text
    assert "| t0-CONTROL-r3 | exp | failed | rate_limited | structured | {} |" in text
    assert "| generic | completion | 3.00 | 75.0% |" in text
    assert "| output_quality | CONTROL | 1 | 0.250 ± N/A | — |" in text
    assert "| output_quality | SKILL | 1 | 0.750 ± N/A | insufficient (1 paired task(s), 3 needed) |" in text
    assert "### SKILL vs CONTROL: improvement" in text
    assert "| SKILL | 0 | 100.0% [100.0%, 100.0%] | 100.0% [100.0%, 100.0%] | +0.0% |" in text


def test_an_empty_analysis_renders_and_says_why() -> None:
    text = render_comparison(build_analysis([]))
    assert "> **Note:** no trial records were found" in text
    assert "No treatment to compare." in text
    assert "judge" not in text.lower()


def test_long_lists_are_cut_and_cells_escaped() -> None:
    noise = {
        "category": "flagged",
        "reason": "suspected_harness_trigger",
        "source": "structured",
        "evidence": {"error": "a | b\nnext line"},
    }
    records = [rec(f"t{i}", "S", 1, noise=noise) for i in range(ROW_LIMIT + 5)]
    text = render_comparison(build_analysis(records, baseline="S"))
    assert "… and 5 more (every trial is in results.jsonl)." in text
    assert text.count("| suspected_harness_trigger |") == ROW_LIMIT
    assert '{"error": "a \\| b\\nnext line"}' in text  # one line: JSON escapes the newline


def test_summary_starts_with_the_verdicts_and_pass_at_k() -> None:
    records = noisy_suite()
    text = render_summary(build_analysis(records), "exp")
    assert "## Verdict\n\n- **SKILL** vs CONTROL: **improvement** (across tasks: about tasks like these" in text
    assert "): across tasks: pass rate +" in text
    assert "## pass@k and pass^k (analysis set)" in text
    assert text.index("## Verdict") < text.index("## By treatment")
    missing = render_summary(build_analysis(suite({"A": {"t": "P"}})), "exp")
    assert "> **Note:** baseline 'CONTROL' has no trials" in missing


# --- statistics at the edges ------------------------------------------------------------------------------------


def _tied_exclusions() -> list[TrialRecord]:
    """SKILL +25 points on 8 tasks on the analysis set; 2 of its trials per task timed out (errors)."""
    excluded = {"category": "excluded", "reason": "api_timeout", "source": "structured", "evidence": {}}
    records = suite({"CONTROL": tasks(8, "PPFF"), "SKILL": tasks(8, "PPPF")})
    return records + [rec(f"t{i}", "SKILL", 4 + k, "error", noise=excluded) for i in range(8) for k in (1, 2)]


def test_no_spread_shows_an_interval_and_no_number_of_tasks() -> None:
    analysis = build_analysis(suite({"CONTROL": tasks(10, "P" * 10), "SKILL": tasks(10, "P" * 10)}))
    summary = render_summary(analysis, "exp")
    assert "(95% CI -7.2% to +7.2%)" in summary and "+0.0% to +0.0%" not in summary
    assert "tasks needed for a 10-point difference (power 0.8): not estimated (no spread was observed" in summary
    assert "trials needed per treatment on one task: 74" in summary
    comparison = render_comparison(analysis, "exp")
    assert "- power: not estimated: no spread was observed (every paired difference is the same)" in comparison
    assert "- the pass-rate interval is the binomial floor" in comparison
    assert "about 74 trials per treatment would detect a 10-point change on one task" in comparison


def same_scores_on_every_task(control: float, skill: float) -> list[TrialRecord]:
    """Four tasks, two trials each: every trial of a treatment with the same score on every dimension."""
    return [
        rec(f"t{i}", treatment, k, score=score, dimensions=dims(score, score))
        for i in range(4)
        for treatment, score in (("CONTROL", control), ("SKILL", skill))
        for k in (1, 2)
    ]


def test_score_differences_without_spread_are_said_in_words_not_as_a_point_interval() -> None:
    none = "no difference on any of the 4 paired tasks (no spread, so no interval), p = 1"
    comparison = render_comparison(build_analysis(same_scores_on_every_task(1.0, 1.0)), "exp")
    assert "+0.000 [+0.000, +0.000]" not in comparison
    assert f"- weighted score difference per task: {none}\n" in comparison
    assert f"| completion | SKILL | 8 | 0 | 1.000 ± 0.000 | 100% | {none} |" in comparison
    assert f"| skill_invocation | SKILL | 8 | 0 | 1.000 ± 0.000 | 100% | {none} |" in comparison
    # The same gain on every task: the gain, and still no interval.
    gained = render_comparison(build_analysis(same_scores_on_every_task(0.5, 0.75)), "exp")
    assert "[+0.250, +0.250]" not in gained
    assert (
        "- weighted score difference per task: +0.250 on each of the 4 paired tasks (no spread, so no interval), p ="
        in gained
    )
    # Differences that vary keep their interval.
    varied = same_scores_on_every_task(0.5, 0.75)
    varied[-1] = changed(varied[-1], weighted_score=1.0)
    assert re.search(
        r"- weighted score difference per task: \+0\.\d+ \[[-+]0\.\d+, \+0\.\d+\], p = ",
        render_comparison(build_analysis(varied), "exp"),
    )


def test_the_reports_show_the_exclusion_bounds_and_the_test_of_exclusion_rates() -> None:
    analysis = build_analysis(_tied_exclusions())
    summary = render_summary(analysis, "exp")
    assert "**SKILL** vs CONTROL: **Inconclusive due to data quality**" in summary
    assert (
        "  - excluded trials: 0/32 CONTROL, 16/48 SKILL, Fisher's exact p = 0.000104; verdict counting them as "
        "failures of SKILL: no significant difference, as passes: improvement"
    ) in summary
    comparison = render_comparison(analysis, "exp")
    assert "| verdict (worst case) | verdict (best case) |" in comparison
    assert (
        "| improvement | Inconclusive due to data quality | improvement | no significant difference | improvement |"
        in (comparison)
    )
    assert "(Fisher's exact p = 0.000104 for a difference in exclusion rates); worst case +0.0% [" in comparison


def test_durations_say_which_clock_they_are() -> None:
    # The live line counts from the trial's start, workspace setup included; summary.md's figure is the
    # same clock (a record's duration_s), and says so: next to the agent's own time it looked contradictory.
    records = [
        rec(f"t{i}", t, 1, duration_s=62.5, phases={"workspace_s": 3.0, "agent_s": 41.0})
        for i in range(3)
        for t in ("CONTROL", "SKILL")
    ]
    analysis = build_analysis(records)
    summary = render_summary(analysis, "exp")
    assert "| mean trial time (s) |" in summary and "| 62.50 |" in summary and "mean duration" not in summary
    assert "Trial time: the whole trial, workspace setup to scoring (the clock the live line shows)" in summary
    comparison = render_comparison(analysis, "exp")
    runtime = comparison[comparison.index("## Runtime") : comparison.index("## Rubric dimensions")]
    assert "Trial time in seconds per analysis trial: workspace setup to scoring" in runtime
    assert "| CONTROL | 3 | 62.5 | 62.5 | 62.5 | 62.5 | 188 | workspace_s 3.0, agent_s 41.0 |" in runtime
    assert "Seconds: trial time, workspace setup to scoring (the clock the live line shows)." in render_html(analysis)


def test_a_clean_experiment_has_no_exclusion_lines() -> None:
    analysis = build_analysis(suite({"CONTROL": tasks(6, "FP"), "SKILL": tasks(6, "PP")}))
    assert "excluded trials:" not in render_summary(analysis, "exp")
    assert "excluded trials:" not in render_comparison(analysis, "exp")
