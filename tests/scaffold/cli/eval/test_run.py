"""``comet eval`` runs: the pytest session in-process (the console script in a child process here), the
header, one progress line per trial, the reports, the user's .env made on the first run, and each exit
status: 0 an answer and passing gates, 1 a failed quality gate, 2 a usage error, 3 no answer."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from scaffold.cli.eval import command
from scaffold.cli.eval.command import plan_eval
from scaffold.cli.eval.outcome import finish
from scaffold.cli.eval.progress import Progress
from scaffold.cli.main import main
from scaffold.errors import ExitStatus, GenerationError
from scaffold.experiment import PROGRESS_FILE
from scaffold.records.files import write_record
from tests.scaffold.cli.eval.test_plan import INLINE, args, manifest_data, skill
from tests.support.records import rec


def comet(tmp_path: Path, *argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    found = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert found, "the comet console script is not installed next to the interpreter"
    child = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run(
        [found, "eval", *map(str, argv)],
        env=child,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_a_quick_run_prints_the_header_progress_and_reports_and_exits_0(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills")
    result = comet(tmp_path, folder, "--quick", "--agent", "oracle")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    env_file = tmp_path / "eval-home" / ".env"
    assert f"Created your comet-eval settings file: {env_file}" in out
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    for expected in (
        "Target:",
        "Manifest:   synthesized",
        "Tasks:      quick (1)",
        "Agent:      oracle (command line)",
    ):
        assert expected in out
    assert "[1/2] generic-skill-smoke-CONTROL-r1: passed" in out
    assert "[2/2] generic-skill-smoke-DYNAMIC_SKILL-r1: passed" in out
    assert "verdict: DYNAMIC_SKILL vs CONTROL:" in out
    experiments = folder / ".comet" / "eval" / "runs" / "experiments"
    (experiment,) = experiments.iterdir()
    assert f"summary: {experiment / 'summary.md'}" in out
    assert (experiment / "summary.md").is_file() and (experiment / "results.jsonl").is_file()
    # The second run finds the file: it is neither made again nor mentioned.
    again = comet(tmp_path, folder, "--quick", "--agent", "oracle", "--experiment-id", "second")
    assert again.returncode == 0, again.stderr
    assert "Created your comet-eval settings file" not in again.stdout
    assert (experiments / "second" / "summary.md").is_file()


def test_a_failing_quality_gate_exits_1_and_is_listed(tmp_path: Path) -> None:
    # The oracle runs no model and an inline task has no reference solution: every trial fails.
    data = manifest_data(evaluation={"tasks": [INLINE], "qualityGates": {"minPassAt1": 0.5}})
    folder = skill(tmp_path / "skills", data)
    result = comet(tmp_path, folder, "--agent", "oracle")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Tasks:      authored (1)" in result.stdout
    assert "quality gate FAIL: writes-summary: pass@1 0 is below the required 0.5" in result.stdout
    assert (folder / ".comet" / "eval" / "runs" / "experiments").is_dir()


def test_a_failing_gate_option_exits_1(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills")
    result = comet(tmp_path, folder, "--quick", "--agent", "nop", "--gate", "pass@1 of DYNAMIC_SKILL >= 0.5")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "gate FAIL: pass@1 of DYNAMIC_SKILL >= 0.5" in result.stdout


def test_without_gates_failed_trials_still_exit_0(tmp_path: Path) -> None:
    """No gate: the exit status says the run produced an answer, not whether the skill is good."""
    folder = skill(tmp_path / "skills")
    result = comet(tmp_path, folder, "--quick", "--agent", "nop")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": failed" in result.stdout


def test_usage_errors_exit_2_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "eval-home"))
    folder = skill(tmp_path / "skills")
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    assert main(["eval", str(folder), "--suite", "langfuse"]) == 2
    assert "--suite langfuse needs LANGFUSE_PUBLIC_KEY" in capsys.readouterr().err
    assert main(["eval", str(folder), "--manifest", str(folder / "x.yaml")]) == 2
    assert "both name what to evaluate" in capsys.readouterr().err
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("BENCH_API_KEY", raising=False)
    assert main(["eval", str(folder), "--quick", "--agent", "claude-code"]) == 2  # missing credentials
    assert "needs credentials" in capsys.readouterr().err
    assert not (folder / ".comet").exists()


def test_a_generation_failure_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "eval-home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-gen-000000")
    folder = skill(tmp_path / "skills")
    report = tmp_path / "summary.md"

    def failed(plan: object, args: object) -> Path:
        raise GenerationError(f"task_generation: generator did not return JSON\nPartial report: {report}", report)

    monkeypatch.setattr(command, "_generate", failed)
    assert main(["eval", str(folder), "--agent", "nop"]) == ExitStatus.NO_ANSWER  # nop: no program to look for
    captured = capsys.readouterr()
    assert re.search(r"Tasks:\s+pending generation", captured.out)
    assert f"Partial report: {report}" in captured.err


def test_every_trial_excluded_or_errored_is_no_answer(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills", manifest_data())
    plan = plan_eval(args(folder, "--agent", "oracle"), process_env={"HOME": str(tmp_path)})
    progress = Progress(io.StringIO(), 2, plan.experiment_dir)
    excluded = {"category": "excluded", "reason": "rate limit", "source": "structured", "evidence": {}}
    for i, record in enumerate(
        [
            rec("writes-summary", "CONTROL", 1, "failed", noise=excluded),
            rec("writes-summary", "DYNAMIC_SKILL", 1, "error"),
        ]
    ):
        progress.records.append(write_record(tmp_path / f"r{i}" / "record.json", record))
    assert finish(plan, 0, progress, io.StringIO()) == ExitStatus.NO_ANSWER
    progress.records.append(
        write_record(tmp_path / "r9" / "record.json", rec("writes-summary", "CONTROL", 2, "failed"))
    )
    assert finish(plan, 1, progress, io.StringIO()) == ExitStatus.OK  # an answer, and no gate to fail


def test_pytest_arguments_are_the_plugins_options(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills", manifest_data())
    parsed = args(folder, "--agent", "oracle", "--task", "writes-summary", "-n", "2", "--html", "--count", "3")
    plan = plan_eval(parsed, process_env={"HOME": str(tmp_path)})
    argv = command.pytest_arguments(plan, parsed, plan.manifest.file)
    assert f"--comet-eval-manifest={folder / 'comet' / 'eval.yaml'}" in argv
    assert f"--comet-project-root={folder}" in argv
    assert "--comet-task=writes-summary" in argv and "--comet-count=3" in argv and "--comet-html" in argv
    assert argv[argv.index("-n") + 1] == "2"
    assert f"--comet-experiment-id={plan.experiment_id}" in argv
    assert isinstance(parsed, argparse.Namespace)


def test_judge_samples_reach_the_plugin(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills", manifest_data())
    parsed = args(folder, "--agent", "oracle", "--judge-samples", "3")
    plan = plan_eval(parsed, process_env={"HOME": str(tmp_path)})
    assert "--comet-judge-samples=3" in command.pytest_arguments(plan, parsed, plan.manifest.file)
    once = args(folder, "--agent", "oracle")
    assert not any("judge-samples" in a for a in command.pytest_arguments(plan, once, plan.manifest.file))


def test_in_flight_reaches_the_plugin(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills", manifest_data())
    parsed = args(folder, "--agent", "oracle", "-n", "16", "--in-flight", "1")
    plan = plan_eval(parsed, process_env={"HOME": str(tmp_path)})
    assert "--comet-in-flight=1" in command.pytest_arguments(plan, parsed, plan.manifest.file)
    default = args(folder, "--agent", "oracle", "-n", "16")
    assert not any("in-flight" in a for a in command.pytest_arguments(plan, default, plan.manifest.file))


def test_retry_excluded_reaches_the_plugin(tmp_path: Path) -> None:
    folder = skill(tmp_path / "skills", manifest_data())
    parsed = args(folder, "--agent", "oracle", "--retry-excluded", "0")
    plan = plan_eval(parsed, process_env={"HOME": str(tmp_path)})
    assert "--comet-retry-excluded=0" in command.pytest_arguments(plan, parsed, plan.manifest.file)
    default = args(folder, "--agent", "oracle")  # the plugin's default (2) then holds
    assert not any("retry-excluded" in a for a in command.pytest_arguments(plan, default, plan.manifest.file))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines_and_the_live_line(tmp_path: Path) -> None:
    terminal = _Terminal()
    progress = Progress(terminal, 2, tmp_path)
    node = "local/tests/test_tasks.py::test_task[writes-summary-CONTROL-r1]"
    progress.pytest_runtest_logstart(node, None)
    assert progress.live_line() == ""  # no trial has a progress file yet
    trial = tmp_path / "trials" / "writes-summary-CONTROL-r1"
    trial.mkdir(parents=True)
    started = datetime.now(UTC) - timedelta(seconds=65)
    progress_file = {"case_id": "writes-summary-CONTROL-r1", "phase": "agent", "turn": 2}
    progress_file |= {"started_at": started.isoformat(), "updated_at": datetime.now(UTC).isoformat()}
    (trial / PROGRESS_FILE).write_text(json.dumps(progress_file))
    # The live line is the experiment's status line (scaffold.experiment.status), the one pytest sessions show.
    assert progress.live_line().startswith("done 0 | running 1 | elapsed ? | ETA ? | spent n/a | ")
    assert progress.live_line().endswith("writes-summary-CONTROL-r1 agent t2 1:05 in trial")
    assert progress.live is not None
    progress.live.draw()
    report = SimpleNamespace(
        when="call",
        nodeid=node,
        failed=False,
        skipped=False,
        duration=0.0,
        user_properties=[
            ("comet_case", "writes-summary-CONTROL-r1"),
            ("comet_verdict", "failed"),
            ("comet_weighted_score", 0.5),
        ],
    )
    progress.pytest_runtest_logreport(report)
    text = terminal.getvalue()
    assert "\r\x1b[K[1/2] writes-summary-CONTROL-r1: failed  score 0.50  " in text  # the live line cleared first
    plain = io.StringIO()
    quiet = Progress(plain, 1, tmp_path)
    assert quiet.live is None
    quiet.pytest_runtest_logstart(node, None)
    quiet.pytest_runtest_logreport(report)
    skipped = SimpleNamespace(
        when="setup",
        nodeid="x",
        failed=False,
        skipped=True,
        duration=0.0,
        user_properties=[("comet_case", "other-CONTROL-r1"), ("comet_not_run", "--max-trials 1 reached")],
    )
    quiet.pytest_runtest_logreport(skipped)
    assert quiet.not_run == 1 and quiet.invalid == 0
    assert plain.getvalue().splitlines()[-1] == "[2/1] other-CONTROL-r1: not run: --max-trials 1 reached"
    assert "\x1b" not in plain.getvalue() and "\r" not in plain.getvalue()  # not a terminal: the finished lines only


# An agent CLI that knows no --version: whatever it is given, it prints its JSON stream (and, asked for a
# task, takes three seconds and writes the expected file). The stream names no version either.
SLOW_AGENT = """#!{python}
import json, sys, time
from pathlib import Path

def emit(event):
    print(json.dumps(event), flush=True)

emit({{"type": "system", "subtype": "init", "session_id": "13e3f0c2-session"}})
if "--version" not in sys.argv:
    time.sleep(3)
    Path("summary.md").write_text("# Summary\\nall good\\n")
emit({{"type": "result", "subtype": "success", "is_error": False, "result": "done", "session_id": "13e3f0c2-session"}})
"""


def slow_adapter(root: Path) -> Path:
    """A registry with the custom adapter ``slow``: :data:`SLOW_AGENT`, no credentials."""
    program = root / "slow-agent"
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(SLOW_AGENT.format(python=sys.executable))
    program.chmod(0o755)
    adapter = {
        "apiVersion": "comet.eval.agent/v1alpha1",
        "kind": "EvalAgentAdapter",
        "metadata": {"id": "slow", "version": "1.0.0"},
        "runtime": {"executable": str(program), "install": {"kind": "none"}},
        "capabilities": {"singleTurn": True, "resume": True, "structuredEvents": True, "skillInvocationEvidence": True},
    }
    (root / "adapters" / "slow").mkdir(parents=True)
    (root / "adapters" / "slow" / "adapter.yaml").write_text(json.dumps(adapter))
    return root / "adapters"


@pytest.mark.slow
def test_the_live_line_fills_a_wide_terminal_and_an_agent_without_version_is_unknown(tmp_path: Path) -> None:
    from tests.pytest_comet.test_long_runs import drawn_lines, run_on_pty

    task = {**INLINE, "name": "writes-a-summary-of-the-quarterly-results"}
    folder = skill(tmp_path / "skills", manifest_data(evaluation={"tasks": [task]}))
    found = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert found
    (tmp_path / "tmp").mkdir()
    env = {
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
        "COMET_EVAL_ADAPTERS_DIR": str(slow_adapter(tmp_path)),
    }
    # One trial of each: the line is drawn while a trial runs; more rounds would only add minutes.
    argv = [found, "eval", str(folder), "--agent", "slow", "--experiment-id", "wide", "--count", "1"]
    # 160 columns that only the terminal knows ($COLUMNS unset, as an interactive shell leaves it): while
    # a trial runs, pytest's capturing holds file descriptor 1, where the width used to be asked (98).
    code, shown = run_on_pty(argv, tmp_path, columns=160, export_columns=False, env=env)
    assert code == 0, shown
    drawn = drawn_lines(shown)
    assert drawn, shown
    assert 98 < max(column + len(text) for column, text in drawn) <= 160 - 2, drawn
    running = r"writes-a-summary-of-the-quarterly-results-(CONTROL|DYNAMIC_SKILL)-r1 agent( t\d+)? \d:\d\d in trial"
    assert any(re.search(running, text) for _, text in drawn), drawn
    # Its --version printed a stream, not a version: "unknown", never a piece of the stream.
    summary = next((folder / ".comet" / "eval" / "runs" / "experiments").glob("*/summary.md")).read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| CONTROL | slow |"))
    assert row.startswith("| CONTROL | slow | unknown |"), row
    assert "13e3" not in summary and "session_id" not in summary
