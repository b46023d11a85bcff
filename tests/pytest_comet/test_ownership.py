"""One session at a time per experiment, in real processes: a second one is refused with the owner named,
a killed owner lets go, and two `comet report` runs into one folder write whole sets, one after the other.

Two sessions on one --experiment-id used to run every trial in the same workspaces with no warning: the
oracle, which passes every trial alone, ended with a third of the records wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.factories import REPO, TaskFactory
from tests.support.records import suite
from tests.support.synthetic import write_experiment

SUITE = str(REPO / "local" / "tests" / "test_tasks.py")


def session(factory: TaskFactory, logs: Path, experiment: str, *extra: str) -> subprocess.Popen[str]:
    """A pytest session of the local suite on *factory*'s tasks, in a process group of its own."""
    argv = [sys.executable, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider", "--agent=oracle"]
    argv += [f"--tasks-dir={factory.tasks_dir}", f"--logs-dir={logs}", f"--experiment-id={experiment}", *extra]
    return subprocess.Popen(
        argv, cwd=factory.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def held(owner: Path, timeout: float = 60) -> dict[str, object]:
    """The owner record once a session holds the experiment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if owner.is_file() and owner.read_text().strip():
            return dict(json.loads(owner.read_text()))
        time.sleep(0.05)
    raise AssertionError(f"{owner} never held")


@pytest.fixture
def slow(factory: TaskFactory) -> TaskFactory:
    """A task whose trial takes two seconds: long enough for a second session to start meanwhile."""
    factory.task("slow", solve="sleep 2\necho done > out.txt\n")
    return factory


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_second_session_on_a_running_experiment_is_refused_with_the_owner_named(
    slow: TaskFactory, tmp_path: Path, workers: list[str]
) -> None:
    logs = tmp_path / "logs"
    first = session(slow, logs, "twin", "--count=3", *workers)
    try:
        owner = held(logs / "experiments" / "twin" / ".owner")
        second = session(slow, logs, "twin", "--count=3", *workers)
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 4, out  # pytest's usage error: nothing ran
        assert "is being run by another session" in out and f"pid {owner['pid']}" in out
        first_out, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert first.returncode == 0, first_out
    records = [json.loads(p.read_text()) for p in (logs / "experiments" / "twin" / "trials").glob("*/record.json")]
    assert sorted(r["verdict"] for r in records) == ["passed"] * 3
    # Once the first has ended, the experiment is free again: the same id resumes, every trial on record.
    third = session(slow, logs, "twin", "--count=3")
    out, _ = third.communicate(timeout=120)
    assert third.returncode == 0 and "3 passed" in out, out


def test_a_killed_owner_lets_go_at_once(slow: TaskFactory, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = session(slow, logs, "killed", "--count=3")
    held(logs / "experiments" / "killed" / ".owner")
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    second = session(slow, logs, "killed", "--count=1")
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out


def test_two_reports_into_one_folder_write_whole_sets(tmp_path: Path) -> None:
    one = write_experiment(tmp_path / "a", suite({"CONTROL": {"t1": "PPP"}, "SKILL": {"t1": "PPF"}})).root
    two = write_experiment(tmp_path / "b", suite({"CONTROL": {"t2": "FF"}, "SKILL": {"t2": "PP"}})).root
    out = tmp_path / "out"
    for _ in range(5):
        runs = [
            subprocess.Popen(
                [sys.executable, "-m", "scaffold.cli.main", "report", str(d), "--out", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for d in (one, two)
        ]
        for run in runs:
            _, err = run.communicate(timeout=120)
            assert run.returncode == 0, err
        # Whichever wrote last, its files are one set: the summary and the results name the same tasks.
        results = {json.loads(line)["task"] for line in (out / "results.jsonl").read_text().splitlines()}
        summary = (out / "summary.md").read_text()
        assert len(results) == 1 and next(iter(results)) in summary
        assert ({"t1", "t2"} - results).pop() not in summary


def test_two_experiments_of_one_id_in_other_folders_share_no_workspace(slow: TaskFactory, tmp_path: Path) -> None:
    """Workspaces are keyed by the experiment's folder, not its id alone: both run, and both pass."""
    runs = [session(slow, tmp_path / f"logs-{n}", "same-id", "--count=3") for n in (1, 2)]
    for run in runs:
        out, _ = run.communicate(timeout=120)
        assert run.returncode == 0 and "3 passed" in out, out
