"""SIGTERM (a CI job cancelled, ``timeout``, ``docker stop``) stops a session as Ctrl-C does.

Real pytest runs of the plugin in a subprocess: a quick task's trial finishes, then a hanging one's agent
(the oracle running a solution that starts a child in a session of its own) is caught working, and the
run is sent SIGTERM, by itself and as the controller of pytest-xdist workers, on the local backend and
in Docker. The run ends with status 143; the agents and their escaped children are gone; the container
is removed; the finished trial keeps its record and the unfinished one has none (a resume runs it); the
reports are written for what finished.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from scaffold.errors import ExitStatus
from tests.support.factories import TaskFactory
from tests.support.sessions import (
    RUN_LOG,
    gone_within,
    hanging_solution,
    kill_all,
    owned,
    processes,
    run_argv,
    start_run,
    wait_for,
    with_token,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc"),
]

EXPERIMENT = "term"


def records(logs: Path) -> dict[str, str]:
    """The experiment's records: verdict by case id."""
    found = {}
    for path in (logs / "experiments" / EXPERIMENT / "trials").glob("*/record.json"):
        record = json.loads(path.read_text())
        found[record["case_id"]] = record["verdict"]
    return found


def terminate(proc: subprocess.Popen[bytes], token: str, logs: Path, *, ctrl_c: bool = False) -> str:
    """Once the quick trial has its record and the hanging agent (with its escaped child) works, SIGTERM
    the run (or Ctrl-C it: SIGINT to its process group, as a terminal does); its output."""
    wait_for(lambda: "a-quick-CONTROL-r1" in records(logs), "the quick trial's record", proc)
    wait_for(lambda: len(processes(with_token(token))) == 2, "the hanging agent", proc)
    if ctrl_c:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    return RUN_LOG[proc.pid].read_text(errors="replace")


def two_tasks(suite: TaskFactory, token: str) -> None:
    suite.task("a-quick", solve="echo done > out.txt\n")
    suite.task("b-hangs", solve=hanging_solution(token), environment={"timeout_sec": 300})


@pytest.mark.parametrize(
    ("workers", "ctrl_c"),
    [([], False), (["-n", "2"], False), (["-n", "2"], True)],
    ids=["one-process", "xdist-controller", "ctrl-c-xdist"],
)
def test_sigterm_ends_the_running_trials_keeps_the_finished_and_writes_the_reports(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path, workers: list[str], ctrl_c: bool
) -> None:
    token = f"comet-sigterm-{uuid.uuid4().hex}"
    two_tasks(suite, token)
    logs = pytester.path / "logs"
    options = ["--count=1", f"--experiment-id={EXPERIMENT}", f"--logs-dir={logs}", *workers]
    proc = start_run(pytester.path, *options, new_session=ctrl_c)
    stopped = "interrupted" if ctrl_c else "stopped by SIGTERM"
    try:
        output = terminate(proc, token, logs, ctrl_c=ctrl_c)
        assert proc.returncode == (pytest.ExitCode.INTERRUPTED if ctrl_c else ExitStatus.TERMINATED), output
        assert gone_within(with_token(token), 2.0) == [], "an agent outlived the stopped run by 2 s"
        assert records(logs) == {"a-quick-CONTROL-r1": "passed"}, output
        # One count everywhere: the controller may never have heard of the quick trial; its record says.
        assert "trials: 1 passed" in output and f"This session was {stopped}" in output, output
        for report in ("summary.md", "comparison_report.md"):
            text = (logs / "experiments" / EXPERIMENT / report).read_text()
            assert "1 trials of" in text or report != "summary.md"
            assert f"This session was {stopped} before its end" in text
        assert owned(scratch / "comet-eval") == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(with_token(token)))

    # The resume runs the trials the signal ended, and only those.
    suite.task("b-hangs", solve="echo done > out.txt\n")
    again = subprocess.run(
        run_argv(*options), cwd=pytester.path, capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 0, again.stdout[-3000:]
    assert records(logs) == {"a-quick-CONTROL-r1": "passed", "b-hangs-CONTROL-r1": "passed"}


@pytest.mark.docker
def test_sigterm_removes_the_running_trials_container(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path, docker_client: Any, docker_base_image: str
) -> None:
    token = f"comet-sigterm-{uuid.uuid4().hex}"
    two_tasks(suite, token)
    logs = pytester.path / "logs"
    proc = start_run(
        pytester.path, "--backend=docker", f"--experiment-id={EXPERIMENT}", f"--logs-dir={logs}", "--count=1"
    )
    label = {"label": f"comet-eval.experiment={EXPERIMENT}"}
    try:
        output = terminate(proc, token, logs)
        assert proc.returncode == ExitStatus.TERMINATED, output
        assert docker_client.containers.list(all=True, filters=label) == [], output
        assert docker_client.volumes.list(filters=label) == []
        assert records(logs) == {"a-quick-CONTROL-r1": "passed"}, output
        assert (logs / "experiments" / EXPERIMENT / "summary.md").is_file(), output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for container in docker_client.containers.list(all=True, filters=label):
            container.remove(force=True)
