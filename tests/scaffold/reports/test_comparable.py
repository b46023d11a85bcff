"""Comparability of treatments: every field that must agree, unknown values, gates and the refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scaffold.errors import MixedError
from scaffold.records import TrialRecord
from scaffold.records.files import upgrade
from scaffold.reports.analysis import build_analysis
from scaffold.reports.config import ReportOutputs
from scaffold.reports.gates import evaluate_gates, parse_gate
from scaffold.reports.write import write_reports
from tests.support.records import rec

AGENT = {"name": "claude-code", "model": "m1", "version": "2.0.1", "endpoint": "remote"}


def records(treatment: str, verdicts: str, **fields: Any) -> list[TrialRecord]:
    """Tasks t0, t1, ... one trial each (P passed, F failed), run the way *fields* say."""
    base: dict[str, Any] = {"agent": AGENT, "workspace": {"backend": "docker"}, "harness_version": "0.1.0"}
    out = []
    for i, verdict in enumerate(verdicts):
        task = f"t{i}"
        config = {"task": {"name": task, "content_hash": f"sha256:{task}"}}
        out.append(
            rec(task, treatment, 1, {"P": "passed", "F": "failed"}[verdict], **{"config": config, **base, **fields})
        )
    return out


def verdict_of(control: list[TrialRecord], skill: list[TrialRecord]) -> tuple[str, str]:
    (verdict,) = build_analysis([*control, *skill]).verdicts
    return verdict.label, verdict.reason


def test_the_same_production_is_compared() -> None:
    assert verdict_of(records("CONTROL", "FFFFFF"), records("SKILL", "PPPPPP"))[0] == "improvement"


@pytest.mark.parametrize(
    ("fields", "label", "said"),
    [
        ({"agent": {**AGENT, "name": "codex"}}, "agent", "CONTROL ran claude-code, SKILL ran codex"),
        ({"agent": {**AGENT, "version": "2.0.2"}}, "agent version", "CONTROL ran 2.0.1, SKILL ran 2.0.2"),
        ({"agent": {**AGENT, "model": "m2"}}, "model", "CONTROL ran m1, SKILL ran m2"),
        ({"agent": {**AGENT, "model": None}}, "model", "CONTROL ran m1, SKILL ran default"),  # None: a value
        ({"agent": {**AGENT, "endpoint": "local"}}, "endpoint", "CONTROL ran remote, SKILL ran local"),
        ({"workspace": {"backend": "local"}}, "backend", "CONTROL ran docker, SKILL ran local"),
        ({"harness_version": "0.2.0"}, "harness version", "CONTROL ran 0.1.0, SKILL ran 0.2.0"),
    ],
)
def test_any_difference_but_the_treatment_makes_them_not_comparable(
    fields: dict[str, Any], label: str, said: str
) -> None:
    got, reason = verdict_of(records("CONTROL", "FFFFFF"), records("SKILL", "PPPPPP", **fields))
    assert got == f"not comparable: {label} differs"
    assert f"{label} differs: {said}" in reason


def test_task_content_that_changed_between_the_treatments_is_named() -> None:
    skill = records("SKILL", "PPPPPP")
    skill[0] = rec(
        "t0",
        "SKILL",
        1,
        config={"task": {"name": "t0", "content_hash": "sha256:other"}},
        agent=AGENT,
        workspace={"backend": "docker"},
        harness_version="0.1.0",
    )
    label, reason = verdict_of(records("CONTROL", "FFFFFF"), skill)
    assert label == "not comparable: task content differs"
    assert "CONTROL ran task 't0' at sha256:t0, SKILL ran task 't0' at sha256:other" in reason


def test_unknown_is_not_a_difference_so_old_records_compare_with_themselves() -> None:
    # Records from before harness_version and agent.endpoint were recorded: both unknown on both sides.
    old: dict[str, Any] = {"agent": {k: v for k, v in AGENT.items() if k != "endpoint"}}
    control = [upgrade({**r.to_dict(), **old, "harness_version": None}) for r in records("CONTROL", "FFFFFF")]
    skill = [upgrade({**r.to_dict(), **old, "harness_version": None}) for r in records("SKILL", "PPPPPP")]
    assert control[0].harness_version is None and control[0].agent.endpoint is None
    assert verdict_of(control, skill)[0] == "improvement"
    # An errored trial that never reached its agent has no version: not a difference either.
    errored = rec(
        "t0",
        "SKILL",
        2,
        "error",
        agent={**AGENT, "version": None},
        workspace={"backend": "docker"},
        harness_version="0.1.0",
        config={"task": {"name": "t0", "content_hash": "sha256:t0"}},
    )
    assert verdict_of(records("CONTROL", "FFFFFF"), [*records("SKILL", "PPPPPP"), errored])[0] == "improvement"


def test_a_treatment_whose_own_trials_disagree_is_comparable_with_nothing() -> None:
    skill = records("SKILL", "PPP") + records("SKILL", "PPPPPP", agent={**AGENT, "version": "2.0.2"})[3:]
    label, reason = verdict_of(records("CONTROL", "FFFFFF"), skill)
    assert label == "not comparable: agent version differs"
    assert "SKILL ran 2.0.1, 2.0.2" in reason


def test_not_comparable_claims_no_effect_anywhere_and_gates_that_compare_fail(tmp_path: Path) -> None:
    mixed = [*records("CONTROL", "FFFFFF"), *records("SKILL", "PPPPPP", agent={**AGENT, "name": "codex"})]
    with pytest.raises(MixedError, match="SKILL vs CONTROL: agent differs: CONTROL ran claude-code, SKILL ran codex"):
        write_reports(tmp_path / "refused", mixed, title="e")
    assert not (tmp_path / "refused").exists()
    written = write_reports(tmp_path / "out", mixed, title="e", allow_mixed=True)
    (verdict,) = written.analysis.verdicts
    assert not verdict.comparable and verdict.raw_label == verdict.strict_label == verdict.label
    for path in written.paths:
        text = path.read_text()
        assert "not comparable: agent differs" in text or path.suffix == ".jsonl"
        assert "**improvement**" not in text and "improvement</span>" not in text
    gates = [
        parse_gate(g)
        for g in ("SKILL better than CONTROL", "SKILL not worse than CONTROL", "pass rate of SKILL >= 0.5")
    ]
    better, not_worse, threshold = evaluate_gates(gates, written.analysis)
    assert not better.passed and not not_worse.passed and threshold.passed
    assert better.message.startswith("not comparable: agent differs (agent differs: CONTROL ran claude-code")


def test_every_report_names_what_produced_each_treatment(tmp_path: Path) -> None:
    written = write_reports(tmp_path, [*records("CONTROL", "FFFFFF"), *records("SKILL", "PPPPPP")], title="e")
    row_control = "| CONTROL | claude-code | 2.0.1 | m1 | remote | docker | 0.1.0 |"
    assert row_control in (tmp_path / "summary.md").read_text()
    assert row_control in (tmp_path / "comparison_report.md").read_text()
    write_reports(tmp_path / "html", records("CONTROL", "FFFFFF"), title="e", outputs=ReportOutputs(html=True))
    page = (tmp_path / "html" / "report.html").read_text()
    cells = "<td>claude-code</td><td>2.0.1</td><td>m1</td><td>remote</td><td>docker</td><td>0.1.0</td>"
    assert f'<th scope="row">CONTROL</th>{cells}' in page
    assert written.analysis.reports[0].identity is not None
