"""Watching pytest runs of the plugin from outside, as a user's terminal, CI or a killer would: their
processes found through /proc, runs started in a subprocess with their output in a file, agents that hang.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from scaffold.workspaces.owners import MARK_SUFFIX


def processes(match: Callable[[bytes, bytes], bool]) -> list[int]:
    """Live (not zombie) processes whose (cmdline, environ) *match*."""
    found = []
    for name in os.listdir("/proc"):  # noqa: PTH208 (thousands of plain names)
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:  # noqa: PTH123
                if handle.read().rsplit(b")", 1)[-1].split()[0] in (b"Z", b"X"):
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as handle:  # noqa: PTH123
                cmdline = handle.read()
            with open(f"/proc/{name}/environ", "rb") as handle:  # noqa: PTH123
                environ = handle.read()
        except OSError:
            continue
        if match(cmdline, environ):
            found.append(int(name))
    return found


RUN_LOG: dict[int, Path] = {}
"""Where each run started by :func:`start_run` writes its output, by pid."""


def with_token(token: str) -> Callable[[bytes, bytes], bool]:
    return lambda cmdline, _environ: token.encode() in cmdline


def in_workspaces(root: Path) -> Callable[[bytes, bytes], bool]:
    """Processes of a local workspace under *root*: its marker in their environment."""
    marker = f"COMET_WORKSPACE={root}".encode()
    return lambda _cmdline, environ: any(entry.startswith(marker) for entry in environ.split(b"\0"))


def supervisor_of(pid: int) -> Callable[[bytes, bytes], bool]:
    return lambda cmdline, _environ: (
        b"scaffold.workspaces.supervisor" in cmdline and cmdline.split(b"\0")[4:5] == [str(pid).encode()]
    )


def wait_for(
    condition: Callable[[], object],
    what: str,
    proc: subprocess.Popen[bytes],
    timeout: float = 120,
    detail: Callable[[], str] = lambda: "",
) -> None:
    """Until *condition*; a failure (with the run's output, and *detail*'s account of what did run) when
    the run ends first or time runs out."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}:\n{run_output(proc)}")
        if time.monotonic() >= deadline:
            pytest.fail(f"no {what} after {timeout:g}s; the run so far:\n{run_output(proc)}\n{detail()}")
        time.sleep(0.05)


def run_output(proc: subprocess.Popen[bytes]) -> str:
    """What a run started by :func:`start_run` has written so far."""
    log = RUN_LOG.get(proc.pid)
    return log.read_text(errors="replace") if log and log.exists() else ""


def command_lines(pids: list[int]) -> str:
    """One line per live process of *pids*: its pid and command line (for a failure's message)."""
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            lines.append(f"{pid}: {cmdline.decode(errors='replace').strip()}")
    return "\n".join(lines)


def gone_within(match: Callable[[bytes, bytes], bool], seconds: float) -> list[int]:
    """Poll /proc for up to *seconds*; the processes still matching then (empty: all gone in time)."""
    deadline = time.monotonic() + seconds
    while (left := processes(match)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def hanging_solution(token: str) -> str:
    """An agent that starts a child in a new session, then works on (both long-lived)."""
    sleep = "python3 -c 'import time; time.sleep(600)'"
    return f"setsid {sleep} {token}-escaped > /dev/null 2>&1 &\n{sleep} {token}-agent\n"


def run_argv(*options: str) -> list[str]:
    """The command line of a quiet pytest run of the plugin's local suite."""
    return [sys.executable, "-m", "pytest", "local/tests", "-p", "no:cacheprovider", "-q", *options]


def start_run(
    cwd: Path, *options: str, env: dict[str, str] | None = None, new_session: bool = False
) -> subprocess.Popen[bytes]:
    """A pytest run of the plugin in *cwd*, its output in ``<cwd>/run.log``; in a process group of its own
    with *new_session* (to be sent a terminal's Ctrl-C)."""
    argv = run_argv(*options)
    with (cwd / "run.log").open("wb") as log:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=new_session
        )
    RUN_LOG[proc.pid] = cwd / "run.log"
    return proc


def owned(root: Path) -> list[Path]:
    """What the harness made under *root*: the owner marks, the trial workspaces, the HOMEs."""
    marks = [*root.glob("*" + MARK_SUFFIX), *root.glob("*/*" + MARK_SUFFIX)]
    workspaces = [p for p in root.glob("*/hangs-*") if p.is_dir()]
    return sorted([*marks, *workspaces, *root.glob(".comet-tmp/*")])
