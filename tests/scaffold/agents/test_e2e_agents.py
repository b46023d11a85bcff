"""The real published agent CLIs (Claude Code, Codex) driven by the scripted model server, end to end:
scripted tool calls change real files, validation runs, the rubric scores, skills are detected from
the real stream, tokens are parsed, and no credential reaches any file the run wrote.

Needs the CLIs (on PATH or in $COMET_AGENT_BIN_DIR, default /opt/comet-agents/node_modules/.bin).
Locally they skip when absent; with COMET_REQUIRE_AGENT_CLIS=1 (CI) a missing CLI is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.experiment.cases import Case
from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.records import TrialRecord
from scaffold.workspaces.backends import create_backend
from tests.support.agents import ANTHROPIC_KEY, OPENAI_KEY, SCRIPTS, require_cli, scripted_cli_env
from tests.support.factories import make_runner

pytestmark = pytest.mark.agent_cli

Run = Callable[..., TrialRecord]


@pytest.fixture(params=["local", "docker", "docker-copy"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``docker-copy``: the docker backend in copy mode (as with a remote engine): the workspace and the
    agent CLI (a volume) live in the engine, nothing is bind-mounted."""
    if request.param.startswith("docker"):
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
        monkeypatch.setenv("COMET_DOCKER_COPY", "1" if request.param == "docker-copy" else "0")
    return str(request.param)


@pytest.fixture
def run_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> Run:
    def run(agent: str, task: str, treatment: str, script: str) -> TrialRecord:
        cli = {"claude-code": "claude", "codex": "codex"}[agent]
        monkeypatch.setenv("PATH", require_cli(cli) + os.pathsep + os.environ["PATH"])
        log = tmp_path / "model-requests.jsonl"
        # Listen on every address: a container reaches this machine at its bridge gateway, and the
        # adapter rewrites the loopback base URL below to that address.
        with ScriptedModelServer(load_script(SCRIPTS / script), host="0.0.0.0", log_path=log) as server:
            url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
            env = scripted_cli_env(tmp_path / "user-home", url)
            runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path, keep_workspaces="all")
            runner.agent = create_agent(agent, env)
            if backend.startswith("docker"):
                # The endpoint is served here: the container may reach this machine and nothing else.
                runner.backend = create_backend(
                    "docker",
                    workspace_root=tmp_path / "ws",
                    network=runner.agent.network,
                    agent_install=runner.agent.install,
                )
                assert runner.agent.network.on_this_machine
            try:
                record = runner.run(Case(task, treatment, 1)).record
            finally:
                runner.backend.close()
        assert record.config["backend"] == backend.partition("-")[0]
        for path in tmp_path.rglob("*"):
            if path.is_file() and path.suffix in (".json", ".jsonl", ".log", ".md"):
                text = path.read_text(errors="replace")
                assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text, f"secret written to {path}"
        return record

    return run


def dims(record: TrialRecord) -> dict[str, Any]:
    return {d.name: d.score for d in record.dimensions}


def explain(record: TrialRecord) -> Any:
    return {
        "checks": [c for c in record.checks if c.status != "passed"],
        "errors": record.errors,
        "trajectory_errors": record.trajectory and record.trajectory.errors,
        "hard": record.hard_failures,
    }


class TestClaudeCode:
    @pytest.mark.slow
    def test_skill_treatment_single_turn(self, run_agent: Run) -> None:
        record = run_agent("claude-code", "generic-skill-smoke", "SKILL_MARKDOWN_REPORT", "claude-skill-smoke.yaml")
        assert record.verdict == "passed", explain(record)
        traj = record.to_dict()["trajectory"] or {}
        assert traj["skills_invoked"] == ["markdown-report"]
        assert dims(record)["skill_invocation"] == 1.0
        assert [c["name"] for c in traj["tool_calls"]] == ["Skill", "Write", "Bash"]
        assert traj["commands"] == ["head -3 result.md"]
        assert traj["tokens"]["input"] > 0 and traj["tokens"]["output"] > 0
        assert traj["tokens"]["cache_read"] > 0
        assert traj["cost_usd"] is not None and traj["cost_usd"] > 0
        assert traj["agent_version"] and traj["agent_version"].startswith("2.1.112")
        assert traj["session_id"] and traj["turns"] == 4
        assert record.agent.version == traj["agent_version"]

    def test_control_single_turn(self, run_agent: Run) -> None:
        record = run_agent("claude-code", "generic-skill-smoke", "CONTROL", "claude-skill-smoke-control.yaml")
        assert record.verdict == "passed", explain(record)
        assert record.to_dict()["trajectory"]["skills_invoked"] == []
        assert dims(record)["skill_invocation"] is None  # CONTROL installs no required skill: N/A

    def test_failed_skill_call_is_an_attempt_not_an_invocation(self, run_agent: Run) -> None:
        # CONTROL installs no skill, yet the model calls Skill(markdown-report): the real CLI answers
        # "Unknown skill: markdown-report" with is_error true.
        record = run_agent("claude-code", "generic-skill-smoke", "CONTROL", "claude-skill-unknown.yaml")
        assert record.verdict == "passed", explain(record)
        traj = record.to_dict()["trajectory"] or {}
        assert [c["name"] for c in traj["tool_calls"]] == ["Skill", "Write"]
        assert traj["skills_invoked"] == []
        assert traj["skills_attempted"] == ["markdown-report"]

    def test_auto_user_conversation(self, run_agent: Run) -> None:
        record = run_agent("claude-code", "changelog-release", "CONTROL", "claude-changelog.yaml")
        assert record.verdict == "passed", explain(record)
        traj = record.to_dict()["trajectory"] or {}
        log = traj["interaction_log"]
        assert [e["prompt_kind"] for e in log] == ["instruction", "reply"]
        assert log[0]["reply"] == "The new version is 2.4.0." and log[0]["reply_source"] == "reply_queue"
        assert log[0]["session_id"] == log[1]["session_id"]  # resumed
        assert traj["conversation_turns"] == 2
        assert dims(record)["interaction_compliance"] == 1.0


class TestCodex:
    def test_skill_treatment_single_turn(self, run_agent: Run) -> None:
        record = run_agent("codex", "generic-skill-smoke", "SKILL_MARKDOWN_REPORT", "codex-skill-smoke.yaml")
        assert record.verdict == "passed", explain(record)
        traj = record.to_dict()["trajectory"] or {}
        assert traj["skills_invoked"] == ["markdown-report"]
        assert traj["commands"][0] == "cat .agents/skills/markdown-report/SKILL.md"
        assert traj["tokens"]["input"] > 0 and traj["tokens"]["cache_read"] > 0
        assert traj["cost_usd"] is None  # Codex reports no cost: N/A, not zero
        assert traj["session_id"]
        assert traj["agent_version"] and "0.171.0" in traj["agent_version"]

    def test_auto_user_conversation(self, run_agent: Run) -> None:
        record = run_agent("codex", "changelog-release", "CONTROL", "codex-changelog.yaml")
        assert record.verdict == "passed", explain(record)
        log = record.to_dict()["trajectory"]["interaction_log"]
        assert [e["prompt_kind"] for e in log] == ["instruction", "reply"]
        assert log[0]["session_id"] == log[1]["session_id"]
