"""The LLM judge in every report: statuses and reasons, the rule-vs-judge overlay, judge dimensions
against the baseline, the judge's own cost and spread, and the calibration against the validators."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.config import ReportOutputs
from scaffold.reports.html import render_html
from scaffold.reports.model import JUDGE_REASONS, JudgeRow
from scaffold.reports.results import result_row
from scaffold.reports.summary import render_summary
from scaffold.reports.write import COMPARISON, HTML, RESULTS, SUMMARY, write_reports
from scaffold.stats import PairedComparison, calibrate
from tests.support.factories import REPO
from tests.support.records import SKIPPED_NO_MODEL, changed, judge_info, judged, rec, suite, tasks

PASSED = {"name": "tests pass", "status": "passed", "source": "script:t.py", "reason": ""}
FAILED = {"name": "tests pass", "status": "failed", "source": "script:t.py", "reason": ""}


def rule(**scores: float | None) -> tuple[dict[str, Any], ...]:
    return tuple({"name": name, "weight": 1.0, "score": s, "reason": ""} for name, s in scores.items())


def comet_trial(task: str, treatment: str, trial: int, rule_score: float | None, judge_score: float) -> TrialRecord:
    """A comet-workflow trial: artifact_quality by the rules and re-scored by the comet judge."""
    return rec(
        task,
        treatment,
        trial,
        dimensions=(*rule(completion=1.0, artifact_quality=rule_score), *judged(artifact_quality=judge_score)),
        judge=judge_info(),
    )


def report_texts(records: list[TrialRecord], tmp_path: Path) -> dict[str, str]:
    out = tmp_path / "reports"
    write_reports(out, records, title="exp", outputs=ReportOutputs(markdown=True, html=True))
    return {name: (out / name).read_text(encoding="utf-8") for name in (SUMMARY, COMPARISON, HTML, RESULTS)}


# --- statuses ----------------------------------------------------------------------------------------------


def test_a_judge_skipped_everywhere_says_why_in_every_report(tmp_path: Path) -> None:
    skipped = judge_info("skipped", SKIPPED_NO_MODEL)
    records = [changed(r, judge=skipped) for r in suite({"CONTROL": tasks(3, "PF"), "SKILL": tasks(3, "PP")})]
    texts = report_texts(records, tmp_path)
    said = f"The judge was not called: skipped - {SKIPPED_NO_MODEL}."
    assert said in texts[SUMMARY]
    assert said in texts[COMPARISON]
    assert said in texts[HTML]
    assert "| CONTROL | 6 | 0 | 6 | 0 | 0 |" in texts[COMPARISON]
    assert "| all | 12 | 0 | 12 | 0 | 0 |" in texts[COMPARISON]
    rows = [json.loads(line) for line in texts[RESULTS].splitlines()]
    assert {(r["judge_info"]["status"], r["judge_info"]["reason"]) for r in rows} == {("skipped", SKIPPED_NO_MODEL)}
    assert all(r["judge"] == {} for r in rows)
    # Nothing was judged: no overlay, cost or calibration tables to read.
    assert "### Rule vs judge" not in texts[COMPARISON] and "### Judge cost" not in texts[COMPARISON]
    assert "### Calibration" not in texts[COMPARISON]


def test_status_counts_per_treatment_and_failed_reasons_summarized() -> None:
    records = [rec(f"t{i}", "CONTROL", 1, judge=judge_info()) for i in range(3)]
    records += [rec("t0", "SKILL", i, judge=judge_info("failed", "timeout after 120 s")) for i in range(1, 4)]
    # More distinct reasons than a report lists: HTTP bodies differ from call to call.
    records += [
        rec(f"t{i}", "SKILL", 9, judge=judge_info("failed", f"HTTP 500 request {i}")) for i in range(JUDGE_REASONS + 2)
    ]
    records += [rec("t1", "SKILL", 1, judge=judge_info("skipped", SKIPPED_NO_MODEL)), rec("t2", "SKILL", 1)]
    a = build_analysis(records)
    assert a.judge is not None
    counts = {c.treatment: (c.trials, c.successful, c.skipped, c.failed, c.not_judged) for c in a.judge.status}
    assert counts == {"CONTROL": (3, 3, 0, 0, 0), "SKILL": (12, 0, 1, 3 + JUDGE_REASONS + 2, 1)}
    assert a.judge.reasons[0].text == f"skipped - {SKIPPED_NO_MODEL}"
    assert a.judge.reasons[1].text == "failed - timeout after 120 s" and a.judge.reasons[1].trials == 3
    text = render_comparison(a)
    assert "Skipped (1 trial(s), 1 reason(s)):" in text
    assert f"Failed ({3 + JUDGE_REASONS + 2} trial(s), {JUDGE_REASONS + 3} reason(s)):" in text
    assert "- failed - timeout after 120 s: 3 trial(s)" in text
    assert "- … and 3 more reason(s), 3 trial(s)" in text
    summary = render_summary(a, "exp")
    assert "Judge status of 15 trials: 3 enabled_and_successful, 1 skipped, 10 failed, 1 not judged." in summary
    assert "- failed - timeout after 120 s: 3 trial(s)" in summary


# --- the overlay ------------------------------------------------------------------------------------------------


def test_the_comet_judge_is_overlaid_on_the_rule_dimension_of_its_name() -> None:
    records = [comet_trial(f"t{i}", "SKILL", 1, 0.4, 0.8) for i in range(3)]
    records += [comet_trial("t3", "SKILL", 1, 1.0, 0.6)]
    # CONTROL: the rule dimension is N/A (scored on completion and efficiency only), the judge scores it.
    records += [comet_trial(f"t{i}", "CONTROL", 1, None, 0.4) for i in range(4)]
    a = build_analysis(records)
    assert a.judge is not None and "artifact_quality" in a.dimensions  # the rule dimension stays a rubric one
    control, skill = a.judge.rows
    assert skill.rule_dimension == "artifact_quality" and skill.paired == 4
    assert skill.rule_mean == pytest.approx(0.55) and skill.judge_mean_paired == pytest.approx(0.75)
    assert skill.gap == pytest.approx(0.2)
    assert control.paired == 0 and control.n == 4 and control.mean == pytest.approx(0.4)
    text = render_comparison(a)
    assert "## LLM-judge overlay (rule vs judge)" in text
    assert "| Dimension | Treatment | n | Rule | Judge | Gap |" in text
    assert "| artifact_quality | SKILL | 4 | 0.55 | 0.75 | +0.20 |" in text
    assert "| artifact_quality | CONTROL | 0 | N/A | N/A | N/A |" in text
    harsher = build_analysis([comet_trial(f"t{i}", "CONTROL", 1, 1.0, 0.7) for i in range(2)])
    assert "| artifact_quality | CONTROL | 2 | 1.00 | 0.70 | -0.30 |" in render_comparison(harsher)
    assert "| artifact_quality | CONTROL | 2 | 1.00 | 0.70 | -0.30 |" in render_summary(harsher, "exp")


def test_generic_judge_task_completion_meets_completion_and_the_others_stand_alone() -> None:
    records = [
        rec(
            f"t{i}",
            "CONTROL",
            k,
            dimensions=(*rule(completion=1.0), *judged(task_completion=0.9, output_quality=0.5 + 0.1 * k)),
            judge=judge_info(),
        )
        for i in range(2)
        for k in (1, 2)
    ]
    a = build_analysis(records)
    assert a.judge is not None
    rows = {r.dimension: r for r in a.judge.rows}
    assert rows["task_completion"].rule_dimension == "completion"
    assert rows["task_completion"].gap == pytest.approx(-0.1)
    assert rows["output_quality"].rule_dimension is None
    assert (rows["output_quality"].n, rows["output_quality"].mean) == (4, pytest.approx(0.65))
    assert [r.dimension for r in a.judge.overlaid] == ["task_completion"]
    text = render_comparison(a)
    assert "| task_completion (rule: completion) | CONTROL | 4 | 1.00 | 0.90 | -0.10 |" in text
    assert "| output_quality | CONTROL | 4 | 0.650 ± 0.058 | — |" in text
    assert "output_quality (rule" not in text


# --- judge dimensions get the rule dimensions' paired comparison ----------------------------------------------------


def test_judge_dimensions_are_compared_with_the_baseline_as_rule_dimensions_are() -> None:
    # The judge's scores equal a rule dimension's, trial by trial: both comparisons must agree exactly.
    scores = {"CONTROL": [0.2, 0.4, 0.1, 0.3, 0.5, 0.2], "SKILL": [0.6, 0.5, 0.9, 0.3, 0.8, 0.7]}
    records = [
        rec(
            f"t{i}",
            treatment,
            k,
            dimensions=(*rule(mirror=s - 0.05 * k), *judged(output_quality=s - 0.05 * k)),
            judge=judge_info(),
        )
        for treatment, values in scores.items()
        for i, s in enumerate(values)
        for k in (1, 2)
    ]
    a = build_analysis(records)
    assert a.judge is not None
    by_judge = next(r for r in a.judge.rows if r.treatment == "SKILL")
    by_rule = a.dimension("mirror", "SKILL")
    assert by_rule is not None and isinstance(by_judge.difference, PairedComparison)
    assert by_judge.difference == by_rule.difference
    assert by_judge.difference.mean_difference == pytest.approx(0.35)
    baseline = next(r for r in a.judge.rows if r.treatment == "CONTROL")
    assert baseline.difference is None
    text = render_comparison(a)
    assert f"| output_quality | SKILL | 12 | {by_judge.mean:.3f} ± {by_judge.sd:.3f} | +0.350 [" in text
    page = render_html(a)
    judge = page[page.index('<section id="judge"') : page.index('<section id="spend"')]
    assert "<td>output_quality</td><td>SKILL</td>" in judge and "+0.350 [" in judge


# --- the judge's own cost and spread -----------------------------------------------------------------------------


def test_judge_cost_is_its_own_and_never_in_the_agents_spend() -> None:
    trajectory = {"agent": "claude-code", "tokens": {"input": 100, "output": 10}, "cost_usd": 0.5}
    plain = [rec(f"t{i}", "CONTROL", 1, trajectory=trajectory) for i in range(3)]
    costly = judge_info(input_tokens=2000, output_tokens=100, cost_usd=0.25, latency_s=3.0)
    with_judge = [changed(r, judge=costly, dimensions=judged(task_completion=1.0)) for r in plain]
    before, after = build_analysis(plain), build_analysis(with_judge)
    assert after.report("CONTROL").spend == before.report("CONTROL").spend
    assert after.judge is not None
    (spend,) = after.judge.spend
    assert (spend.trials, spend.token_trials, spend.input_tokens, spend.output_tokens) == (3, 3, 6000, 300)
    assert spend.cost_usd == pytest.approx(0.75) and spend.mean_latency_s == pytest.approx(3.0)
    text = render_comparison(after)
    assert "| CONTROL | 3 | 3 | 2000 | 100 | 0.7500 | 0.2500 | 3.0 |" in text
    # The agents' spend section still shows only the agent's 0.5 per trial.
    assert "| CONTROL | 3/3 | 100 | 10 | 0 | 0 | 1.5000 | 0.5000 | 0.5000 |" in text
    assert "Judge cost, apart from the agents' spend: CONTROL 0.7500 USD (6000 input, 300 output tokens)." in (
        render_summary(after, "exp")
    )
    row = result_row(with_judge[0])
    assert row["cost_usd"] == 0.5 and row["tokens"]["input"] == 100
    assert row["judge_info"]["cost_usd"] == 0.25 and row["judge_info"]["input_tokens"] == 2000


def test_judge_spread_with_several_samples_is_the_mean_of_the_per_trial_spreads() -> None:
    records = [
        rec(
            f"t{i}",
            "CONTROL",
            1,
            dimensions=judged(task_completion=0.7, output_quality=0.6),
            judge=judge_info(samples=3, spread={"task_completion": spread}),
        )
        for i, spread in enumerate((0.1, 0.2, 0.3))
    ]
    a = build_analysis(records)
    assert a.judge is not None and a.judge.samples == 3 and a.judge.spread_shown
    rows = {r.dimension: r for r in a.judge.rows}
    assert rows["task_completion"].spread == pytest.approx(0.2) and rows["task_completion"].spread_trials == 3
    assert rows["output_quality"].spread_trials == 0
    text = render_comparison(a)
    assert "mean over trials of the sd of its 3 answers per trial" in text
    assert "| task_completion | CONTROL | 3 | 0.700 ± 0.000 | 0.200 | — |" in text
    single = build_analysis([rec("t0", "CONTROL", 1, dimensions=judged(task_completion=0.7), judge=judge_info())])
    assert "judge spread" not in render_comparison(single)


# --- calibration -----------------------------------------------------------------------------------------------


def calibration_records(pairs: list[tuple[float, bool]]) -> list[TrialRecord]:
    return [
        rec(
            f"t{i}",
            "CONTROL" if i % 2 else "SKILL",
            1,
            "passed" if passed else "failed",
            dimensions=(*rule(completion=1.0 if passed else 0.0), *judged(task_completion=score)),
            checks=(PASSED if passed else FAILED,),
            judge=judge_info(),
        )
        for i, (score, passed) in enumerate(pairs)
    ]


def test_calibration_of_task_completion_against_the_validators_over_all_trials() -> None:
    pairs = [(0.9, True), (0.8, True), (0.7, True), (0.6, True), (0.95, True), (0.2, False)]
    pairs += [(0.1, False), (0.3, False), (0.0, False), (0.4, False), (0.55, False), (0.45, True)]
    a = build_analysis(calibration_records(pairs))
    assert a.judge is not None and a.judge.calibration is not None
    c = a.judge.calibration
    assert c == calibrate([s for s, _ in pairs], [p for _, p in pairs])
    assert (c.n, c.both_passed, c.rater_only, c.truth_only, c.both_failed) == (12, 5, 1, 1, 5)
    text = render_comparison(a)
    assert "### Calibration: judge task_completion against the validators" in text
    assert f"| 12 | 5 | 1 | 1 | 5 | 83.3% | 0.67 | {c.correlation:.2f} |" in text
    page = render_html(a)
    assert '<table class="data judge-calibration">' in page and '<td class="n">0.67</td>' in page


def test_calibration_reads_the_validators_not_the_trial_verdict() -> None:
    # A hard failure fails the trial, but the validators passed: the judge saying "done" agrees with them.
    records = calibration_records([(0.9, True)] * 6 + [(0.1, False)] * 6)
    records = [changed(r, verdict="failed", hard_failures=("no skill invoked",)) for r in records]
    a = build_analysis(records)
    assert a.judge is not None and a.judge.calibration is not None
    assert a.judge.calibration.kappa == 1.0 and a.judge.calibration.both_passed == 6
    # Trials without a counted check have no validator verdict: left out.
    skipped = {"name": "x", "status": "skipped", "source": "artifact", "reason": ""}
    a = build_analysis([changed(r, checks=(skipped,)) for r in records])
    assert a.judge is not None and a.judge.calibration is not None and a.judge.calibration.n == 0


def test_calibration_says_insufficient_with_few_trials_or_one_class() -> None:
    few = render_comparison(build_analysis(calibration_records([(0.9, True), (0.2, False)])))
    assert "| 2 | 1 | 0 | 0 | 1 | insufficient | insufficient | insufficient |" in few
    assert "Insufficient: 2 trial(s) with both a judge score and a validator verdict, 10 needed." in few
    one_class = render_comparison(build_analysis(calibration_records([(0.9, True)] * 12)))
    assert "Insufficient: the validators passed all 12 trials, so agreement cannot be told from chance." in one_class
    comet_only = render_comparison(build_analysis([comet_trial("t0", "CONTROL", 1, 1.0, 0.9)]))
    assert "No trial has a judge task_completion score" in comet_only


# --- without a judge, nothing changes ------------------------------------------------------------------------------


def test_reports_without_a_judge_do_not_mention_one(tmp_path: Path) -> None:
    records = suite({"CONTROL": tasks(3, "PF"), "SKILL": tasks(3, "PP")})
    a = build_analysis(records)
    assert a.judge is None
    texts = report_texts(records, tmp_path)
    for name in (SUMMARY, COMPARISON, HTML):
        assert "judge" not in texts[name].lower(), name
    assert all("judge_info" not in json.loads(line) for line in texts[RESULTS].splitlines())


def test_the_judge_info_of_results_jsonl_is_documented() -> None:
    row = result_row(rec("a", "S", 1, judge=judge_info(spread={"task_completion": 0.1}, session_id="s-1")))
    schema = (REPO / "docs" / "results-schema.md").read_text(encoding="utf-8")
    documented = re.search(r"- `judge_info` \(object\): `\{(.+?)\}`", schema, re.DOTALL)
    assert documented is not None
    fields = [f.strip().strip('"') for f in " ".join(documented.group(1).split()).split(",")]
    assert list(row["judge_info"]) == fields
    assert list(row)[-1] == "judge_info"
    assert row["judge_info"]["spread"] == {"task_completion": 0.1} and row["judge_info"]["reason"] is None


def test_a_judge_row_without_paired_trials_has_no_gap() -> None:
    row = JudgeRow("CONTROL", "artifact_quality", 3, 0.5, 0.1, rule_dimension="artifact_quality")
    assert row.paired == 0 and row.gap != row.gap  # NaN
