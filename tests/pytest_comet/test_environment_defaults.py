"""Defaults the docs say come from the environment come from the process environment, then from
``~/.comet/eval/.env`` (here a private ``COMET_EVAL_HOME``): ``BENCH_EVAL_AGENT``, ``COMET_EVAL_REPORT_CONFIG``,
``COMET_AGENT_BIN_DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold.agents.cli import CliAgent
from scaffold.session import HarnessSession, Options
from tests.support.factories import TaskFactory


@pytest.fixture
def env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "comet-home"
    home.mkdir()
    monkeypatch.setenv("COMET_EVAL_HOME", str(home))
    for name in ("BENCH_EVAL_AGENT", "COMET_EVAL_REPORT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return home / ".env"


@pytest.fixture
def one_task(suite: TaskFactory) -> TaskFactory:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("one")
    return suite


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=e", *args)


def test_bench_eval_agent_in_the_env_file_is_the_default_agent(
    pytester: pytest.Pytester, one_task: TaskFactory, env_file: Path
) -> None:
    """Before: ignored (only the process environment was read), so the oracle ran and passed."""
    env_file.write_text("BENCH_EVAL_AGENT=nop\n")
    run(pytester, "--baseline=none").assert_outcomes(failed=1)  # nop does nothing: the task fails
    record = pytester.path / "local" / "logs" / "experiments" / "e" / "trials" / "one-CONTROL-r1" / "record.json"
    assert "nop" in json.dumps(json.loads(record.read_text())["agent"])


def test_the_process_environment_and_the_option_win_over_the_env_file(
    pytester: pytest.Pytester, one_task: TaskFactory, env_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file.write_text("BENCH_EVAL_AGENT=no-such-agent\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent=no-such-agent: unknown agent*"])
    run(pytester, "--agent=oracle", "--experiment-id=e2").assert_outcomes(passed=1)
    monkeypatch.setenv("BENCH_EVAL_AGENT", "oracle")
    run(pytester, "--experiment-id=e3").assert_outcomes(passed=1)


def test_report_config_in_the_env_file_chooses_the_reports(tmp_path: Path, env_file: Path) -> None:
    config = tmp_path / "reports.json"
    config.write_text(json.dumps({"report_outputs": {"markdown": True, "html": True}}))
    env_file.write_text(f"COMET_EVAL_REPORT_CONFIG={config}\n")
    assert HarnessSession(Options(root=tmp_path)).outputs().html


def test_the_agent_bin_dir_and_credentials_in_the_env_file_find_the_cli(
    tmp_path: Path, env_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "agents-bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.delenv("COMET_AGENT_BIN_DIR", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env_file.write_text(f"COMET_AGENT_BIN_DIR={bin_dir}\nANTHROPIC_API_KEY=x-key-from-dotenv\n")
    agent = HarnessSession(Options(root=tmp_path, agent="claude-code")).agent()
    assert isinstance(agent, CliAgent)
    assert agent.local_program == program  # what the local backend starts


def test_a_negative_start_window_is_a_usage_error(pytester: pytest.Pytester, one_task: TaskFactory) -> None:
    result = run(pytester, "--start-window=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--start-window -1: use 0 (off) or a number of seconds*"])
    run(pytester, "--start-window=0", "--experiment-id=e2").assert_outcomes(passed=1)
