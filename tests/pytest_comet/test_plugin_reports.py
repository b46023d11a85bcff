"""The plugin's reports and gates end to end: real tasks run by the oracle agent on the local backend.

The suite: six tasks whose reference solution succeeds only when a skill is installed in the workspace,
so SKILL_HELPER passes every task and CONTROL fails every one (a known, significant improvement).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.factories import TaskFactory

SOLVE_WITH_SKILL = "if [ -d .claude/skills ]; then echo done > out.txt; else echo nope > out.txt; fi\n"


@pytest.fixture
def helped(suite: TaskFactory) -> TaskFactory:
    skill = suite.skill("helper")
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.treatments("skills.yaml", {"SKILL_HELPER": {"description": "one skill", "skills": [str(skill)]}})
    for i in range(6):
        suite.task(f"t{i}", solve=SOLVE_WITH_SKILL, metadata={"default_treatments": ["CONTROL", "SKILL_HELPER"]})
    return suite


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=e", "-p", "no:cacheprovider", *args
    )


def experiment(pytester: pytest.Pytester) -> Path:
    return pytester.path / "local" / "logs" / "experiments" / "e"


def test_without_a_gate_the_baseline_is_observed_and_every_report_written(
    pytester: pytest.Pytester, helped: TaskFactory
) -> None:
    result = run(pytester, "-rx")
    result.assert_outcomes(passed=6, xfailed=6)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["XFAIL *t0-CONTROL-r1* - baseline trial, observed only (no --gate): trial t0-CONTROL-r1: verdict failed*"]
    )
    result.stdout.fnmatch_lines(
        [
            "verdict: SKILL_HELPER vs CONTROL: improvement (*",
            f"comparison report: {experiment(pytester) / 'comparison_report.md'}",
            f"results: {experiment(pytester) / 'results.jsonl'}",
        ]
    )
    names = sorted(p.name for p in experiment(pytester).iterdir())
    assert names == ["comparison_report.md", "plan.json", "results.jsonl", "summary.md", "trials"]  # plan: comet status
    report = (experiment(pytester) / "comparison_report.md").read_text()
    assert "### SKILL_HELPER vs CONTROL: improvement" in report
    rows = [json.loads(line) for line in (experiment(pytester) / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["passed"] for r in rows if r["treatment"] == "CONTROL"} == {False}
    assert all((experiment(pytester) / r["record"]).is_file() for r in rows)
    assert all(r["streams"] and (experiment(pytester) / r["streams"][0]).is_file() for r in rows)


def test_another_baseline_makes_control_failures_fail(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = run(pytester, "--baseline=SKILL_HELPER", "--task=t0,t1,t2")
    result.assert_outcomes(passed=3, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["verdict: CONTROL vs SKILL_HELPER: no significant difference (*"])


def test_passing_gates_answer_for_the_session(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = run(pytester, "--gate=SKILL_HELPER better than CONTROL", "--gate=pass@1 of SKILL_HELPER >= 90%")
    # With gates the baseline's trials are tested like any other (shown failed), but the gates decide.
    result.assert_outcomes(passed=6, failed=6)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "gate PASS: SKILL_HELPER better than CONTROL: significant improvement; verdict 'improvement' "
            "(across tasks): across tasks: pass rate +100.0% per task*",
            "gate PASS: pass@1 of SKILL_HELPER >= 90%: pass@1 of SKILL_HELPER = 1 (mean over 6 task(s)); needs >= 0.9",
        ]
    )


def test_a_failing_gate_fails_the_session(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = run(pytester, "--gate=CONTROL not worse than SKILL_HELPER", "--task=t0,t1,t2,t3,t4,t5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate FAIL: CONTROL not worse than SKILL_HELPER: significant regression*"])


def test_a_gate_without_enough_data_fails(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = run(pytester, "--gate=SKILL_HELPER not worse than CONTROL", "--task=t0,t1", "--treatment=SKILL_HELPER")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate FAIL: SKILL_HELPER not worse than CONTROL: no trials of 'CONTROL'*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gate=SKILL_HELPER beats CONTROL"], "*--gate 'SKILL_HELPER beats CONTROL' does not parse*"),
        (["--report-config=nope.json"], "*--report-config nope.json: cannot be read*"),
    ],
)
def test_bad_gates_and_report_configs_are_usage_errors(
    pytester: pytest.Pytester, helped: TaskFactory, args: list[str], message: str
) -> None:
    result = run(pytester, "--task=t0", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not experiment(pytester).exists()


def test_html_by_flag_and_by_config_file(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = run(pytester, "--task=t0", "--html")
    result.stdout.fnmatch_lines([f"report: {experiment(pytester) / 'report.html'}"])
    page = (experiment(pytester) / "report.html").read_text()
    assert 'href="trials/t0-CONTROL-r1/record.json"' in page
    config = pytester.path / "outputs.json"
    config.write_text('{"report_outputs": {"html": true, "markdown": false}}')
    (experiment(pytester) / "report.html").unlink()
    run(pytester, "--task=t0", f"--report-config={config}").assert_outcomes(passed=1, xfailed=1)
    assert (experiment(pytester) / "report.html").is_file()


def test_report_outputs_from_the_environment(
    pytester: pytest.Pytester, helped: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMET_EVAL_REPORT_CONFIG", '{"report_outputs": {"markdown": false}}')
    run(pytester, "--task=t0").assert_outcomes(passed=1, xfailed=1)
    assert sorted(p.name for p in experiment(pytester).iterdir()) == ["plan.json", "results.jsonl", "trials"]


def test_under_xdist_the_controller_reports_and_gates(pytester: pytest.Pytester, helped: TaskFactory) -> None:
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        f"--workspace-root={pytester.path / 'ws'}",
        "--experiment-id=e",
        "--gate=CONTROL not worse than SKILL_HELPER",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate FAIL: CONTROL not worse than SKILL_HELPER: significant regression*"])
    rows = (experiment(pytester) / "results.jsonl").read_text().splitlines()
    assert len(rows) == 12
    assert {json.loads(r)["case_id"] for r in rows} == {
        f"t{i}-{t}-r1" for i in range(6) for t in ("CONTROL", "SKILL_HELPER")
    }
