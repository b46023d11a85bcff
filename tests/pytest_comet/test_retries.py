"""Retries of trials excluded as noise (``--retry-excluded``), in real pytest sessions on the local backend.

The agent is a stand-in CLI (tests/data/fake_agent.py, a custom adapter) that reports a rate limit the
way Claude Code does: on every call, or only on the first call of a trial (it leaves a marker outside the
workspace, which a retry's fresh workspace does not reset). Checked: the attempt's folder and record, the
final record's ``attempts``, the reports' counts, the live lines, ``--retry-excluded 0``, a trial excluded
every time, and the budgets (a retry is a trial start; a refused retry leaves the trial for a resume).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.agents import register_fake_agent
from tests.support.factories import TaskFactory


@pytest.fixture
def fake_agent(pytester: pytest.Pytester, suite: TaskFactory, monkeypatch: pytest.MonkeyPatch) -> TaskFactory:
    """A suite run by the ``fake`` custom agent, with CONTROL as its only treatment."""
    register_fake_agent(pytester.path, monkeypatch)
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    return suite


def task(suite: TaskFactory, name: str, rate_limited: bool | Path = False) -> None:
    """A task the agent solves (and reports $0.01 for), unless a rate limit refuses it: *rate_limited* True
    on every call, a path on the first call only."""
    turn: dict[str, Any] = {"write": {"out.txt": "done\n"}}
    if rate_limited:
        turn["rate_limited"] = str(rate_limited) if isinstance(rate_limited, Path) else True
    suite.task(name, files={".fake-agent.json": json.dumps([turn])})


def run(pytester: pytest.Pytester, experiment: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        f"--workspace-root={pytester.path / 'ws'}", "--agent=fake", f"--experiment-id={experiment}", *args
    )


def trial_dir(pytester: pytest.Pytester, experiment: str, case: str) -> Path:
    return pytester.path / "local" / "logs" / "experiments" / experiment / "trials" / case


def record(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_a_rate_limited_attempt_is_run_again_and_every_attempt_is_kept(
    pytester: pytest.Pytester, fake_agent: TaskFactory
) -> None:
    task(fake_agent, "flaky", rate_limited=pytester.path / "flaky.once")
    task(fake_agent, "steady")
    result = run(pytester, "r")  # the default: up to 2 retries
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*flaky-CONTROL-r1: passed  score * s in trial  (after 1 retry)"])

    folder = trial_dir(pytester, "r", "flaky-CONTROL-r1")
    first = record(folder / "attempts" / "1" / "record.json")
    assert first["noise"]["category"] == "excluded" and first["noise"]["reason"] == "rate_limited", first["noise"]
    assert first["attempts"] == []
    # The attempt's own files moved with its record; the final attempt's are where a trial's always are.
    assert (folder / "attempts" / "1" / "transcript.html").is_file()
    assert first["streams"] and all((folder / "attempts" / "1" / name).is_file() for name in first["streams"])
    assert "rate limit" in (folder / "attempts" / "1" / "agent.turn-1.jsonl").read_text()
    final = record(folder / "record.json")
    # Flagged, not excluded: the stand-in prints a line that is not JSON (partial observability).
    assert final["verdict"] == "passed" and final["noise"]["category"] == "flagged"
    assert [(a["attempt"], a["folder"], a["noise_reason"]) for a in final["attempts"]] == [
        (1, "attempts/1", "rate_limited")
    ]
    assert final["attempts"][0]["verdict"] == first["verdict"] and final["attempts"][0]["cost_usd"] == 0.0
    assert final["attempts"][0]["started_at"] == first["started_at"] < final["started_at"]
    assert "rate limit" not in (folder / "agent.turn-1.jsonl").read_text()
    assert not (folder / "progress.json").exists() and sorted(p.name for p in (folder / "attempts").iterdir()) == ["1"]
    # Each attempt had a workspace of its own: the failed first one is kept where it was left.
    assert first["workspace"]["kept"] and Path(first["workspace"]["path"]).is_dir()
    assert not final["workspace"]["kept"] and not Path(first["workspace"]["path"] + "-a2").exists()
    assert (
        "this is attempt 2; earlier, excluded as noise: attempts/1/ (rate_limited"
        in (folder / "transcript.html").read_text()
    )
    steady = record(trial_dir(pytester, "r", "steady-CONTROL-r1") / "record.json")
    assert steady["attempts"] == [] and not (trial_dir(pytester, "r", "steady-CONTROL-r1") / "attempts").exists()

    experiment = folder.parent.parent
    summary = (experiment / "summary.md").read_text()
    assert "| CONTROL | 0 | 2 | 0 |" in summary  # included, flagged, excluded: the recovered trial counted once
    assert "| CONTROL | 1 | 1 | 0 | 3 | 100% (1/1) | 100% (1/1) | 1 | 0.0000 |" in summary, summary
    assert "| CONTROL | 1 | 1 | 0 | 3 |" in (experiment / "comparison_report.md").read_text()
    rows = {row["case_id"]: row for row in map(json.loads, (experiment / "results.jsonl").read_text().splitlines())}
    assert rows["flaky-CONTROL-r1"]["attempts"] == 2 and rows["steady-CONTROL-r1"]["attempts"] == 1
    assert rows["flaky-CONTROL-r1"]["analysis_set"] is True


def test_retry_excluded_0_turns_retries_off(pytester: pytest.Pytester, fake_agent: TaskFactory) -> None:
    task(fake_agent, "flaky", rate_limited=pytester.path / "flaky.once")
    result = run(pytester, "off", "--retry-excluded=0")
    result.assert_outcomes(xfailed=1)  # the baseline's failure, observed (no --gate)
    folder = trial_dir(pytester, "off", "flaky-CONTROL-r1")
    final = record(folder / "record.json")
    assert final["noise"]["reason"] == "rate_limited" and final["attempts"] == []
    assert not (folder / "attempts").exists()
    summary = (folder.parent.parent / "summary.md").read_text()
    assert "| CONTROL | 0 | 0 | 1 |" in summary and "Retried trials" not in summary


def test_a_trial_excluded_every_time_stays_excluded_after_its_retries(
    pytester: pytest.Pytester, fake_agent: TaskFactory
) -> None:
    task(fake_agent, "limited", rate_limited=True)
    task(fake_agent, "steady")
    result = run(pytester, "always", "--retry-excluded=1", "--html")
    result.assert_outcomes(passed=1, xfailed=1)
    folder = trial_dir(pytester, "always", "limited-CONTROL-r1")
    final = record(folder / "record.json")
    assert final["noise"]["category"] == "excluded" and final["noise"]["reason"] == "rate_limited"
    assert [a["noise_reason"] for a in final["attempts"]] == ["rate_limited"]
    assert sorted(p.name for p in (folder / "attempts").iterdir()) == ["1"]
    # One retry, as asked, then the trial is left excluded: two calls, both refused.
    assert all("rate limit" in (f / "agent.turn-1.jsonl").read_text() for f in (folder, folder / "attempts" / "1"))
    experiment = folder.parent.parent
    summary = (experiment / "summary.md").read_text()
    assert "| CONTROL | 0 | 1 | 1 |" in summary  # one excluded trial (not two): the final attempt counts
    assert "| CONTROL | 1 | 0 | 1 | 3 | 100% (1/1) | N/A (0/0) | N/A |" in summary, summary
    html = (experiment / "report.html").read_text()
    assert 'id="h-retries"' in html


def test_retries_are_trial_starts_to_max_trials(pytester: pytest.Pytester, fake_agent: TaskFactory) -> None:
    task(fake_agent, "a-flaky", rate_limited=pytester.path / "a.once")
    task(fake_agent, "b-steady")
    result = run(pytester, "budget", "--max-trials=2")
    # a's first attempt and its retry are the two starts: b is not started.
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*b-steady-CONTROL-r1: not run: --max-trials 2 reached (2 trial(s) started, 1 of them a retry)*"]
    )
    budget = json.loads((trial_dir(pytester, "budget", "x").parent.parent / "budget.json").read_text())
    assert budget["started"] == ["a-flaky-CONTROL-r1", "a-flaky-CONTROL-r1"]


def test_a_retry_the_budget_refuses_is_not_run_and_a_resume_goes_on(
    pytester: pytest.Pytester, fake_agent: TaskFactory
) -> None:
    task(fake_agent, "flaky", rate_limited=pytester.path / "flaky.once")
    first = run(pytester, "resume", "--max-trials=1")
    first.assert_outcomes(skipped=1)
    first.stdout.fnmatch_lines(["*flaky-CONTROL-r1: not run: --max-trials 1 reached (1 trial(s) started)*"])
    folder = trial_dir(pytester, "resume", "flaky-CONTROL-r1")
    assert not (folder / "record.json").exists()  # no answer yet: the trial is not run, its attempt kept
    kept = record(folder / "attempts" / "1" / "record.json")
    assert kept["noise"]["reason"] == "rate_limited"
    assert "Not run (budget)" in (folder.parent.parent / "summary.md").read_text()

    again = run(pytester, "resume")
    again.assert_outcomes(passed=1)
    final = record(folder / "record.json")
    assert final["verdict"] == "passed"
    assert [(a["attempt"], a["started_at"]) for a in final["attempts"]] == [(1, kept["started_at"])]
    assert sorted(p.name for p in (folder / "attempts").iterdir()) == ["1"]


def test_a_negative_retry_budget_is_a_usage_error(pytester: pytest.Pytester, fake_agent: TaskFactory) -> None:
    task(fake_agent, "steady")
    result = run(pytester, "neg", "--comet-retry-excluded=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--retry-excluded=-1: must be 0 or more (0 turns retries off)*"])
    not_a_number = run(pytester, "nan", "--retry-excluded=two")
    assert not_a_number.ret == pytest.ExitCode.USAGE_ERROR
