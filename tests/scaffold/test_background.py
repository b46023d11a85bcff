"""scaffold.background: jobs run in order off the caller's thread; a ``when_waiting`` job waits for a
thread of the process to wait on a command (scaffold.procs), and is put off, never held."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from scaffold import background
from scaffold.background import Background
from scaffold.procs import run_process


def test_jobs_run_in_order_and_a_failing_one_is_noted() -> None:
    done: list[int] = []
    jobs = Background("test-order")
    jobs.submit(lambda: done.append(1))
    jobs.submit(lambda: 1 / 0)
    jobs.submit(lambda: done.append(2))
    jobs.drain()
    assert done == [1, 2] and jobs.errors == ["division by zero"]
    jobs.close()


def test_a_when_waiting_job_runs_while_a_command_is_waited_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)  # no putting off within this test
    ran = threading.Event()
    jobs = Background("test-gated", when_waiting=True)
    jobs.submit(ran.set)
    assert not ran.wait(0.3)  # nobody waits on a command: the job waits its turn
    result = run_process(
        ["sleep", "0.5"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=30,
        stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
    )  # fmt: skip
    assert result.exit_code == 0
    assert ran.is_set()  # it ran while the command did
    jobs.close()


def test_draining_runs_a_when_waiting_job_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    done: list[str] = []
    jobs = Background("test-drain", when_waiting=True)
    jobs.submit(lambda: done.append("page"))
    started = time.monotonic()
    jobs.drain()  # the drainer waits too: the job need not wait for a command
    assert done == ["page"] and time.monotonic() - started < 30
    jobs.submit(lambda: done.append("last"))
    jobs.close()
    assert done == ["page", "last"]


def test_a_when_waiting_job_is_put_off_not_held() -> None:
    ran = threading.Event()
    jobs = Background("test-put-off", when_waiting=True)
    jobs.submit(ran.set)
    assert ran.wait(30)  # nobody ever waits on a command here: it runs after WHEN_WAITING_S
    jobs.close()
