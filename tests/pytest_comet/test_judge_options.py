"""The LLM judge in a plain pytest run: BENCH_LLM_JUDGE and BENCH_JUDGE_* (before: silently ignored, no
judge, no status) and --judge-samples, down to the trial record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scaffold.judge.config import MODEL_REQUIRED
from tests.scaffold.judge.test_judge import ANSWER, _server
from tests.support.factories import TaskFactory

JUDGE_VARS = (
    "BENCH_LLM_JUDGE",
    "BENCH_JUDGE_AGENT",
    "BENCH_JUDGE_MODEL",
    "BENCH_JUDGE_BASE_URL",
    "BENCH_JUDGE_API_KEY",
)


@pytest.fixture
def one_task(suite: TaskFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TaskFactory:
    monkeypatch.setenv("COMET_EVAL_HOME", str(tmp_path / "comet-home"))
    for name in (*JUDGE_VARS, "BENCH_JUDGE_AUTH_TOKEN", "BENCH_EVAL_AGENT"):
        monkeypatch.delenv(name, raising=False)
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("one")
    return suite


def record(pytester: pytest.Pytester) -> dict[str, Any]:
    path = pytester.path / "local" / "logs" / "experiments" / "e" / "trials" / "one-CONTROL-r1" / "record.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(f"--workspace-root={pytester.path / 'ws'}", "--experiment-id=e", "--baseline=none", *args)


def test_judge_without_a_model_is_skipped(
    pytester: pytest.Pytester, one_task: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_LLM_JUDGE", "1")
    run(pytester).assert_outcomes(passed=1)
    assert record(pytester)["judge"] == {"status": "skipped", "reason": MODEL_REQUIRED, "agent": "claude-code"}


def test_judge_from_the_environment_scores_beside_the_rules(
    pytester: pytest.Pytester, one_task: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _server({"text": ANSWER}) as server:
        for name, value in zip(JUDGE_VARS, ("1", "claude-code", "judge-model", server.url, "judge-key"), strict=True):
            monkeypatch.setenv(name, value)
        run(pytester, "--judge-samples=2").assert_outcomes(passed=1)
    data = record(pytester)
    judge = data["judge"]
    assert (judge["status"], judge["transport"], judge["samples"], judge["model"]) == (
        "enabled_and_successful",
        "http",
        2,
        "judge-model",
    )
    judged = [d for d in data["dimensions"] if d.get("source") == "judge"]
    assert [d["name"] for d in judged] == ["task_completion", "output_quality", "instruction_adherence"]
    assert data["dimensions"][-len(judged) :] == judged  # after the rule dimensions
    assert dict(data["config"]["judge"])["model"] == "judge-model"
    assert "judge-key" not in json.dumps(data)
