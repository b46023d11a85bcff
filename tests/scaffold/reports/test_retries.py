"""The reports' retries (scaffold.reports.retries): a trial counts once, as its last attempt; only those still
excluded reach the verdict's bounds; first-try and recovered pass rates side by side."""

from __future__ import annotations

from typing import Any

import pytest

from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.results import result_row
from scaffold.reports.summary import render_summary
from tests.support.records import rec, suite

EXCLUDED = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}


def retried(record: TrialRecord, times: int = 1, cost: float | None = 0.01) -> TrialRecord:
    attempts = [
        {"attempt": k, "folder": f"attempts/{k}", "verdict": "failed", "noise_reason": "rate_limited", "cost_usd": cost}
        for k in range(1, times + 1)
    ]
    return rec(record.task, record.treatment, record.trial, record.verdict, noise=_noise(record), attempts=attempts)


def _noise(record: TrialRecord) -> dict[str, Any]:
    n = record.noise
    return {"category": n.category, "reason": n.reason, "source": n.source, "evidence": dict(n.evidence)}


def test_recovered_trials_count_once_and_only_the_still_excluded_are_bounded() -> None:
    records = suite({"CONTROL": {f"t{i}": "PF" for i in range(6)}, "SKILL": {f"t{i}": "PP" for i in range(6)}})
    # Two SKILL trials needed a retry: one recovered (passed), one still excluded after two retries.
    records = [
        retried(r)
        if (r.treatment, r.task, r.trial) == ("SKILL", "t0", 1)
        else retried(rec("t1", "SKILL", 1, "failed", noise=EXCLUDED), times=2)
        if (r.treatment, r.task, r.trial) == ("SKILL", "t1", 1)
        else r
        for r in records
    ]
    analysis = build_analysis(records)
    skill = analysis.report("SKILL")
    assert skill.counts.trials == 12 and skill.counts.excluded == 1  # the recovered one is not excluded twice
    x = skill.retries
    assert (x.trials, x.retried, x.recovered, x.still_excluded, x.attempts) == (12, 2, 1, 1, 15)
    assert (x.first_passed, x.first_scored, x.retried_passed, x.retried_scored) == (10, 10, 1, 1)
    assert x.first_pass_rate == 1.0 and x.retried_pass_rate == 1.0 and x.p_value == pytest.approx(1.0)
    assert x.earlier_cost_usd == pytest.approx(0.03)
    control = analysis.report("CONTROL").retries
    assert (control.retried, control.attempts, control.p_value) == (0, 12, None)
    verdict = analysis.verdict("SKILL")
    assert verdict is not None and verdict.exclusions is not None
    assert verdict.exclusions.treatment_excluded == 1  # the bounds see the one still excluded, not its attempts

    summary = render_summary(analysis, "e")
    assert "Retried trials (`--retry-excluded`)" in summary
    assert "| SKILL | 2 | 1 | 1 | 15 | 100% (10/10) | 100% (1/1) | 1 | 0.0300 |" in summary
    assert "| SKILL | 2 | 1 | 1 | 15 |" in render_comparison(analysis)
    assert result_row(records[12])["attempts"] == 2 and result_row(records[14])["attempts"] == 3
    assert result_row(records[0])["attempts"] == 1


def test_no_retries_no_section() -> None:
    analysis = build_analysis(suite({"CONTROL": {"t": "PF"}}))
    assert "Retried trials" not in render_summary(analysis, "e")
    assert "Retried trials" not in render_comparison(analysis)


def test_one_side_recovering_far_more_trials_is_bounded_like_exclusions() -> None:
    """SKILL passes 20 tasks x 2 where CONTROL passes half; 12 of SKILL's 40 trials needed a retry and none
    of CONTROL's: retries can hide outcome-linked exclusions, so the first attempts of SKILL's recovered
    trials beyond CONTROL's share (less a standard error) count as excluded at the extremes, and the
    worst extreme's interval reaches lower than the analysis set's."""
    plan = {"CONTROL": {f"t{i:02d}": "PF" for i in range(20)}, "SKILL": {f"t{i:02d}": "PP" for i in range(20)}}
    records = [
        retried(r) if r.treatment == "SKILL" and int(r.task[1:]) < 12 and r.trial == 1 else r for r in suite(plan)
    ]
    verdict = build_analysis(records).verdict("SKILL")
    assert verdict is not None and verdict.exclusions is not None
    check = verdict.exclusions
    assert (check.treatment_excluded, check.baseline_excluded) == (0, 0)
    # 12/40 against 0/40, less one standard error of the difference (sqrt(0.15 * 0.85 * 2/40) = 0.08): 8 trials.
    assert (check.treatment_excess, check.baseline_excess) == (8, 0) and check.imputed
    assert check.worst.low < verdict.pass_rate.low  # type: ignore[union-attr]


def test_balanced_retries_are_not_bounded() -> None:
    plan = {"CONTROL": {f"t{i:02d}": "PF" for i in range(20)}, "SKILL": {f"t{i:02d}": "PP" for i in range(20)}}
    records = [retried(r) if int(r.task[1:]) < 3 and r.trial == 1 else r for r in suite(plan)]
    verdict = build_analysis(records).verdict("SKILL")
    assert verdict is not None and verdict.exclusions is not None
    assert not verdict.exclusions.imputed and verdict.label == "improvement"
