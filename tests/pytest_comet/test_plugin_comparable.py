"""Treatments produced differently are not compared, and bad records never end a session in a traceback.

Real trials on the local backend: six tasks the oracle solves and nop does not. CONTROL run by ``nop`` and
SKILL run by ``oracle`` differ by more than the treatment, so no report may credit SKILL with the
difference; a damaged record of an experiment is listed, never a crash.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold.cli.main import main
from scaffold.errors import ExitStatus
from tests.support.factories import TaskFactory


@pytest.fixture
def paired(suite: TaskFactory) -> TaskFactory:
    skill = suite.skill("helper")
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.treatments("skills.yaml", {"SKILL": {"description": "one skill", "skills": [str(skill)]}})
    for i in range(6):
        suite.task(f"t{i}", metadata={"default_treatments": ["CONTROL", "SKILL"]})
    return suite


def run(pytester: pytest.Pytester, experiment: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        f"--workspace-root={pytester.path / 'ws'}", f"--experiment-id={experiment}", "-p", "no:cacheprovider", *args
    )


def experiment_dir(pytester: pytest.Pytester, experiment: str) -> Path:
    return pytester.path / "local" / "logs" / "experiments" / experiment


def test_merging_control_run_by_nop_with_skill_run_by_oracle_is_refused(
    pytester: pytest.Pytester, paired: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    run(pytester, "ctl", "--agent=nop", "--treatment=CONTROL").assert_outcomes(xfailed=6)
    run(pytester, "sk", "--agent=oracle", "--treatment=SKILL").assert_outcomes(passed=6)
    dirs = [str(experiment_dir(pytester, "ctl")), str(experiment_dir(pytester, "sk"))]
    out = pytester.path / "out"
    capsys.readouterr()

    # Before the fix this printed "SKILL vs CONTROL: improvement" (p = 0.031) and exited 0.
    assert main(["report", *dirs, "--out", str(out)]) == ExitStatus.NOT_COMPARABLE == 4
    printed = capsys.readouterr()
    assert "agent differs: CONTROL ran nop, SKILL ran oracle" in printed.err
    assert "--allow-mixed" in printed.err and "improvement" not in printed.out
    assert not out.exists()  # nothing written that pairs them

    gates = ["--gate", "SKILL better than CONTROL", "--gate", "pass@1 of SKILL >= 0.9"]
    assert main(["report", *dirs, "--out", str(out), "--allow-mixed", *gates]) == 1
    printed = capsys.readouterr()
    assert "SKILL vs CONTROL: not comparable: agent differs" in printed.out
    assert "gate FAIL: SKILL better than CONTROL: not comparable: agent differs" in printed.out
    assert "gate PASS: pass@1 of SKILL >= 0.9" in printed.out  # one treatment alone is still answered
    assert "CONTROL: agent nop (version unknown), model default, endpoint none, backend local" in printed.out
    assert "SKILL: agent oracle (version unknown), model default, endpoint none, backend local" in printed.out
    for name in ("summary.md", "comparison_report.md"):
        text = (out / name).read_text()
        assert "not comparable: agent differs" in text
        assert "**improvement**" not in text and "**regression**" not in text
        assert "| CONTROL | nop | unknown | default | none | local |" in text
        assert "| SKILL | oracle | unknown | default | none | local |" in text


def test_the_session_end_refuses_an_experiment_resumed_with_another_agent(
    pytester: pytest.Pytester, paired: TaskFactory
) -> None:
    run(pytester, "e", "--agent=nop", "--treatment=CONTROL").assert_outcomes(xfailed=6)
    result = run(pytester, "e", "--agent=oracle", "--treatment=SKILL")
    result.assert_outcomes(passed=6)
    # Before the fix: "verdict: SKILL vs CONTROL: improvement" and exit 0.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["reports not written: treatments are not comparable (SKILL vs CONTROL: agent differs*"]
    )
    assert "verdict:" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()

    allowed = run(pytester, "e", "--agent=oracle", "--treatment=SKILL", "--allow-mixed")
    assert allowed.ret == pytest.ExitCode.OK
    allowed.stdout.fnmatch_lines(
        [
            "treatment CONTROL: agent nop (version unknown)*",
            "treatment SKILL: agent oracle (version unknown)*",
            "verdict: SKILL vs CONTROL: not comparable: agent differs",
        ]
    )


def test_a_bad_record_reached_at_session_end_gives_totals_and_the_listing(
    pytester: pytest.Pytester, paired: TaskFactory
) -> None:
    run(pytester, "e", "--agent=oracle", "--task=t0,t1,t2,t3").assert_outcomes(passed=8)
    trials = experiment_dir(pytester, "e") / "trials"
    # A record of a trial this session does not run (t3), damaged the ways found in the field: a string where a
    # number belongs, and a verdict that is no verdict.
    for case, change in (("t3-SKILL-r1", {"weighted_score": "high"}), ("t3-CONTROL-r1", {"verdict": 42})):
        path = trials / case / "record.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    result = run(pytester, "e", "--agent=oracle", "--task=t0,t1,t2", "--gate=pass@1 of SKILL >= 0.5")
    result.assert_outcomes(passed=6)
    text = result.stdout.str()
    assert "Traceback" not in text + result.stderr.str() and "INTERNALERROR" not in text
    result.stdout.fnmatch_lines(
        [
            "trials: 6 passed (6 from earlier runs of this experiment)",
            "*unreadable record: trials/t3-CONTROL-r1/record.json: field $.verdict: *",
            "*unreadable record: trials/t3-SKILL-r1/record.json: field $.weighted_score: *"
            "Expected `float | null`, got `str`",
            "2 record file(s) could not be read: left out of every figure; the session fails*",
        ]
    )
    # A gate cannot vouch for trials it did not see.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = (experiment_dir(pytester, "e") / "summary.md").read_text()
    assert "## Unreadable records" in summary
    assert "- trials/t3-SKILL-r1/record.json: field `$.weighted_score`: not a valid trial record" in summary
    rows = [json.loads(line) for line in (experiment_dir(pytester, "e") / "results.jsonl").read_text().splitlines()]
    assert len([r for r in rows if "case_id" in r]) == 6
    assert [(r["record"], r["field"]) for r in rows if r.get("unreadable")] == [
        ("trials/t3-CONTROL-r1/record.json", "$.verdict"),
        ("trials/t3-SKILL-r1/record.json", "$.weighted_score"),
    ]
