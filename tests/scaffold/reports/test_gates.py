"""scaffold.reports.gates: the grammar, and every kind of gate on synthetic trial sets with known answers."""

from __future__ import annotations

import pytest

from scaffold.errors import GateError
from scaffold.records import TrialRecord
from scaffold.reports.analysis import build_analysis
from scaffold.reports.gates import Gate, GateResult, evaluate_gates, parse_gate
from tests.support.records import rec, suite, tasks


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("SKILL not worse than CONTROL", Gate("", "not worse than", "SKILL", "pass_rate", baseline="CONTROL")),
        ("  SKILL  NOT Worse  than CONTROL ", Gate("", "not worse than", "SKILL", "pass_rate", baseline="CONTROL")),
        ("SKILL better than OLD on score", Gate("", "better than", "SKILL", "mean_score", baseline="OLD")),
        (
            "SKILL_X better than CONTROL on pass rate",
            Gate("", "better than", "SKILL_X", "pass_rate", baseline="CONTROL"),
        ),
        ("pass@1 of SKILL_X >= 0.8", Gate("", "threshold", "SKILL_X", "pass@1", op=">=", value=0.8)),
        ("pass@1 of SKILL_X>=80%", Gate("", "threshold", "SKILL_X", "pass@1", op=">=", value=0.8)),
        ("pass^5 of a.b-c > .5", Gate("", "threshold", "a.b-c", "pass^5", op=">", value=0.5)),
        ("Pass Rate of S < 1", Gate("", "threshold", "S", "pass_rate", op="<", value=1.0)),
        ("score of S == 1", Gate("", "threshold", "S", "mean_score", op="==", value=1.0)),
        ("cost of S <= 0.25", Gate("", "threshold", "S", "cost", op="<=", value=0.25)),
        ("excluded of S <= 10%", Gate("", "threshold", "S", "excluded", op="<=", value=0.1)),
    ],
)
def test_the_grammar(expression: str, expected: Gate) -> None:
    gate = parse_gate(expression)
    assert gate.expression == expression
    assert (gate.kind, gate.treatment, gate.metric, gate.baseline, gate.op) == (
        expected.kind,
        expected.treatment,
        expected.metric,
        expected.baseline,
        expected.op,
    )
    assert gate.value == pytest.approx(expected.value, nan_ok=True)


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "SKILL",
        "SKILL worse than CONTROL",
        "pass@1 of SKILL",
        "pass@1 of SKILL >= high",
        "pass@0 of S >= 1",
        "pass@1 of SKILL => 0.8",
        "median of S >= 1",
        "SKILL not worse than CONTROL on cost",
    ],
)
def test_what_does_not_parse_is_named_with_the_accepted_forms(expression: str) -> None:
    with pytest.raises(GateError) as caught:
        parse_gate(expression)
    assert f"--gate {expression!r}" in str(caught.value)


def check(expression: str, records: list[TrialRecord], baseline: str = "CONTROL") -> GateResult:
    (result,) = evaluate_gates([parse_gate(expression)], build_analysis(records, baseline=baseline))
    return result


SIX_BETTER = suite({"CONTROL": tasks(6, "FF"), "SKILL": tasks(6, "PP")})
SIX_SAME = suite({"CONTROL": tasks(6, "PF"), "SKILL": tasks(6, "FP")})


def test_not_worse_than_is_non_inferiority_within_a_margin() -> None:
    assert check("SKILL not worse than CONTROL", SIX_BETTER).passed
    # The same outcomes on 6 tasks x 2 trials: no regression is seen, but the interval reaches -31
    # points: that a skill costs less than 5 points is not shown, so the gate fails (absence of evidence
    # is not evidence of no harm).
    same = check("SKILL not worse than CONTROL", SIX_SAME)
    assert not same.passed and same.message.startswith("not shown to be worse by less than 5%: lower bound")
    # 30 tasks x 10 trials, equal under both: the lower bound is about -7 points: within 10, not 5.
    equal = suite({"CONTROL": tasks(30, "PPPPPFFFFF"), "SKILL": tasks(30, "FFFFFPPPPP")})
    assert not check("SKILL not worse than CONTROL", equal).passed
    within = check("SKILL not worse than CONTROL by more than 10 points", equal)
    assert within.passed and within.message.startswith("not worse by more than 10%: lower bound of the difference -")
    regression = check("CONTROL not worse than SKILL", SIX_BETTER)
    assert not regression.passed
    assert regression.message.startswith("significant regression: pass rate difference -1.000 per task")
    assert "p = 0.0312, 6 paired tasks" in regression.message


def test_a_drop_too_small_to_be_significant_does_not_pass_not_worse_than() -> None:
    # Three tasks all worse, one trial each: no regression can be claimed (p = 0.25 on these tasks), and
    # no more can the opposite: the gate fails.
    records = suite({"CONTROL": tasks(3, "P"), "SKILL": tasks(3, "F")})
    result = check("SKILL not worse than CONTROL", records)
    assert not result.passed and "verdict 'no significant difference' (on these tasks)" in result.message


@pytest.mark.parametrize(
    ("expression", "margin"),
    [
        ("SKILL not worse than CONTROL", 0.05),
        ("SKILL not worse than CONTROL by more than 10 points", 0.10),
        ("SKILL not worse than CONTROL by more than 2.5% on score", 0.025),
        ("SKILL NOT WORSE THAN CONTROL BY MORE THAN 1 POINT", 0.01),
    ],
)
def test_the_margin_is_read_in_points(expression: str, margin: float) -> None:
    assert parse_gate(expression).margin == pytest.approx(margin)


@pytest.mark.parametrize(
    "expression",
    ["SKILL better than CONTROL by more than 5 points", "SKILL not worse than CONTROL by more than 0 points"],
)
def test_a_margin_that_makes_no_sense_is_refused(expression: str) -> None:
    with pytest.raises(GateError, match="margin"):
        parse_gate(expression)


def test_better_than_needs_a_significant_improvement() -> None:
    assert check("SKILL better than CONTROL", SIX_BETTER).passed
    same = check("SKILL better than CONTROL", SIX_SAME)
    assert not same.passed and same.message.startswith("no significant improvement")


def test_comparisons_between_any_two_treatments_and_on_score() -> None:
    records = suite({"CONTROL": tasks(6, "F"), "A": tasks(6, "P"), "B": tasks(6, "F")})
    assert check("A better than B", records).passed
    assert not check("B not worse than A on score", records).passed


def test_insufficient_data_fails_the_gate() -> None:
    records = suite({"CONTROL": tasks(6, "XX"), "SKILL": tasks(6, "PP")})
    result = check("SKILL not worse than CONTROL", records)
    assert not result.passed
    assert "verdict 'Insufficient clean data'" in result.message
    assert "no task has a scored trial under both 'CONTROL' and 'SKILL'" in result.message


def test_an_unknown_treatment_fails_the_gate_naming_the_known_ones() -> None:
    result = check("NOPE not worse than CONTROL", SIX_BETTER)
    assert not result.passed
    assert result.message == "no trials of 'NOPE' (treatments found: CONTROL, SKILL); the gate fails"
    assert not check("pass@1 of NOPE >= 0", SIX_BETTER).passed


def test_pass_at_k_thresholds() -> None:
    # Task a: 3 of 4 passed, task b: 1 of 4. pass@1 = mean(0.75, 0.25) = 0.5;
    # pass@2 = mean(1, 1 - C(3,2)/C(4,2) = 0.5) = 0.75; pass^2 = mean(C(3,2)/C(4,2) = 0.5, 0) = 0.25.
    records = suite({"S": {"a": "PPPF", "b": "PFFF"}})
    assert check("pass@1 of S >= 0.5", records, "S").passed
    assert not check("pass@1 of S > 50%", records, "S").passed
    result = check("pass@2 of S >= 0.75", records, "S")
    assert result.passed and result.message == "pass@2 of S = 0.75 (mean over 2 task(s)); needs >= 0.75"
    assert check("pass^2 of S == 0.25", records, "S").passed
    assert check("pass rate of S == 0.5", records, "S").passed


def test_pass_at_k_beyond_the_trials_run_cannot_be_computed_and_fails() -> None:
    result = check("pass@5 of S >= 0", suite({"S": {"a": "PPPP"}}), "S")
    assert not result.passed
    assert result.message == (
        "pass@5 of S cannot be computed (1 task(s) have fewer than 5 scored trials, e.g. 'a'); the gate fails"
    )


def test_score_cost_and_excluded_thresholds() -> None:
    records = [
        rec("a", "S", 1, score=0.5, trajectory={"agent": "claude-code", "cost_usd": 0.2}),
        rec("a", "S", 2, score=1.0, trajectory={"agent": "claude-code", "cost_usd": 0.4}),
        rec("b", "S", 1, "failed", noise={"category": "excluded", "reason": "rate_limited", "evidence": {}}),
    ]
    assert check("score of S == 0.75", records, "S").passed  # task a only: b has no analysis trial
    assert check("cost of S <= 0.3", records, "S").passed
    assert not check("cost of S < 0.3", records, "S").passed
    excluded = check("excluded of S <= 30%", records, "S")
    assert not excluded.passed and "1 of 3 trials excluded" in excluded.message
    no_cost = check("cost of S <= 1", suite({"S": {"a": "P"}}), "S")
    assert not no_cost.passed and "no trial reported a cost" in no_cost.message


def test_a_gate_never_passes_what_the_verdict_refuses() -> None:
    # On the analysis set alone SKILL is better on all 6 tasks (the old gate passed), but two thirds of
    # CONTROL's trials were excluded as noise: the verdict is inconclusive, and so is every gate on it.
    records = suite({"CONTROL": tasks(6, "FXX"), "SKILL": tasks(6, "PPP")})
    better = check("SKILL better than CONTROL", records)
    assert not better.passed and "verdict 'Inconclusive due to data quality' (across tasks)" in better.message
    assert not check("SKILL not worse than CONTROL", records).passed


def test_two_tasks_answer_on_these_tasks() -> None:
    # comet eval's default: 2 generated tasks x 5 trials, the skill 10 of 10, CONTROL 5 of 10.
    records = suite({"CONTROL": {"a": "PPFFF", "b": "PPPFF"}, "SKILL": {"a": "PPPPP", "b": "PPPPP"}})
    result = check("SKILL better than CONTROL", records)
    assert result.passed and "verdict 'improvement' (on these tasks)" in result.message
    assert check("SKILL not worse than CONTROL", records).passed
    # Against another treatment than the baseline the test over tasks answers: 2 tasks give it nothing.
    assert not check("CONTROL not worse than SKILL", records).passed
