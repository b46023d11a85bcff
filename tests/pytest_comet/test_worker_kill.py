"""A worker killed in the middle of a session never hangs it, under every distribution the README offers.

pytest-xdist's loadgroup waited forever after a worker crash (4 of 4 runs), and the repository's
pyproject.toml set it for every run in the checkout, the local suite's too. The local suite now runs with
xdist's own default (``load``) or ``worksteal``: the session ends, the killed trial reported as failed,
every other trial on record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.factories import REPO

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[int]:
    """The processes whose parent is *pid* (the session's controller: its xdist workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


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
        workers = _children(session.pid)
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)
        out, _ = session.communicate(timeout=120)  # a hang fails here
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.communicate()
    assert session.returncode == 1, out[-2000:]
    assert "crashed while running" in out and "1 failed, 69 passed" in out, out[-2000:]
    results = next(logs.rglob("results.jsonl")).read_text().splitlines()
    assert len(results) == 69 and all(json.loads(line)["verdict"] == "passed" for line in results)
