"""The experiment summary the tracing suites send (scaffold.tracing.summary): pass@k and pass^k per task
and treatment from the records, only for k with enough scored trials, and the gates."""

from __future__ import annotations

import math

from scaffold.reports.gates import GateResult, parse_gate
from scaffold.tracing.summary import experiment_summary
from tests.support.records import rec


def test_pass_at_k_and_pass_power_k_per_task_and_treatment_for_the_ks_the_trials_allow() -> None:
    records = [
        rec("a", "CONTROL", 1, "passed"),
        rec("a", "CONTROL", 2, "failed"),
        rec("a", "CONTROL", 3, "error"),  # measured nothing: not a scored trial
        rec("b", "SKILL", 1, "passed"),
    ]
    gate = GateResult(parse_gate("pass@1 of SKILL >= 0.8"), True, "pass@1 1.00 >= 0.80")
    summary = experiment_summary("exp", records, [gate], quality_gates=False)
    a, b = summary.aggregates
    assert (a.task, a.treatment, a.runs, a.passed, a.agent) == ("a", "CONTROL", 2, 1, "unknown")
    assert a.pass_at_k == {1: 0.5, 2: 1.0}
    assert a.pass_power_k == {1: 0.5, 2: 0.0}
    assert (b.runs, b.pass_at_k, b.pass_power_k) == (1, {1: 1.0}, {1: 1.0})  # k=2 needs two trials
    out = summary.outputs()
    assert (out["cases"], out["passed"], out["failed"], out["errors"]) == (4, 2, 1, 1)
    assert out["aggregates"]["a/CONTROL"]["pass_at_k"] == {"1": 0.5, "2": 1.0}
    assert out["gates"] == [{"gate": "pass@1 of SKILL >= 0.8", "passed": True, "message": "pass@1 1.00 >= 0.80"}]
    assert out["quality_gates"] == "failed"
    assert not any(math.isnan(v) for agg in summary.aggregates for v in agg.pass_at_k.values())
