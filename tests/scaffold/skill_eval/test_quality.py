"""The eval.yaml quality gates (per task, over the non-baseline treatments) answered from an analysis."""

from __future__ import annotations

import json
import math
from pathlib import Path

from scaffold.reports.analysis import build_analysis
from scaffold.reports.gates import evaluate_gates, parse_gate
from scaffold.skill_eval.manifest import EvalSkill, Manifest, QualityGates
from scaffold.skill_eval.quality import assess, quality_json, quality_markdown
from scaffold.skill_eval.report import write_quality
from tests.support.records import rec, suite


def test_floors_per_task_pool_the_non_baseline_treatments() -> None:
    analysis = build_analysis(
        suite({"CONTROL": {"a": "FF", "b": "FF"}, "SKILL": {"a": "PP", "b": "PF"}, "OTHER": {"a": "PP", "b": "PP"}})
    )
    result = assess(QualityGates(min_pass_at_1=0.8, max_instability_gap=0.0), analysis, ["CONTROL"])
    assert result.treatments == ("OTHER", "SKILL")
    by_task = {t.task: t for t in result.tasks}
    assert (by_task["a"].trials, by_task["a"].pass_at_1, by_task["a"].instability_gap) == (4, 1.0, 0.0)
    assert (by_task["b"].pass_at_1, by_task["b"].instability_gap) == (0.75, 0.75)
    assert result.failures == (
        "b: pass@1 0.75 is below the required 0.8",
        "b: instability gap 0.75 exceeds the allowed 0",
    )
    assert not result.passed


def test_weighted_score_floor_and_missing_scores() -> None:
    records = [rec("a", "CONTROL", 1), rec("a", "SKILL", 1, score=0.4), rec("a", "SKILL", 2, score=0.8)]
    records += [rec("b", "CONTROL", 1), rec("b", "SKILL", 1, "error")]
    result = assess(QualityGates(min_weighted_score=0.7), build_analysis(records), ["CONTROL"])
    by_task = {t.task: t for t in result.tasks}
    assert math.isclose(by_task["a"].weighted_score, 0.6)
    assert math.isnan(by_task["b"].weighted_score)
    assert result.failures == (
        "a: weighted score 0.6 is below the required 0.7",
        "b: no trial reported a weighted score (required 0.7)",
    )


def test_passing_gates_and_no_gates() -> None:
    analysis = build_analysis(suite({"CONTROL": {"a": "F"}, "SKILL": {"a": "PPP"}}))
    assert assess(
        QualityGates(min_pass_at_1=1, min_weighted_score=1, max_instability_gap=0), analysis, ["CONTROL"]
    ).passed
    assert assess(QualityGates(), analysis, ["CONTROL"]).passed


def test_only_baselines_leave_nothing_to_assess() -> None:
    analysis = build_analysis(suite({"CONTROL": {"a": "P"}, "SKILL": {"a": "P"}}))
    result = assess(QualityGates(min_pass_at_1=0.5), analysis, ["CONTROL", "SKILL"])
    assert result.failures == (
        "no treatment left to assess: every treatment of the run is a baseline (CONTROL, SKILL)",
    )


def test_gate_results_decide_too_and_json_and_markdown_show_everything(tmp_path: Path) -> None:
    analysis = build_analysis(suite({"CONTROL": {"a": "P"}, "SKILL": {"a": "P"}}))
    gate_results = evaluate_gates([parse_gate("pass rate of SKILL < 0.5")], analysis)
    gates = QualityGates(min_pass_at_1=1, gates=("pass rate of SKILL < 0.5",))
    result = assess(gates, analysis, ["CONTROL"], gate_results)
    assert result.failures == () and not result.passed
    data = quality_json(gates, result)
    assert data["passed"] is False and data["gates"][0]["passed"] is False
    assert data["tasks"] == [
        {"task": "a", "trials": 1, "pass_at_1": 1.0, "weighted_score": 1.0, "instability_gap": 0.0}
    ]
    text = quality_markdown(result)
    assert text.startswith("## Quality gates (eval.yaml)\n\n**Failed** over SKILL.")
    assert "| a | 1 | 1.000 | 1.000 | 0.000 |" in text
    assert "- FAIL gate `pass rate of SKILL < 0.5`" in text

    (tmp_path / "summary.md").write_text("# Summary\n")
    manifest = Manifest(file=None, name="m", skill=EvalSkill("s", tmp_path), quality_gates=gates)
    written = write_quality(manifest, analysis, gate_results, tmp_path)
    assert written == result
    assert json.loads((tmp_path / "quality-gates.json").read_text()) == data
    assert (tmp_path / "summary.md").read_text() == "# Summary\n\n" + text
