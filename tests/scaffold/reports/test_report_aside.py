"""scaffold.reports.aside: one report file written by a forked child while the parent builds the others."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from scaffold.reports import aside
from scaffold.reports.aside import Aside, can_fork

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (Linux, macOS)")


def writer(path: Path, *, fail_in_child_of: int | None = None, fail_always: bool = False) -> object:
    """A write that records which process wrote the file; it can fail in the child or everywhere."""

    def write() -> None:
        if fail_always or (fail_in_child_of is not None and os.getpid() != fail_in_child_of):
            raise OSError("disk full")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(path)

    return write


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pytest-xdist worker runs execnet threads, so can_fork() says no there; these tests fork anyway
    # (the child only writes a file and ends with os._exit) to check the mechanics.
    monkeypatch.setattr(aside, "can_fork", lambda: True)


def test_the_child_writes_the_file_and_the_parent_reaps_it(tmp_path: Path, forking: None) -> None:
    path = tmp_path / "results.jsonl"
    with Aside(path, writer(path), fork=True) as job:
        assert job.forked
        assert job.wait() == path
    assert job.pid is not None and int(path.read_text()) == job.pid  # written by the child
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)  # reaped: not even a zombie is left


def test_a_failed_child_is_made_good_by_the_parent(tmp_path: Path, forking: None) -> None:
    path = tmp_path / "results.jsonl"
    with Aside(path, writer(path, fail_in_child_of=os.getpid()), fork=True) as job:
        assert job.wait() == path
    assert int(path.read_text()) == os.getpid()


def test_when_both_fail_the_error_is_raised_in_the_parent(tmp_path: Path, forking: None) -> None:
    path = tmp_path / "results.jsonl"
    with pytest.raises(OSError, match="disk full"), Aside(path, writer(path, fail_always=True), fork=True) as job:
        job.wait()
    assert not path.exists()


def test_an_error_in_the_parent_still_reaps_the_child(tmp_path: Path, forking: None) -> None:
    path = tmp_path / "results.jsonl"
    with pytest.raises(RuntimeError, match="analysis failed"), Aside(path, writer(path), fork=True) as job:
        raise RuntimeError("analysis failed")
    assert job.pid is not None and int(path.read_text()) == job.pid  # the child finished its atomic write
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)


def test_without_fork_it_writes_at_once_here(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    job = Aside(path, writer(path), fork=False)
    assert not job.forked and int(path.read_text()) == os.getpid()
    assert job.wait() == path


def test_no_fork_while_another_python_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
    finally:
        stop.set()
        thread.join()
