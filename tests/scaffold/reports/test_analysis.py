"""scaffold.reports.analysis: every figure and verdict on synthetic trial sets with answers known by hand."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.records.files import upgrade
from scaffold.reports.analysis import build_analysis
from scaffold.reports.model import INCONCLUSIVE, INSUFFICIENT, Analysis, TrialFiles
from scaffold.reports.verdicts import label_of
from scaffold.stats import Insufficient, PairedComparison
from tests.support.records import dims, rec, suite, tasks


def only_verdict(analysis: Analysis) -> Any:
    assert len(analysis.verdicts) == 1
    return analysis.verdicts[0]


def test_an_improvement_on_every_one_of_six_tasks_is_significant() -> None:
    a = build_analysis(suite({"CONTROL": tasks(6, "FF"), "SKILL": tasks(6, "PP")}))
    v = only_verdict(a)
    assert v.label == "improvement"
    assert isinstance(v.pass_rate, PairedComparison)
    # Exact sign flip: only the all-plus and all-minus patterns reach |sum| = 6 of 2^6.
    assert v.pass_rate.p_value == pytest.approx(2 / 64)
    # No spread (every difference +1) is not certainty: the binomial floor of 0/2 and 2/2 per task,
    # sqrt(12 * 0.168^2) / 6 = 0.097, times t_5 = 2.571.
    assert v.pass_rate.mean_difference == v.pass_rate.high == 1.0
    assert v.pass_rate.low == pytest.approx(0.751, abs=1e-3)
    assert v.pass_rate.improved == 6
    assert "+100.0%" in v.reason
    assert a.treatments == ("CONTROL", "SKILL")
    assert a.report("SKILL").analysis.pass_rate.mean == 1.0
    assert a.report("CONTROL").analysis.pass_rate.mean == 0.0
    assert a.counts.trials == 24 and a.counts.passed == 12 and a.counts.failed == 12
    # The sd of differences is 0: no spread observed, so no number of tasks can be given.
    assert v.power is not None and v.power.needed is None and "cannot be estimated" in v.power.note
    # From the baseline's 0%: two proportions 0 -> 0.1.
    assert v.trials is not None and v.trials.needed == 74
    assert v.exclusions is not None and not v.exclusions.imputed and v.exclusions.rate_p_value == 1.0


def test_a_regression_is_named_and_the_baseline_is_a_parameter() -> None:
    records = suite({"OLD": tasks(7, "P"), "NEW": tasks(7, "F"), "OTHER": tasks(7, "P")})
    a = build_analysis(records, baseline="OLD")
    assert a.treatments == ("OLD", "NEW", "OTHER")
    assert a.verdict("NEW").label == "regression"  # type: ignore[union-attr]
    assert a.verdict("OTHER").label == "no significant difference"  # type: ignore[union-attr]
    assert a.verdict("OLD") is None
    assert a.report("OLD").is_baseline


def test_three_tasks_cannot_reach_significance() -> None:
    v = only_verdict(build_analysis(suite({"CONTROL": tasks(3, "F"), "SKILL": tasks(3, "P")})))
    assert v.label == "no significant difference"
    assert v.pass_rate.p_value == pytest.approx(2 / 8)


def test_an_interval_that_excludes_zero_without_a_significant_test_is_no_difference() -> None:
    # Differences +1 on 7 tasks and -1 on one: the t interval 0.75 +- 2.365 * 0.707 / sqrt(8) excludes 0,
    # but the exact sign flip gives p = 18/256 = 0.0703 > 0.05. Both must agree for a claim.
    spec = {"CONTROL": tasks(7, "FF") | {"t7": "PP"}, "SKILL": tasks(7, "PP") | {"t7": "FF"}}
    v = only_verdict(build_analysis(suite(spec)))
    assert isinstance(v.pass_rate, PairedComparison)
    assert v.pass_rate.p_value == pytest.approx(18 / 256)
    assert v.pass_rate.low > 0
    assert v.label == "no significant difference"
    assert "or the interval includes 0" in v.reason


def test_no_trials_give_an_empty_analysis() -> None:
    a = build_analysis([])
    assert a.treatments == () and a.verdicts == () and a.cells == {}
    assert a.plan.ks == ()
    assert a.counts.trials == 0
    assert math.isnan(a.counts.excluded_share)
    assert a.notes == ("no trial records were found, so there is nothing to compare",)


def test_a_missing_baseline_is_a_message_and_insufficient_verdicts() -> None:
    a = build_analysis(suite({"A": tasks(4, "P"), "B": tasks(4, "F")}), baseline="CONTROL")
    assert not a.baseline_found
    assert [v.label for v in a.verdicts] == [INSUFFICIENT, INSUFFICIENT]
    assert "baseline 'CONTROL' has no trials" in a.notes[0] and "A, B" in a.notes[0]
    assert "--baseline" in a.verdicts[0].reason
    assert all(d.difference is None for d in a.dimension_stats)


def test_one_task_is_decided_on_these_tasks_and_says_so() -> None:
    # 3 of 3 against 0 of 3: the exact stratified test gives p = 2 / C(6, 3) = 0.1, so no difference is
    # shown; across tasks there is no answer at all with one task, and the reason says why.
    v = only_verdict(build_analysis(suite({"CONTROL": {"t": "FFF"}, "SKILL": {"t": "PPP"}})))
    assert v.label == "no significant difference" and v.scope == "on these tasks"
    assert isinstance(v.pass_rate, Insufficient) and v.on_tasks is not None
    assert v.on_tasks.p_value == pytest.approx(0.1)
    assert "across tasks (tasks like these) needs 6 paired tasks at alpha 0.05 and there is 1" in v.reason
    assert v.power is None


def test_a_skill_that_passes_two_tasks_every_time_improves_on_these_tasks() -> None:
    # The default comet eval: 2 generated tasks x 5 trials; the skill passes 10 of 10, CONTROL 5 of 10.
    records = suite({"CONTROL": {"a": "PPFFF", "b": "PPPFF"}, "SKILL": {"a": "PPPPP", "b": "PPPPP"}})
    v = only_verdict(build_analysis(records))
    assert v.label == "improvement" and v.scope == "on these tasks"
    assert "not about tasks like them" in v.scope_note


def test_all_excluded_is_insufficient_clean_data_and_never_raises() -> None:
    a = build_analysis(suite({"CONTROL": tasks(5, "XX"), "SKILL": tasks(5, "XX")}))
    v = only_verdict(a)
    assert v.label == INSUFFICIENT
    assert "excluded as noise: 10 of 10 CONTROL trials, 10 of 10 SKILL trials" in v.reason
    assert v.raw_label == "no significant difference"  # the raw set has all failures on both sides
    report = a.report("SKILL")
    assert report.counts.excluded == 10 and report.counts.analysis_trials == 0
    assert report.counts.excluded_reasons == {"rate_limited": 10}
    assert math.isnan(report.analysis.pass_rate.mean)
    assert report.raw.pass_rate.mean == 0.0
    assert report.runtime.mean_s is None and report.spend.cost_usd is None
    assert len(a.excluded) == 20 and a.excluded[0].reason == "rate_limited"
    assert a.plan.ks == ()
    cell = a.cells[("t0", "SKILL")]
    assert cell.trials == 0 and cell.excluded == 2 and len(cell.links) == 2


def test_more_than_half_excluded_is_inconclusive() -> None:
    spec = {"CONTROL": tasks(6, "FXXX"), "SKILL": tasks(6, "P")}
    v = only_verdict(build_analysis(suite(spec)))
    assert v.label == INCONCLUSIVE
    assert "18 of 24 CONTROL trials were excluded" in v.reason


def test_a_verdict_that_depends_on_flagged_trials_is_inconclusive() -> None:
    # Analysis set: SKILL passes all 6 tasks (significant). Strict set (flagged dropped): SKILL keeps 3
    # tasks, where the exact test cannot go below p = 0.25 -> the labels disagree.
    spec = {"CONTROL": tasks(6, "F"), "SKILL": {"t0": "P", "t1": "P", "t2": "P", "t3": "G", "t4": "G", "t5": "G"}}
    a = build_analysis(suite(spec))
    v = only_verdict(a)
    assert v.label == INCONCLUSIVE
    assert v.strict_label == "no significant difference" and v.raw_label == "improvement"
    assert "without flagged trials it is 'no significant difference'" in v.reason
    assert len(a.flagged) == 3 and a.report("SKILL").counts.flagged_reasons == {"validator_assumption": 3}


def test_excluded_failures_move_the_raw_set_and_the_sensitivity_shows_it() -> None:
    spec = {"CONTROL": tasks(6, "F"), "SKILL": tasks(6, "PX")}
    a = build_analysis(suite(spec))
    report = a.report("SKILL")
    assert report.analysis.pass_rate.mean == 1.0
    assert report.raw.pass_rate.mean == 0.5
    assert report.pass_rate_shift == 0.5
    v = only_verdict(a)
    assert v.label == "improvement" and v.raw_label == "improvement"


def test_pass_at_k_and_both_pass_hat_k_forms_per_task_and_treatment() -> None:
    # One task, n = 5, c = 4: pass@2 = 1 (only one failure), pass^2 = C(4,2)/C(5,2) = 0.6, observed 0.
    # Another task, n = 5, c = 5: all 1.
    a = build_analysis(suite({"CONTROL": {"a": "PPPPF", "b": "PPPPP"}}))
    assert a.plan.ks == (1, 2, 5)
    assert a.plan.clamped_from == 10 and "only 5 scored trial(s)" in a.plan.reason
    cell = a.cells[("a", "CONTROL")]
    assert cell.pass_at_k == {1: 0.8, 2: 1.0, 5: 1.0}
    assert cell.pass_hat_k[2] == pytest.approx(0.6)
    assert cell.pass_hat_k[5] == 0.0
    assert cell.pass_hat_k_observed == {1: 0.0, 2: 0.0, 5: 0.0}
    assert cell.wilson.rate == 0.8 and cell.wilson.low < 0.8 < cell.wilson.high
    rows = {row.k: row for row in a.report("CONTROL").passk}
    assert rows[1].pass_at_k.mean == pytest.approx(0.9)
    assert rows[2].pass_hat_k.mean == pytest.approx(0.8)
    assert rows[5].pass_hat_k_observed.mean == 0.5
    assert rows[1].pass_at_k.n == 2


def test_errored_trials_are_unscored_not_failed() -> None:
    a = build_analysis(suite({"CONTROL": {"a": "PE"}}))
    cell = a.cells[("a", "CONTROL")]
    assert (cell.trials, cell.scored, cell.passed, cell.pass_rate) == (2, 1, 1, 1.0)
    assert a.counts.errored == 1


def test_spend_counts_only_trials_that_reported_telemetry() -> None:
    def traj(tokens: dict[str, int] | None, cost: float | None) -> dict[str, Any]:
        return {"agent": "claude-code", "tokens": tokens, "cost_usd": cost}

    records = [
        rec("a", "S", 1, trajectory=traj({"input": 100, "output": 10, "cache_read": 5, "cache_write": 1}, 0.25)),
        rec(
            "a",
            "S",
            2,
            "failed",
            trajectory=traj({"input": 300, "output": 30, "cache_read": 0, "cache_write": 3}, 0.75),
        ),
        rec("b", "S", 1, trajectory=traj(None, None)),
    ]
    spend = build_analysis(records, baseline="S").report("S").spend
    assert (spend.trials, spend.token_trials, spend.cost_trials) == (3, 2, 2)
    assert (spend.input_tokens, spend.output_tokens, spend.cache_read_tokens, spend.cache_write_tokens) == (
        400,
        40,
        5,
        4,
    )
    assert spend.cost_usd == 1.0 and spend.mean_cost_usd == 0.5
    assert spend.cost_per_pass_usd == 0.5  # two passes
    assert spend.mean_tokens("input") == 200
    assert build_analysis(suite({"S": {"a": "P"}}), baseline="S").report("S").spend.mean_tokens("output") is None


def test_runtime_percentiles_and_phases() -> None:
    records = [
        rec("a", "S", i, duration_s=float(i), phases={"agent_s": i / 2, "validation_s": 1.0}) for i in range(1, 11)
    ]
    runtime = build_analysis(records, baseline="S").report("S").runtime
    assert runtime.trials == 10 and runtime.total_s == 55.0 and runtime.mean_s == 5.5
    assert (runtime.median_s, runtime.p90_s, runtime.max_s) == (5.5, 9.0, 10.0)
    assert runtime.phases == {"agent_s": 2.75, "validation_s": 1.0}
    assert build_analysis(records, baseline="S").cells[("a", "S")].mean_duration_s == 5.5


def test_dimensions_mean_sd_pass_share_difference_and_weights() -> None:
    records = []
    for i in range(4):
        records.append(rec(f"t{i}", "CONTROL", 1, profile="generic", dimensions=dims(0.5, None)))
        records.append(rec(f"t{i}", "SKILL", 1, profile="generic", dimensions=dims(1.0, 1.0 if i % 2 else 0.0)))
    a = build_analysis(records)
    assert a.dimensions == ("completion", "skill_invocation")
    control = a.dimension("completion", "CONTROL")
    skill = a.dimension("completion", "SKILL")
    assert control is not None and skill is not None
    assert (control.n, control.mean, control.sd, control.pass_share) == (4, 0.5, 0.0, 0.0)
    assert control.difference is None
    assert isinstance(skill.difference, PairedComparison)
    assert skill.difference.mean_difference == 0.5 and skill.difference.n == 4
    na = a.dimension("skill_invocation", "CONTROL")
    assert na is not None and na.n == 0 and na.not_applicable == 4 and math.isnan(na.mean)
    invoked = a.dimension("skill_invocation", "SKILL")
    assert invoked is not None and invoked.pass_share == 0.5 and invoked.sd == pytest.approx(math.sqrt(1 / 3))
    assert isinstance(invoked.difference, Insufficient)  # N/A under the baseline: nothing to pair
    assert [(w.dimension, w.profile, w.weight, w.share) for w in a.weights] == [
        ("completion", "generic", 3.0, 0.75),
        ("skill_invocation", "generic", 1.0, 0.25),
    ]
    assert a.judge is None


def test_judge_dimensions_are_an_overlay_not_rubric_dimensions() -> None:
    records = [rec("a", "CONTROL", i, dimensions=dims(1.0, None, judge=i / 4)) for i in range(1, 4)]
    a = build_analysis(records)
    assert "output_quality" not in a.dimensions
    assert a.judge is not None and a.judge.dimensions == ("output_quality",)
    (row,) = a.judge.rows
    assert (row.treatment, row.n, row.mean, row.sd) == ("CONTROL", 3, 0.5, 0.25)


def test_failure_attribution_counts_causes_per_treatment() -> None:
    failed_check = {"name": "tests pass", "status": "failed", "source": "script:t.py", "reason": ""}
    records = [
        rec("a", "S", 1, "failed", checks=(failed_check,), hard_failures=("no skill invoked",)),
        rec("a", "S", 2, "failed", checks=(failed_check,)),
        rec("a", "S", 3, "failed"),
        rec("a", "S", 4, "error", errors=({"type": "ValidationError", "message": "m"},)),
        rec("a", "S", 5, "passed"),
    ]
    causes = [(f.kind, f.name, f.trials) for f in build_analysis(records, baseline="S").failures]
    assert causes == [
        ("check", "tests pass", 2),
        ("error", "ValidationError", 1),
        ("hard_failure", "no skill invoked", 1),
        ("unexplained", "no failed check or hard failure recorded", 1),
    ]
    assert build_analysis(records, baseline="S").failures[0].examples == ("a-S-r1", "a-S-r2")


def test_links_carry_files_noise_evidence_and_merged_experiments() -> None:
    noise = {"category": "excluded", "reason": "auth_failed", "source": "structured", "evidence": {"status": 401}}
    records = [rec("a", "S", 1, experiment="e1"), rec("a", "S", 1, "failed", noise=noise, experiment="e2")]
    files = {("e1", "a-S-r1"): TrialFiles("e1/trials/a-S-r1/record.json", ("e1/trials/a-S-r1/agent.turn-1.jsonl",))}
    a = build_analysis(records, baseline="S", files=files, problems=["x.json: unreadable"])
    assert a.experiments == ("e1", "e2")
    first, second = a.cells[("a", "S")].links
    assert first.files == files[("e1", "a-S-r1")] and second.files is None
    assert a.excluded == (second,) and second.evidence == {"status": 401}
    assert [(p.file, p.field, p.reason) for p in a.problems] == [("x.json", None, "unreadable")]
    assert str(a.problems[0]) == "x.json: unreadable"


def test_records_without_a_noise_verdict_are_classified_when_read() -> None:
    record = rec("a", "S", 1, trajectory={"agent": "nop", "tokens": None, "timed_out": False})
    for missing in ({}, None):
        bare = upgrade({**record.to_dict(), "noise": missing})
        assert bare.noise.category == "included" and bare.noise.reason == ""
        a = build_analysis([bare], baseline="S")
        assert a.counts.included == 1
    old = {k: v for k, v in record.to_dict().items() if k != "noise"}
    assert upgrade(old) == bare


def test_any_number_of_treatments_in_baseline_first_order() -> None:
    records = suite({name: tasks(3, "P") for name in ("Z", "CONTROL", "A", "M")})
    a = build_analysis(records)
    assert a.treatments == ("CONTROL", "A", "M", "Z")
    assert [v.treatment for v in a.verdicts] == ["A", "M", "Z"]
    assert [r.name for r in a.reports] == list(a.treatments)


def test_the_result_does_not_depend_on_record_order() -> None:
    records = suite({"CONTROL": tasks(7, "FPF"), "SKILL": tasks(7, "PPF")})

    def key(a: Analysis) -> Iterable[Any]:
        return (a.verdicts, a.reports, a.dimension_stats, a.failures, tuple(a.cells.items()))

    assert key(build_analysis(records)) == key(build_analysis(list(reversed(records))))


VERDICT_CODES = st.sampled_from("PFEXG")


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["CONTROL", "A", "B"]),
        st.dictionaries(st.sampled_from([f"t{i}" for i in range(8)]), st.text(VERDICT_CODES, min_size=1, max_size=4)),
        max_size=3,
    ),
    st.sampled_from(["CONTROL", "A", "MISSING"]),
)
def test_any_trial_set_gives_a_consistent_analysis(spec: dict[str, dict[str, str]], baseline: str) -> None:
    records = suite(spec)
    a = build_analysis(records, baseline=baseline)
    assert a.counts.trials == len(records)
    assert a.counts.included + a.counts.flagged + a.counts.excluded == len(records)
    assert sum(r.counts.trials for r in a.reports) == len(records)
    assert sum(len(c.links) for c in a.cells.values()) == len(records)
    assert len(a.verdicts) == len(a.treatments) - (baseline in a.treatments)
    for v in a.verdicts:
        assert v.label in ("improvement", "regression", "no significant difference", INSUFFICIENT, INCONCLUSIVE)
        assert v.reason
    for r in a.reports:
        for row in r.passk:
            for est in (row.pass_at_k, row.pass_hat_k, row.pass_hat_k_observed):
                assert math.isnan(est.mean) or 0.0 <= est.mean <= 1.0
        # pass@k grows with k and pass^k shrinks (per task, so also their means over the same tasks).
        means = [row.pass_at_k.mean for row in r.passk if not math.isnan(row.pass_at_k.mean)]
        assert means == sorted(means)
    assert build_analysis(list(reversed(records)), baseline=baseline).verdicts == a.verdicts


EXCLUDED = {"category": "excluded", "reason": "api_timeout", "source": "structured", "evidence": {}}


def test_exclusions_tied_to_failure_recorded_as_errors_make_the_verdict_inconclusive() -> None:
    # SKILL loses two trials per task to timeouts, recorded as errors: they would have failed. On the
    # analysis set SKILL is +25 points on all 8 tasks (significant); with its excluded trials counted as
    # failures it is +0. Before, the raw set (errors unscored = the analysis set) never showed it.
    records = suite({"CONTROL": tasks(8, "PPFF"), "SKILL": tasks(8, "PPPF")})
    records += [rec(f"t{i}", "SKILL", 4 + k, "error", noise=EXCLUDED) for i in range(8) for k in (1, 2)]
    v = only_verdict(build_analysis(records))
    assert label_of(v.pass_rate, 0.05) == "improvement" and v.raw_label == "improvement"
    assert v.label == INCONCLUSIVE
    assert v.exclusions is not None and v.exclusions.imputed
    assert v.exclusions.worst_label == "no significant difference" and v.exclusions.best_label == "improvement"
    assert isinstance(v.exclusions.worst, PairedComparison) and v.exclusions.worst.mean_difference == 0.0
    assert (v.exclusions.treatment_excluded, v.exclusions.treatment_trials) == (16, 48)
    assert (v.exclusions.baseline_excluded, v.exclusions.baseline_trials) == (0, 32)
    # 16 of 48 against 0 of 32: Fisher's exact test says the exclusion rates differ.
    assert v.exclusions.rate_p_value == pytest.approx(1.044e-4, rel=1e-3)  # scipy.stats.fisher_exact agrees
    assert "as failures of SKILL and passes of CONTROL it is 'no significant difference'" in v.reason


def test_exclusions_that_cannot_change_the_answer_leave_it_decisive() -> None:
    # Whatever the 8 excluded SKILL trials would have shown, SKILL passes at least 4 of 5 on every task
    # where CONTROL passes none.
    v = only_verdict(build_analysis(suite({"CONTROL": tasks(8, "FFFF"), "SKILL": tasks(8, "PPPPX")})))
    assert v.label == "improvement"
    assert v.exclusions is not None
    assert v.exclusions.worst_label == v.exclusions.best_label == "improvement"
    assert isinstance(v.exclusions.worst, PairedComparison) and v.exclusions.worst.mean_difference == 0.8
    assert isinstance(v.exclusions.best, PairedComparison) and v.exclusions.best.mean_difference == 1.0
    assert v.exclusions.rate_p_value == pytest.approx(0.007304, rel=1e-3)  # 8 of 40 against 0 of 32


def test_a_task_whose_every_trial_was_excluded_counts_in_the_bounds() -> None:
    # t7's SKILL trials were all excluded: unpaired on the analysis set, paired in both bounds.
    spec = {"CONTROL": tasks(8, "FF"), "SKILL": tasks(7, "PP") | {"t7": "XX"}}
    v = only_verdict(build_analysis(suite(spec)))
    assert isinstance(v.pass_rate, PairedComparison) and v.pass_rate.n == 7
    assert v.exclusions is not None
    assert isinstance(v.exclusions.worst, PairedComparison) and v.exclusions.worst.n == 8
    assert v.exclusions.worst.differences[-1] == 0.0 and v.exclusions.best.differences[-1] == 1.0  # type: ignore[union-attr]
