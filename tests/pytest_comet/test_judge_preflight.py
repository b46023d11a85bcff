"""The judge of a plain pytest run, decided before any trial: its agent when none is named (whatever the
subject's), an agent that cannot judge, and a judge CLI that is not installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pytest_comet.test_judge_options import JUDGE_VARS, record, run
from tests.scaffold.judge.test_judge import ANSWER, _server
from tests.support.factories import TaskFactory


@pytest.fixture
def one_task(suite: TaskFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TaskFactory:
    """One task, no judge setting from this machine, and no judge CLI anywhere the run looks for it."""
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "comet-home"))
    for name in (*JUDGE_VARS, "BENCH_JUDGE_AUTH_TOKEN", "BENCH_JUDGE_TRANSPORT", "BENCH_EVAL_AGENT"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "no-agents"
    empty.mkdir()
    monkeypatch.setenv("COMET_AGENT_BIN_DIR", str(empty))
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and not (Path(p) / "claude").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("one")
    return suite


def test_an_oracle_subject_is_judged_over_the_messages_api(
    pytester: pytest.Pytester, one_task: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BENCH_JUDGE_* with a URL, a key and a model and no judge agent, for a subject that runs no model (the
    oracle, a plain run's default): the judge is Claude Code's, so the URL and key call the Messages API
    directly, and no CLI is needed."""
    with _server({"text": ANSWER}) as server:
        for name, value in (
            ("BENCH_LLM_JUDGE", "1"),
            ("BENCH_JUDGE_MODEL", "judge-model"),
            ("BENCH_JUDGE_BASE_URL", server.url),
            ("BENCH_JUDGE_API_KEY", "judge-key"),
        ):
            monkeypatch.setenv(name, value)
        run(pytester, "--agent=oracle").assert_outcomes(passed=1)
        assert len(server.requests) == 1
    judge = record(pytester)["judge"]
    assert (judge["status"], judge["agent"], judge["transport"]) == ("enabled_and_successful", "claude-code", "http")


def test_a_missing_judge_cli_is_a_usage_error_before_any_trial(
    pytester: pytest.Pytester, one_task: TaskFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No judge API of its own: the judge runs Claude Code's CLI, which is not installed. The session says
    so before its first trial (what to install, or where to point), instead of a judge failure per trial."""
    monkeypatch.setenv("BENCH_LLM_JUDGE", "1")
    monkeypatch.setenv("BENCH_JUDGE_MODEL", "judge-model")
    result = run(pytester, "--agent=oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*the LLM judge runs claude-code's CLI, and its program 'claude' is not installed; looked in*"]
    )
    assert str(tmp_path / "no-agents") in result.stderr.str()
    assert "comet agents install claude-code" in result.stderr.str()
    assert not (pytester.path / "local" / "logs" / "experiments" / "e" / "trials").exists()


def test_an_agent_that_cannot_judge_is_a_usage_error(pytester: pytest.Pytester, one_task: TaskFactory) -> None:
    result = run(pytester, "--agent=oracle", "--judge-agent=codex", "--judge-model=gpt-5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge agent 'codex': only claude-code can judge*--judge-agent=claude-code*"])
    assert not (pytester.path / "local" / "logs" / "experiments" / "e" / "trials").exists()
