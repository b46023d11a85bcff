"""scaffold.util.background: jobs run in order by a thread of their own, after the caller has moved on."""

from __future__ import annotations

import threading

from scaffold.util.background import Background


def test_jobs_run_in_order_and_a_failing_one_is_noted() -> None:
    done: list[int] = []
    jobs = Background("test-order")
    jobs.submit(lambda: done.append(1))
    jobs.submit(lambda: 1 / 0)
    jobs.submit(lambda: done.append(2))
    jobs.drain()
    assert done == [1, 2] and jobs.errors == ["division by zero"]
    jobs.close()


def test_jobs_run_off_the_callers_thread_while_it_goes_on() -> None:
    release = threading.Event()
    ran_in: list[str] = []
    jobs = Background("test-off-thread")
    jobs.submit(lambda: (release.wait(10), ran_in.append(threading.current_thread().name)))
    assert ran_in == []  # submit returned while the job waits
    release.set()
    jobs.drain()
    assert ran_in == ["test-off-thread"]
    jobs.close()


def test_close_runs_what_is_left_then_ends_the_thread_and_finishes() -> None:
    done: list[str] = []
    jobs = Background("test-close", finish=lambda: done.append("finished"))
    jobs.submit(lambda: done.append("job"))
    jobs.close()
    assert done == ["job", "finished"]
    jobs.close()  # again: nothing left, no error


def test_drain_without_any_job_returns_at_once() -> None:
    jobs = Background("test-idle")
    jobs.drain()
    jobs.close()
