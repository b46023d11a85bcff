"""The one way the harness starts a process: in a session of its own, with a time limit that ends its
whole process tree.

Every command runs in its own session (process group); when it exits or times out the whole group is
killed, so nothing it started outlives it. Output goes to files, never to pipes: a background grandchild
holding a pipe open would otherwise keep the harness waiting past the time limit. tests/test_architecture.py
holds every other module of the harness to this one (the helpers that run inside a workspace,
scaffold.python, bring their own: they cannot import the harness).

- :func:`run_process`: output to files; the ProcessResult names them (the trial's commands, validation).
- :func:`run_captured`: output read back as text (short commands: a probe, a download, the judge's CLI).
- :func:`run_attached`: output to this process's terminal (an install a person watches).
- :func:`streamed`: standard output as a stream to read while the command runs (a tar into an import).
- :func:`spawn_session`: a process that outlives the call by design (the local backend's supervisor).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from scaffold.util.process_result import ProcessResult, tail

__all__ = [
    "TERM_GRACE_S",
    "Captured",
    "run_attached",
    "run_captured",
    "run_process",
    "spawn_session",
    "streamed",
]

TERM_GRACE_S = 1.0
"""After its time limit a command gets SIGTERM, then this long before SIGKILL."""


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
    stdin_path: Path | None = None,
    append: bool = False,
) -> ProcessResult:
    """Run *argv*; on timeout, or when it exits, kill its process group. Never raises on failure: a
    program that cannot start exits 127 with the reason in *stderr_path*. The same path for both streams
    writes them into one file, in order; *append* adds to the files instead of replacing them; the
    standard input is *stdin_path*'s bytes, else empty."""
    start = time.monotonic()
    try:
        return _run_to_files(argv, cwd, env, timeout, stdout_path, stderr_path, stdin_path, append)
    except _CannotStart as exc:
        with Path(stderr_path).open("ab") as err:
            err.write(f"cannot start {argv[0]!r}: {exc.error.strerror}\n".encode())
        return ProcessResult(127, False, time.monotonic() - start, stdout_path, stderr_path)


class _CannotStart(Exception):
    """The program could not be started (not found, not executable, no such working folder)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _run_to_files(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
    stdin_path: Path | None,
    append: bool,
) -> ProcessResult:
    """run_process's work; _CannotStart when the program cannot start."""
    start = time.monotonic()
    with contextlib.ExitStack() as opened:
        flags = _OUTPUT_FLAGS | (os.O_APPEND if append else os.O_TRUNC)
        out = _output(stdout_path, flags)
        opened.callback(os.close, out)
        err = out
        if stderr_path != stdout_path:
            err = _output(stderr_path, flags)
            opened.callback(os.close, err)
        stdin: int = subprocess.DEVNULL
        if stdin_path is not None:
            stdin = os.open(stdin_path, os.O_RDONLY | os.O_CLOEXEC)
            opened.callback(os.close, stdin)
        try:
            proc = _start(argv, cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=err)
        except OSError as exc:
            raise _CannotStart(exc) from exc
        timed_out = _wait(proc, timeout)
    code = None if timed_out else proc.returncode
    return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)


@dataclass(frozen=True, slots=True)
class Captured:
    """What a command captured by :func:`run_captured` left: its exit code (None: killed for its time
    limit; 127: it could not start, the reason in ``stderr``) and its output as text."""

    exit_code: int | None
    timed_out: bool
    stdout: str
    stderr: str


def run_captured(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    limit: int = 1 << 24,
) -> Captured:
    """Run *argv* as :func:`run_process` does, *input* (text) on its standard input, and return its output
    (at most the last *limit* bytes of each stream) as text. OSError when the program cannot start."""
    with tempfile.TemporaryDirectory(prefix="comet-run-") as folder:
        work = Path(folder)
        if input is not None:
            (work / "stdin").write_text(input, encoding="utf-8")
        try:
            result = _run_to_files(
                argv,
                cwd or Path.cwd(),
                os.environ if env is None else env,
                timeout,
                work / "stdout",
                work / "stderr",
                work / "stdin" if input is not None else None,
                False,
            )
        except _CannotStart as exc:
            raise exc.error from None
        return Captured(result.exit_code, result.timed_out, tail(work / "stdout", limit), tail(work / "stderr", limit))


def run_attached(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> int | None:
    """Run *argv* with this process's standard output and error (a person watches it): its exit code,
    None when it was killed for its time limit. OSError when it cannot start."""
    proc = _start(argv, cwd=None, env=env, stdin=subprocess.DEVNULL, stdout=None, stderr=None)
    return None if _wait(proc, timeout) else proc.returncode


@contextlib.contextmanager
def streamed(argv: Sequence[str], *, timeout: float) -> Iterator[Streamed]:
    """Run *argv* and yield its standard output as a stream; leaving the block closes it, waits for the
    command (at most *timeout* seconds from its start) and kills its group. The exit code is on the
    yielded value afterwards (None: killed for its time limit)."""
    proc = _start(argv, cwd=None, env=None, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None)
    assert proc.stdout is not None
    started = time.monotonic()
    running = Streamed(proc.stdout)
    try:
        yield running
    finally:
        proc.stdout.close()
        timed_out = _wait(proc, max(0.0, timeout - (time.monotonic() - started)))
        running.exit_code = None if timed_out else proc.returncode


class Streamed:
    """The standard output of a command run by :func:`streamed`, and its exit code once it has ended."""

    def __init__(self, stdout: IO[bytes]) -> None:
        self.stdout = stdout
        self.exit_code: int | None = None


def spawn_session(executable: str, argv: Sequence[str], env: Mapping[str, str], *, stdin_fd: int) -> int:
    """Start a process in a session of its own that outlives this call, and this process too, by design:
    *stdin_fd* becomes its standard input, its output goes to /dev/null. Its pid; the caller reaps it.
    ``posix_spawn``, not Popen: a Popen still running at the interpreter's exit warns."""
    return os.posix_spawn(
        executable,
        list(argv),
        dict(env),
        file_actions=[
            (os.POSIX_SPAWN_DUP2, stdin_fd, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ],
        setsid=True,
    )


_OUTPUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC


def _output(path: Path, flags: int) -> int:
    """A descriptor of *path*, opened for the command's output; its folder is made when missing."""
    try:
        return os.open(path, flags, 0o666)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, flags, 0o666)


def _start(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    stdin: int,
    stdout: int | None,
    stderr: int | None,
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for *proc*, ending its group on timeout (TERM, a grace, KILL), and kill whatever the group
    still holds once it has exited (background children). True if it timed out. Ctrl-C, or the worker
    being stopped, takes the tree down too."""
    try:
        return _wait_for_exit(proc, timeout)
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        _kill_group(proc.pid)


def _wait_for_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait without polling; on timeout end the group. True if timed out.

    ``Popen.wait(timeout)`` sleeps in steps of up to 50 ms, which would add that much to every command;
    a pidfd (Linux 5.3+) wakes exactly when the process exits. Elsewhere a timer thread does the job.
    """
    pidfd = _pidfd(proc.pid)
    if pidfd is None:
        return _wait_with_timer(proc, timeout)
    try:
        if _readable(pidfd, timeout):
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
