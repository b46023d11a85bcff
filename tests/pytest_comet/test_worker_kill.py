"""A worker killed in the middle of a session never hangs it, under every distribution the docs offer.

pytest-xdist's loadgroup waited forever after a worker crash (4 of 4 runs), and the repository's
pyproject.toml set it for every run in the checkout, the local suite's too. The local suite now runs with
xdist's own default (``load``) or ``worksteal``: the session ends, the killed trial reported as failed,
every other trial on record.

Whatever the moment of the kill, the session counts one way everywhere: a trial whose outcome reached the
controller before its worker died counts as its record says (pytest-xdist alone would also count it
failed), and one that died unfinished is failed in pytest, absent from the records and named in every
report as lost to the crash."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_comet.terminate import children
from tests.support.factories import REPO, TaskFactory

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("dist", [[], ["--dist", "worksteal"]], ids=["default", "worksteal"])
def test_a_killed_worker_ends_in_a_reported_failure_not_a_hang(tmp_path: Path, dist: list[str]) -> None:
    logs = tmp_path / "logs"
    argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider", "--agent=oracle"]
    argv += [f"--logs-dir={logs}", "--count=10", "-n", "2", *dist]
    session = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(logs.rglob("record.json"))) < 20:
            time.sleep(0.05)
        workers = children(session.pid)
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)
        out, _ = session.communicate(timeout=120)  # a hang fails here
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.communicate()
    results = [json.loads(line) for line in next(logs.rglob("results.jsonl")).read_text().splitlines()]
    assert all(record["verdict"] == "passed" for record in results)
    summary = next(logs.rglob("summary.md")).read_text()
    assert f"{len(results)} trials of" in summary and f"trials: {len(results)} passed" in out, out[-2000:]
    if len(results) == 69:  # killed in the middle of a trial: that one failed, and named as lost
        assert session.returncode == 1 and "1 failed, 69 passed" in out, out[-2000:]
        assert "that trial has no record" in summary and "that trial has no record" in out
    else:  # killed after a trial's outcome reached the controller: nothing was lost
        assert len(results) == 70 and session.returncode == 0 and " 70 passed" in out, out[-2000:]
        assert "its record stands" in summary and "its record stands" in out


CRASH = """
import os

def pytest_runtest_{phase}(item):
    if "b-crash" in item.nodeid and hasattr(item.config, "workerinput"):
        os._exit(1)
"""


@pytest.mark.parametrize("phase", ["setup", "call", "teardown"])
def test_a_crash_counts_one_way_in_pytest_the_terminal_and_every_report(
    suite: TaskFactory, pytester: pytest.Pytester, phase: str
) -> None:
    """A worker dies as a trial's item starts (no record), after the trial wrote its record (the trial runs
    in the item's setup) or as the item is torn down (its outcome sent): pytest, the ``trials:`` line and
    the reports agree."""
    suite.task("a-quick", solve="echo done > out.txt\n")
    suite.task("b-crash", solve="echo done > out.txt\n")
    pytester.makeconftest(CRASH.format(phase=phase))
    logs = pytester.path / "logs"
    argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider", "-n", "2"]
    run = subprocess.run(
        [*argv, f"--logs-dir={logs}", "--experiment-id=crash"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = run.stdout
    experiment = logs / "experiments" / "crash"
    records = {json.loads(line)["case_id"] for line in (experiment / "results.jsonl").read_text().splitlines()}
    reports = [(experiment / name).read_text() for name in ("summary.md", "comparison_report.md")]
    if phase == "setup":
        assert run.returncode == 1 and re.search(r"\b1 failed, 1 passed\b", out), out[-3000:]
        assert records == {"a-quick-CONTROL-r1"} and "trials: 1 passed" in out, out[-3000:]
        lost = (
            "crashed while running 'local/tests/test_tasks.py::test_task[b-crash-CONTROL-r1]': that trial has no record"
        )
        assert all(lost in text for text in [out, *reports]), out[-3000:]
        assert all("--experiment-id crash to run the trials without a record" in text for text in reports)
    else:
        assert run.returncode == 0 and re.search(r"\b2 passed\b", out) and "failed" not in out, out[-3000:]
        assert records == {"a-quick-CONTROL-r1", "b-crash-CONTROL-r1"} and "trials: 2 passed" in out, out[-3000:]
        assert all("after that trial ended: its record stands" in text for text in [out, *reports]), out[-3000:]
