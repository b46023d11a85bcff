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


def test_not_worse_than_fails_only_on_a_significant_regression() -> None:
    assert check("SKILL not worse than CONTROL", SIX_BETTER).passed
    assert check("SKILL not worse than CONTROL", SIX_SAME).passed
    regression = check("CONTROL not worse than SKILL", SIX_BETTER)
    assert not regression.passed
    assert regression.message.startswith("significant regression: pass rate difference -1.000 per task")
    assert "p = 0.0312, 6 paired tasks" in regression.message


def test_a_non_significant_drop_is_not_a_regression() -> None:
    # Three tasks all worse: p = 0.25 with the exact sign flip, so no regression can be claimed.
    records = suite({"CONTROL": tasks(3, "P"), "SKILL": tasks(3, "F")})
    assert check("SKILL not worse than CONTROL", records).passed


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
    assert "0 task(s) have a pass_rate under both" in result.message
    assert result.message.endswith("a gate without enough clean data fails")


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
