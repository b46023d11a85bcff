"""Retries in the trial runner (``Settings.retry_excluded``): which exclusions are retried, and what a trial
stopped or refused between attempts leaves for a resume. The agents are scripted in-process; the
workspaces, folders and records are real (the plugin's end-to-end runs: tests/pytest_comet/test_retries.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents.base import AgentTraits
from scaffold.experiment.cases import Case
from scaffold.records.files import read_record
from scaffold.trajectory import ApiFailure, Trajectory
from scaffold.trial.runner import RetryNotStarted
from scaffold.workspaces.base import NO_NETWORK
from tests.support.factories import TaskFactory, make_runner

CASE = Case("t", "CONTROL", 1)


class Scripted:
    """An agent whose N-th call does what the N-th step says: ``"ok"`` solves the task, a failure kind
    ("rate_limited", "auth_failed") ends on that API failure, a callable is called (to interrupt)."""

    name, traits, model, install, network = "scripted", AgentTraits(invokes_skills=False), None, None, NO_NETWORK

    def __init__(self, *steps: str | Callable[[], None]) -> None:
        self.steps = list(steps)
        self.calls = 0

    def redact(self, text: str) -> str:
        return text

    def run(self, workspace: Any, request: Any) -> Trajectory:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if callable(step):
            step()
        if step == "ok":
            workspace.write_text("out.txt", "done\n")
            return Trajectory(agent=self.name, exit_code=0, cost_usd=0.02)
        failure = ApiFailure(str(step), 401 if step == "auth_failed" else 429, "result", f"{step}", final=True)
        return Trajectory(agent=self.name, exit_code=1, failures=(failure,), cost_usd=0.01)


def runner(factory: TaskFactory, tmp_path: Path, agent: Scripted, retries: int = 2) -> Any:
    made = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, retry_excluded=retries)
    made.agent = agent
    return made


@pytest.fixture
def trial_dir(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "experiments" / "exp-1" / "trials" / CASE.id


def test_a_recovered_trial_lists_its_attempts_and_counts_once(
    factory: TaskFactory, tmp_path: Path, trial_dir: Path
) -> None:
    factory.task("t")
    agent = Scripted("rate_limited", "rate_limited", "ok")
    result = runner(factory, tmp_path, agent).run(CASE)
    assert agent.calls == 3
    record = result.record
    assert record.verdict == "passed" and record.noise.category == "included"
    assert [(a.attempt, a.folder, a.noise_reason, a.cost_usd) for a in record.attempts] == [
        (1, "attempts/1", "rate_limited", 0.01),
        (2, "attempts/2", "rate_limited", 0.01),
    ]
    assert record.cost_of_attempts_usd == pytest.approx(0.04)
    second = read_record(trial_dir / "attempts" / "2" / "record.json")
    assert [a.attempt for a in second.attempts] == [1]  # each attempt's record lists the ones before it
    assert sorted(p.name for p in (trial_dir / "attempts").iterdir()) == ["1", "2"]
    assert sorted(p.name for p in trial_dir.parent.iterdir()) == [CASE.id]  # one trial, one folder


def test_what_a_new_attempt_would_meet_again_is_not_retried(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t")
    agent = Scripted("auth_failed", "ok")
    record = runner(factory, tmp_path, agent).run(CASE).record
    assert agent.calls == 1 and record.noise.reason == "auth_failed" and record.attempts == ()


def test_retries_run_out_and_the_trial_stays_excluded(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("t")
    agent = Scripted("rate_limited")
    record = runner(factory, tmp_path, agent, retries=1).run(CASE).record
    assert agent.calls == 2
    assert record.noise.category == "excluded" and [a.noise_reason for a in record.attempts] == ["rate_limited"]


def test_ctrl_c_during_a_retry_keeps_the_attempts_and_a_resume_goes_on(
    factory: TaskFactory, tmp_path: Path, trial_dir: Path
) -> None:
    factory.task("t")

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner(factory, tmp_path, Scripted("rate_limited", interrupt)).run(CASE)
    assert not (trial_dir / "record.json").exists()
    assert (trial_dir / "attempts" / "1" / "record.json").is_file()
    (trial_dir / "attempts" / ".2").mkdir()  # what a move cut short would leave: removed, never counted

    agent = Scripted("ok")
    record = runner(factory, tmp_path, agent).run(CASE).record
    assert agent.calls == 1 and record.verdict == "passed"
    assert [a.folder for a in record.attempts] == ["attempts/1"]
    assert sorted(p.name for p in (trial_dir / "attempts").iterdir()) == ["1"]


def test_a_refused_retry_leaves_no_record_and_its_attempts(
    factory: TaskFactory, tmp_path: Path, trial_dir: Path
) -> None:
    factory.task("t")
    made = runner(factory, tmp_path, Scripted("rate_limited", "ok"))
    asked: list[str] = []
    made.admit_retry = lambda case: asked.append(case.id) or "--max-trials 1 reached"
    with pytest.raises(RetryNotStarted, match="--max-trials 1 reached"):
        made.run(CASE)
    assert asked == [CASE.id]
    assert not (trial_dir / "record.json").exists() and (trial_dir / "attempts" / "1" / "record.json").is_file()


def test_a_rerun_of_an_errored_trial_starts_over(factory: TaskFactory, tmp_path: Path, trial_dir: Path) -> None:
    factory.task("t")

    def broken() -> None:
        raise RuntimeError("harness bug")

    first = runner(factory, tmp_path, Scripted("rate_limited", broken)).run(CASE).record
    assert first.verdict == "error" and len(first.attempts) == 1
    made = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, retry_excluded=2, rerun_errors=True)
    made.agent = Scripted("ok")
    again = made.run(CASE).record
    assert again.verdict == "passed" and again.attempts == () and not (trial_dir / "attempts").exists()
