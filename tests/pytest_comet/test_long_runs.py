"""Long runs end to end, in real pytest sessions: the live status line on a pseudo-terminal and its
absence in a pipe, ``comet status`` polled during a pytest-xdist run, and the budgets (--max-trials,
--max-cost) with their resume."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scaffold.cli.main import main
from tests.support.agents import register_fake_agent
from tests.support.factories import TaskFactory

ESCAPE = re.compile(r"\x1b\[")


def four_tasks(suite: TaskFactory, *, sleep: float = 0.0) -> None:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    for name in ("a", "b", "c", "d"):
        suite.task(name, solve=f"sleep {sleep}\necho done > out.txt\n")


def experiment(pytester: pytest.Pytester, name: str) -> Path:
    return pytester.path / "local" / "logs" / "experiments" / name


def pytest_argv(pytester: pytest.Pytester, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--workspace-root={pytester.path / 'ws'}",
        *args,
    ]


def run_on_pty(
    argv: list[str],
    cwd: Path,
    timeout_s: float = 300,
    *,
    columns: int = 200,
    export_columns: bool = True,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """Run *argv* with a pseudo-terminal of *columns* columns as its stdout and stderr: its exit status
    and all it wrote. *export_columns*: also say the width in $COLUMNS (an interactive shell does not
    export it, so without it the width is only the terminal's own). *env*: the child's environment
    besides PATH and LANG (default: this process's)."""
    if env is not None:
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", **env}
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        os.chdir(cwd)
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        # An explicit environment: this process's C environment can hold a COLUMNS that os.environ does
        # not show (GNU readline sets one when it is loaded), and os.execv would pass it on.
        env = {k: v for k, v in (os.environ if env is None else env).items() if k != "COLUMNS"}
        if export_columns:
            env["COLUMNS"] = str(columns)
        os.execve(argv[0], argv, env)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def status_json(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", *args, "--json"]) == 0
    return dict(json.loads(out.getvalue()))


@pytest.mark.slow
def test_live_line_on_a_terminal_and_plain_lines_in_a_pipe(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite, sleep=2.5)
    code, shown = run_on_pty(pytest_argv(pytester, "--experiment-id=tty"), pytester.path)
    assert code == 0, shown
    # Redrawn at the end of pytest's line, after its dots, and cleared before each of pytest's writes.
    assert re.search(r"\r(\x1b\[\d+C)?\x1b\[K done \d/4 \| running 1 \| queued \d \| elapsed \d:\d\d \| ETA ", shown)
    assert re.search(r"[a-d]-CONTROL-r1 agent( t\d+)? \d:\d\d in trial", shown)  # each running trial, with its phase
    assert "4 passed" in shown
    # pytest's own text is intact: the dots and the summary are all there, in order, once the line is gone.
    visible = re.sub(r"\x1b\[[0-9;]*m", "", re.sub(r"\r(\x1b\[\d+C)?\x1b\[K( [^\r]*)?", "", shown))
    assert re.search(r"\r\nlocal/tests/test_tasks\.py \.\.\.\. +\[100%\]\r\n", visible)
    assert "\x1b" not in visible and "\r\ntrials: 4 passed\r\n" in visible

    piped = subprocess.run(
        pytest_argv(pytester, "--experiment-id=pipe", "--task=a,b"),
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.returncode == 0, piped.stdout + piped.stderr
    assert "\r" not in piped.stdout and not ESCAPE.search(piped.stdout)
    lines = [line for line in piped.stdout.splitlines() if re.match(r"\[\d/2\] ", line)]
    assert [line.split(":")[0] for line in lines] == [f"[{i}/2] {n}-CONTROL-r1" for i, n in enumerate("ab", 1)]
    assert all(re.fullmatch(r"\[\d/2\] [ab]-CONTROL-r1: passed  score 1\.00  \d+ s in trial", line) for line in lines)


def drawn_lines(shown: str) -> list[tuple[int, str]]:
    """Each drawing of the live line in *shown*: the column it was drawn after, and its text."""
    found = re.findall(r"\r(?:\x1b\[(\d+)C)?\x1b\[K ?(done [^\r\x1b]*)", shown)
    return [(int(column or 0), text) for column, text in found]


@pytest.mark.slow
def test_the_live_line_fills_a_wide_terminal_that_does_not_export_its_width(
    pytester: pytest.Pytester, suite: TaskFactory
) -> None:
    # 160 columns, known only to the terminal itself: while a trial runs, pytest's capturing holds file
    # descriptor 1, and a width asked there falls back to 80 columns, cutting the running trial off.
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    for name in ("a", "b"):
        suite.task(f"{name}-summarise-the-quarterly-report", solve="sleep 2.5\necho done > out.txt\n")
    argv = pytest_argv(pytester, "--experiment-id=wide")
    code, shown = run_on_pty(argv, pytester.path, columns=160, export_columns=False)
    assert code == 0, shown
    drawn = drawn_lines(shown)
    assert drawn, shown
    widest = max(column + 1 + len(text) for column, text in drawn)
    assert 80 < widest <= 160 - 1, drawn
    phase = r"(workspace|agent|validation|scoring)( t\d+)? \d:\d\d in trial"
    running = r"[ab]-summarise-the-quarterly-report-CONTROL-r1 " + phase
    assert any(re.search(running, text) for _, text in drawn), drawn  # the phase and its time are shown


def test_no_live_line_with_capture_off_even_on_a_terminal(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite)
    code, shown = run_on_pty(pytest_argv(pytester, "--experiment-id=s", "-s", "--task=a,b"), pytester.path)
    assert code == 0, shown
    assert "running 1" not in shown  # -s: a trial's output could interleave with the line
    assert re.search(r"\[1/2\] a-CONTROL-r1: passed", shown)


@pytest.mark.slow
def test_comet_status_during_an_xdist_run(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite, sleep=4)
    folder = experiment(pytester, "xd")
    run = subprocess.Popen(
        pytest_argv(pytester, "-n", "2", "--experiment-id=xd", "-q"),
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and run.poll() is None:
            if (folder / "plan.json").is_file():
                seen.append(status_json(str(folder)))
                if seen[-1]["running"]:
                    break
            time.sleep(0.3)
        output, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, output
    running = next(s for s in seen if s["running"])
    assert running["planned"] == 4 and not running["finished"]
    assert running["done"] + running["running"] + running["queued"] == 4
    trial = running["trials"][0]
    assert trial["case_id"] in {f"{n}-CONTROL-r1" for n in "abcd"}
    assert trial["phase"] in {"workspace", "agent", "validation", "scoring", "done"}
    assert trial["worker"] in {"gw0", "gw1"}
    # By experiment id under --logs-dir, as comet report's users would say it; and the run is over.
    final = status_json("xd", "--logs-dir", str(pytester.path / "local" / "logs"))
    assert final["finished"] and final["done"] == 4 and final["running"] == 0 and final["queued"] == 0
    assert final["verdicts"] == {"passed": 4}
    assert not list(folder.glob("trials/*/progress.json"))  # every record written, every progress file gone


def test_max_trials_stops_starting_and_resume_runs_the_rest(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite)
    first = pytester.runpytest_subprocess(
        f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=b", "--max-trials=2"
    )
    first.assert_outcomes(passed=2, skipped=2)
    assert first.ret == 0  # the exit status answers for what ran
    folder = experiment(pytester, "b")
    assert sorted(p.parent.name for p in folder.glob("trials/*/record.json")) == ["a-CONTROL-r1", "b-CONTROL-r1"]
    first.stdout.fnmatch_lines(
        [
            "*c-CONTROL-r1: not run: --max-trials 2 reached (2 trial(s) started)*",
            "budget: --max-trials 2 reached (2 trial(s) started): 2 trial(s) not run: c-CONTROL-r1, d-CONTROL-r1",
            "budget: resume with --experiment-id b to run them*",
        ]
    )
    summary = (folder / "summary.md").read_text()
    assert "## Not run (budget)" in summary and "- c-CONTROL-r1\n- d-CONTROL-r1\n" in summary
    status = status_json(str(folder))
    assert status["not_run"] == ["c-CONTROL-r1", "d-CONTROL-r1"] and status["finished"]
    assert status["stopped"] == ["--max-trials 2 reached (2 trial(s) started)"]

    again = pytester.runpytest_subprocess(
        f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=b", "--max-trials=2"
    )
    again.assert_outcomes(passed=4)  # two resumed (they start nothing) and the two not run before
    again.stdout.fnmatch_lines(["trials: 4 passed (2 from earlier runs of this experiment)"])
    assert "Not run" not in (folder / "summary.md").read_text()
    assert status_json(str(folder))["not_run"] == []


def test_max_trials_is_shared_by_xdist_workers(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite, sleep=0.5)
    result = pytester.runpytest_subprocess(
        f"--workspace-root={pytester.path / 'ws'}", "-n", "2", "--experiment-id=xb", "--max-trials=3", "-q"
    )
    result.assert_outcomes(passed=3, skipped=1)
    assert len(list(experiment(pytester, "xb").glob("trials/*/record.json"))) == 3


def test_max_cost_with_an_agent_that_reports_its_cost(
    pytester: pytest.Pytester, suite: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_fake_agent(pytester.path, monkeypatch)
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    plan = json.dumps([{"write": {"out.txt": "done\n"}}])  # each trial's agent reports $0.01
    for name in ("a", "b", "c", "d"):
        suite.task(name, files={".fake-agent.json": plan})
    args = (f"--workspace-root={pytester.path / 'ws'}", "--agent=fake", "--experiment-id=c")
    result = pytester.runpytest_subprocess(*args, "--max-cost=0.015")
    # a starts at $0, b at $0.01 (below the limit), c at $0.02: refused, and so is d.
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*c-CONTROL-r1: not run: --max-cost 0.015 reached ($0.02 spent)*"])
    folder = experiment(pytester, "c")
    status = status_json(str(folder))
    assert status["spent_usd"] == pytest.approx(0.02)
    assert status["not_run"] == ["c-CONTROL-r1", "d-CONTROL-r1"]
    resumed = pytester.runpytest_subprocess(*args, "--max-cost=0.015")
    resumed.assert_outcomes(passed=4)  # a new session, a new count: c and d run, the others are resumed
    assert status_json(str(folder))["spent_usd"] == pytest.approx(0.04)


def test_negative_limits_are_usage_errors(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    four_tasks(suite)
    result = pytester.runpytest_subprocess(f"--workspace-root={pytester.path / 'ws'}", "--comet-max-trials=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-trials=-1: must be 0 or more*"])


def test_the_plain_lines_read_the_plan_once(
    pytester: pytest.Pytester, suite: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plan lists every case: reading it again for each finished trial would cost a session of N trials
    # N reads of N cases.
    import scaffold.experiment.status

    four_tasks(suite)
    reads: list[Path] = []
    real = scaffold.experiment.status.read_plan

    def counting(root: Path) -> dict[str, Any] | None:
        reads.append(root)
        return real(root)

    monkeypatch.setattr(scaffold.experiment.status, "read_plan", counting)
    result = pytester.runpytest_inprocess(
        f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=once", "--count=2"
    )
    result.assert_outcomes(passed=8)
    lines = [line for line in result.outlines if re.match(r"\[\d/8\] ", line)]
    assert [line.split("]")[0] for line in lines] == [f"[{i}/8" for i in range(1, 9)]
    assert len(reads) == 2  # the lines' one, and the session's end marking the plan finished
