"""Processes: timeouts end the whole tree, output goes to files, nothing outlives the command."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from scaffold.util import run_process as procs
from scaffold.util.process_result import tail
from scaffold.util.run_process import run_process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def run(tmp_path: Path, script: str, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    return run_process(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        timeout=timeout,
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
    )


def test_exit_code_and_output_files(tmp_path: Path, waiter: str) -> None:
    result = run(tmp_path, "echo hello; echo oops >&2; exit 7")
    assert result.exit_code == 7 and not result.timed_out
    assert result.stdout() == "hello\n" and result.stderr() == "oops\n"


@pytest.fixture(params=["pidfd", "timer"])
def waiter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of waiting: a pidfd (Linux 5.3+) and the timer thread used elsewhere."""
    if request.param == "timer":
        monkeypatch.setattr(procs, "_pidfd", lambda pid: None)
    return str(request.param)


def test_timeout_kills_the_whole_tree(tmp_path: Path, waiter: str) -> None:
    script = "sleep 60 & echo $! > child.pid; bash -c 'sleep 60 & echo $! > grandchild.pid; wait' & wait"
    started = time.monotonic()
    result = run(tmp_path, script, timeout=1.0)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    for name in ("child.pid", "grandchild.pid"):
        pid = int((tmp_path / name).read_text())
        assert _wait_dead(pid), f"{name} survived the timeout"


def test_background_children_do_not_outlive_a_finished_command(tmp_path: Path, waiter: str) -> None:
    result = run(tmp_path, "sleep 60 & echo $! > child.pid; exit 0")
    assert result.exit_code == 0
    assert _wait_dead(int((tmp_path / "child.pid").read_text()))


def test_a_grandchild_holding_stdout_does_not_block(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run(tmp_path, "(sleep 30; echo late) & echo early", timeout=20)
    assert result.exit_code == 0 and result.stdout() == "early\n"
    assert time.monotonic() - started < 10


def test_missing_program_is_exit_127_not_an_exception(tmp_path: Path) -> None:
    result = run_process(
        ["/no/such/program"], cwd=tmp_path, env={}, timeout=5, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e"
    )
    assert result.exit_code == 127 and "cannot start" in result.stderr()


def test_tail_reads_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_text("a" * 10000 + "END")
    assert tail(path, 5) == "aaEND"
    assert tail(tmp_path / "missing") == ""


def test_tail_of_a_small_file_an_empty_one_and_a_cut_character(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"short\n")
    assert tail(path, 4000) == "short\n"
    path.write_bytes(b"")
    assert tail(path) == ""
    path.write_bytes("é".encode() * 3)  # six bytes: the last five start inside a character
    assert tail(path, 5) == "\ufffdéé"
    assert tail(tmp_path) == ""  # a folder: nothing to read, not an error
