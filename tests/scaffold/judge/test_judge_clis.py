"""The judge through the real Claude Code and Codex CLIs, answered by the scripted model server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scaffold.judge.config import JudgeConfig
from scaffold.judge.transport import JudgeRun
from scaffold.rubrics import JUDGE_SOURCE
from tests.scaffold.judge.test_judge import ANSWER, SUBJECT_KEY, _request, _server
from tests.support.agents import require_cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("agent", "program", "model"), [("claude-code", "claude", "claude-sonnet-4-5"), ("codex", "codex", "gpt-5-codex")]
)
def test_real_cli_judge(tmp_path: Path, agent: str, program: str, model: str) -> None:
    folder = require_cli(program)
    environ = {
        "PATH": folder + os.pathsep + os.environ["PATH"],
        "HOME": str(tmp_path / "user-home"),
        # The subject's credentials and API: none of them may reach the judge's process.
        "ANTHROPIC_API_KEY": SUBJECT_KEY,
        "OPENAI_API_KEY": SUBJECT_KEY,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }
    with _server({"text": ANSWER}) as server:
        config = JudgeConfig(agent, model, server.url, api_key="judge-key", cli=True, timeout_s=120)
        dims, info = JudgeRun(config, environ).judge(_request(tmp_path))
        sent = server.requests
    assert info.status == "enabled_and_successful", info.reason
    assert info.transport == "cli"
    assert {d.name: d.score for d in dims if d.source == JUDGE_SOURCE}["task_completion"] == 0.9
    assert sent and SUBJECT_KEY not in repr(sent)
    assert any("judge-key" in repr(r.get("headers")) or "hello.py" in repr(r.get("body")) for r in sent)
