"""Running a command with a timeout that ends its whole process tree, output going to files.

Output goes to files, never pipes: a background grandchild holding a pipe open would otherwise keep
the harness waiting past the timeout. Every command runs in its own session (process group); when it
exits or times out the whole group is killed, so nothing the agent started outlives its trial.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.util.background import run_pending, waiting_on_command
from scaffold.util.process_result import ProcessResult

__all__ = ["TERM_GRACE_S", "run_process"]

TERM_GRACE_S = 1.0


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
) -> ProcessResult:
    """Run *argv*; on timeout, or when it exits, kill its process group. Never raises on failure."""
    start = time.monotonic()
    out = _output(stdout_path)
    try:
        err = _output(stderr_path)
    except BaseException:
        os.close(out)
        raise
    try:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            os.write(err, f"cannot start {argv[0]!r}: {exc.strerror}\n".encode())
            return ProcessResult(127, False, time.monotonic() - start, stdout_path, stderr_path)
        try:
            timed_out = _wait(proc, timeout)
        except BaseException:  # Ctrl-C, or the worker being stopped: take the tree down with us
            _kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            _kill_group(proc.pid)  # background children left behind by a command that exited
    finally:
        os.close(out)
        os.close(err)
    code = None if timed_out else proc.returncode
    return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)


_OUTPUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _output(path: Path) -> int:
    """A descriptor of *path*, opened for the command's output (only it is handed on: no file object); its
    folder is made only when missing (a trial's commands mostly write into folders that exist, and a
    system call a command adds up over many trials)."""
    try:
        return os.open(path, _OUTPUT_FLAGS, 0o666)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, _OUTPUT_FLAGS, 0o666)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for *proc* without polling; on timeout end its group (TERM, a grace, KILL). True if timed out.

    ``Popen.wait(timeout)`` sleeps in steps of up to 50 ms, which would add that much to every command;
    a pidfd (Linux 5.3+) wakes exactly when the process exits. Elsewhere a timer thread does the job.
    """
    pidfd = _pidfd(proc.pid)
    if pidfd is None:
        return _wait_with_timer(proc, timeout)
    try:
        # Work put aside (a transcript, a removal) is done here while the command runs on another core.
        # The timeout counts from the command's start: a long job cannot stretch it.
        started = time.monotonic()
        run_pending(lambda: _readable(pidfd, 0))
        with waiting_on_command():  # the interpreter's lock is free meanwhile: background jobs run now
            exited = _readable(pidfd, max(0.0, timeout - (time.monotonic() - started)))
        if exited:
            proc.wait()
            return False
        _signal_group(proc.pid, signal.SIGTERM)
        if not _readable(pidfd, TERM_GRACE_S):
            _kill_group(proc.pid)
        proc.wait()
        return True
    finally:
        os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout * 1000))))


def _wait_with_timer(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    exited = threading.Event()
    fired = threading.Event()

    def on_timeout() -> None:
        fired.set()
        _signal_group(proc.pid, signal.SIGTERM)
        if not exited.wait(TERM_GRACE_S):
            _kill_group(proc.pid)

    timer = threading.Timer(timeout, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        run_pending(lambda: proc.poll() is not None)
        proc.wait()
    finally:
        exited.set()
        timer.cancel()
    return fired.is_set()


def _kill_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
