"""scaffold.util.background: jobs run in order off the caller's thread; a ``when_waiting`` job is run by the
next thread that waits on a command (scaffold.util.run_process) while the command runs, in steps it may stop between,
and by a backstop thread when no command comes: put off, never held."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold.util import background
from scaffold.util.background import Background, run_pending
from scaffold.util.run_process import run_process


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


def _sleep(tmp_path: Path, seconds: float) -> None:
    result = run_process(
        ["sleep", str(seconds)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=30,
        stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
    )  # fmt: skip
    assert result.exit_code == 0


def test_a_when_waiting_job_runs_in_the_thread_that_waits_on_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    ran_in: list[int] = []
    jobs = Background("test-inline", when_waiting=True)
    jobs.submit(lambda: ran_in.append(threading.get_ident()))
    _sleep(tmp_path, 0.2)
    assert ran_in == [threading.get_ident()]  # no hand-over to another thread
    jobs.close()


def test_a_job_in_steps_stops_when_the_command_exits_and_the_rest_is_done_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    done: list[int] = []

    def steps() -> Iterator[None]:
        for i in range(40):
            time.sleep(0.025)
            done.append(i)
            yield

    jobs = Background("test-steps", when_waiting=True)
    jobs.submit_steps(steps())
    started = time.monotonic()
    _sleep(tmp_path, 0.1)
    waited = time.monotonic() - started
    assert 0 < len(done) < 40 and waited < 0.6  # stopped with the command, not after the whole job (1 s)
    later = len(done)
    _sleep(tmp_path, 0.1)  # the next command's waiter goes on from where it stopped
    assert len(done) > later
    jobs.drain()
    assert done == list(range(40))
    assert jobs.errors == []
    jobs.close()


def test_a_timeout_counts_the_time_a_job_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    jobs = Background("test-slow", when_waiting=True)
    jobs.submit(lambda: time.sleep(2.0))  # a job longer than the command's timeout
    started = time.monotonic()
    result = run_process(
        ["sleep", "30"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=0.5,
        stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
    )  # fmt: skip
    # Ended as the job ends (the timeout has passed by then), not 0.5 s of waiting after it.
    assert result.timed_out and time.monotonic() - started < 2.4
    jobs.close()


def test_draining_waits_for_a_job_another_thread_is_running(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    go, started = threading.Event(), threading.Event()
    done: list[str] = []

    def job() -> None:
        started.set()
        assert go.wait(30)
        done.append("job")

    jobs = Background("test-elsewhere", when_waiting=True)
    jobs.submit(job)
    runner = threading.Thread(target=run_pending, args=(lambda: False,))
    runner.start()
    assert started.wait(30)
    drainer = threading.Thread(target=jobs.drain)
    drainer.start()
    drainer.join(0.3)
    assert drainer.is_alive()  # the job is not done: the drain waits for it
    go.set()
    drainer.join(30)
    runner.join(30)
    assert not drainer.is_alive() and done == ["job"]
    jobs.close()


def test_a_failing_when_waiting_job_is_noted_and_the_next_one_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    done: list[int] = []
    jobs = Background("test-failing", when_waiting=True)
    jobs.submit(lambda: 1 / 0)
    jobs.submit(lambda: done.append(2))
    jobs.drain()
    assert done == [2] and jobs.errors == ["division by zero"]
    jobs.close()


def test_a_forked_child_runs_none_of_its_parents_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)
    marks = tmp_path / "marks"
    marks.mkdir()
    jobs = Background("test-fork", when_waiting=True)
    jobs.submit(lambda: (marks / str(os.getpid())).touch())  # noqa: PLW0108 (the pid of the process running it)
    pid = os.fork()
    if pid == 0:  # the child: waits on a command, drains, closes: the parent's job is not its own
        code = 1
        try:
            _sleep(tmp_path, 0.05)
            jobs.drain()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(marks.iterdir()) == []
    jobs.drain()
    assert [p.name for p in marks.iterdir()] == [str(os.getpid())]
    jobs.close()


def test_a_job_in_steps_of_a_plain_background_runs_whole() -> None:
    done: list[int] = []

    def steps() -> Iterator[None]:
        for i in range(3):
            done.append(i)
            yield

    jobs = Background("test-plain-steps")
    jobs.submit_steps(steps())
    jobs.drain()
    assert done == [0, 1, 2]
    jobs.close()


def test_a_job_interrupted_by_ctrl_c_leaves_no_drain_waiting_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "WHEN_WAITING_S", 60.0)

    def interrupted() -> None:
        raise KeyboardInterrupt

    jobs = Background("test-interrupted", when_waiting=True)
    jobs.submit(interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_pending(lambda: False)
    drainer = threading.Thread(target=jobs.drain, daemon=True)
    drainer.start()
    drainer.join(10)
    assert not drainer.is_alive()  # the interrupted job counts as over
    jobs.close()
