"""The judge through the real Claude Code CLI, answered by the scripted model server: it grades, and it
cannot act on the host, whatever the text it reads or the model behind it asks for."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import scaffold.modelserver.server
from scaffold.judge.config import JudgeConfig
from scaffold.judge.transport import JudgeRun
from scaffold.modelserver import ScriptedModelServer
from scaffold.modelserver.script import Answer, RequestView, Script, parse_script, plan_answer
from scaffold.rubrics import JUDGE_SOURCE
from tests.scaffold.judge.test_judge import ANSWER, SUBJECT_KEY, _request, _server
from tests.support.agents import require_cli

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5"


def _environ(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": require_cli("claude") + os.pathsep + os.environ["PATH"],
        "HOME": str(tmp_path / "user-home"),
        # The subject's credentials and API: none of them may reach the judge's process.
        "ANTHROPIC_API_KEY": SUBJECT_KEY,
        "OPENAI_API_KEY": SUBJECT_KEY,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }


def _attack(tmp_path: Path) -> tuple[dict[str, object], Path, Path]:
    """A scripted judge model that acts on the host: it writes a file into a folder of this machine and
    lists an experiments folder, then answers with scores as if nothing happened."""
    target = tmp_path / "host-folder"
    target.mkdir()
    experiments = tmp_path / "logs" / "experiments"
    (experiments / "exp-1").mkdir(parents=True)
    planted = target / "planted.txt"
    calls = [
        {"name": "Bash", "input": {"command": f"echo acted > {planted}; ls -R {experiments}", "description": "x"}},
        {"name": "Write", "input": {"file_path": str(target / "written.txt"), "content": "acted\n"}},
    ]
    return {"responses": [{"tool_calls": calls}, {"text": ANSWER}], "judge": {"text": ANSWER}}, target, experiments


def test_real_cli_judge(tmp_path: Path) -> None:
    with _server({"text": ANSWER}) as server:
        config = JudgeConfig("claude-code", MODEL, server.url, api_key="judge-key", cli=True, timeout_s=120)
        dims, info = JudgeRun(config, _environ(tmp_path)).judge(_request(tmp_path))
        sent = server.requests
    assert info.status == "enabled_and_successful", info.reason
    assert info.transport == "cli"
    assert {d.name: d.score for d in dims if d.source == JUDGE_SOURCE}["task_completion"] == 0.9
    assert sent and SUBJECT_KEY not in repr(sent)
    assert any("hello.py" in repr(r.get("body")) for r in sent)


def test_the_cli_judge_is_offered_no_tool_and_acts_on_nothing(tmp_path: Path) -> None:
    """A model that would act if it could: the judge's CLI offers it no tool, so the model is never
    asked in a conversation where it could call one; nothing is written, and the judge runs in an empty
    scratch folder (not the workspace, not the experiment)."""
    script, target, experiments = _attack(tmp_path)
    with ScriptedModelServer(parse_script(script)) as server:
        config = JudgeConfig("claude-code", MODEL, server.url, api_key="judge-key", cli=True, timeout_s=120)
        dims, info = JudgeRun(config, _environ(tmp_path)).judge(_request(tmp_path))
        sent = server.requests
    assert list(target.iterdir()) == []
    models = [r for r in sent if isinstance(r.get("body"), dict) and "messages" in r["body"]]
    assert models and all(not r["body"].get("tools") for r in models)
    cwd = Path(str(models[0]["answer"]["cwd"]))
    assert cwd.name == "work" and cwd.parent.name.startswith("comet-judge-")
    assert tmp_path not in cwd.parents and experiments not in cwd.parents
    assert info.status == "enabled_and_successful", info.reason
    assert len(dims) == 3


def test_a_judge_answer_that_calls_a_tool_is_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model (or a gateway in front of it) that answers with tool calls although the request offered
    none: Claude Code refuses them, nothing is written, and the judge's answer is not used as a grade: the
    record says the judge failed, and why."""

    def as_if_tools_were_offered(script: Script, view: RequestView) -> Answer:
        return plan_answer(script, dataclasses.replace(view, has_tools=True))

    monkeypatch.setattr(scaffold.modelserver.server, "plan_answer", as_if_tools_were_offered)
    script, target, _ = _attack(tmp_path)
    with ScriptedModelServer(parse_script(script)) as server:
        config = JudgeConfig("claude-code", MODEL, server.url, api_key="judge-key", cli=True, timeout_s=120)
        dims, info = JudgeRun(config, _environ(tmp_path)).judge(_request(tmp_path))
        answered = [r["answer"]["tool_calls"] for r in server.requests if r.get("answer")]
    assert any(answered)  # the model did ask for the tools
    assert list(target.iterdir()) == []
    assert dims == () and info.status == "failed"
    assert info.reason.startswith("the judge tried to use tools (Bash, Write)"), info.reason
