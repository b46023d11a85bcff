"""Agent CLIs end to end on the local backend, with a stand-in CLI (tests/data/fake_agent.py) that speaks
the custom-adapter contract: credentials, raw streams, redaction, resume, and auto_user conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scaffold.agents import create_agent
from scaffold.agents.cli import CliAgent
from scaffold.agents.conversation import decision_point
from scaffold.experiment.cases import Case
from tests.support.factories import REPO, TaskFactory, make_runner

FAKE = REPO / "tests" / "data" / "fake_agent.py"
SECRET = "sk-fake-planted-secret-0123456789"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    registry = tmp_path / "adapters" / "fake"
    registry.mkdir(parents=True)
    (registry / "adapter.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "comet.eval.agent/v1alpha1",
                "kind": "EvalAgentAdapter",
                "metadata": {"id": "fake", "version": "1.0.0"},
                "runtime": {"executable": str(FAKE), "install": {"kind": "none"}},
                "credentials": ["FAKE_API_KEY"],
                "modelEnv": "FAKE_MODEL",
                "capabilities": {
                    "singleTurn": True,
                    "resume": True,
                    "structuredEvents": True,
                    "telemetry": True,
                    "skillInvocationEvidence": True,
                },
            }
        )
    )
    values = {
        "COMET_EVAL_ADAPTERS_DIR": str(tmp_path / "adapters"),
        "FAKE_API_KEY": SECRET,
        "FAKE_MODEL": "m-1",
        "COMET_EVAL_HOME": str(tmp_path / "home"),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other-agents-key-must-not-leak")
    return values


def run(
    factory: TaskFactory,
    tmp_path: Path,
    env: dict[str, str],
    plan: list[dict[str, Any]],
    simulator: str = "",
    **sections: Any,
) -> Any:
    files = {".fake-agent.json": json.dumps(plan), ".fake-simulator.txt": simulator}
    factory.task("t", files=files, solve="true\n", **sections)
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path, keep_workspaces="all")
    runner.agent = create_agent("fake", dict(env))
    return runner.run(Case("t", "CONTROL", 1))


def calls(outcome: Any) -> list[Path]:
    # The fake agent logs each call in its private HOME, which is gone; it also leaves the plan. Read
    # the raw streams instead: one file per turn.
    return sorted(outcome.record_path.parent.glob("agent.turn-*.jsonl"))


def test_single_turn(factory: TaskFactory, tmp_path: Path, env: dict[str, str]) -> None:
    outcome = run(
        factory,
        tmp_path,
        env,
        [{"write": {"out.txt": "done\n"}, "skill": "helper", "bash": "ls -la", "text": "All done."}],
    )
    record = outcome.record
    assert record.verdict == "passed", record.checks
    traj = record.to_dict()["trajectory"]  # the JSON form, as stored
    assert traj["agent"] == "fake" and traj["agent_version"] == "fake-agent 1.2.3"
    assert traj["skills_invoked"] == ["helper"]
    assert traj["commands"] == ["ls -la"]
    assert traj["tokens"] == {"input": 10, "output": 5, "cache_read": 2, "cache_write": 1}
    assert traj["cost_usd"] == 0.01 and traj["final_text"] == "All done."
    assert traj["malformed_lines"] == 1 and traj["conversation_turns"] == 1
    assert len(calls(outcome)) == 1


def test_only_declared_credentials_reach_the_agent_and_none_is_written(
    factory: TaskFactory, tmp_path: Path, env: dict[str, str]
) -> None:
    outcome = run(factory, tmp_path, env, [{"write": {"out.txt": "done\n"}, "echo_env": True}])
    stream = next(iter(calls(outcome))).read_text()
    echoed = next(json.loads(line)["env"] for line in stream.splitlines() if '"debug"' in line)
    assert echoed["FAKE_API_KEY"] == "[redacted]"
    assert "ANTHROPIC_API_KEY" not in echoed
    for path in (tmp_path / "logs").rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert SECRET not in text and "sk-other-agents-key" not in text, path


def test_missing_credentials_fail_before_anything_runs(env: dict[str, str]) -> None:
    from scaffold.errors import AgentError

    with pytest.raises(AgentError, match="FAKE_API_KEY"):
        create_agent("fake", {k: v for k, v in env.items() if k != "FAKE_API_KEY"})


def test_auto_user_conversation(factory: TaskFactory, tmp_path: Path, env: dict[str, str]) -> None:
    plan = [
        {"text": "Should I use tabs or spaces?"},
        {"text": "DECISION: pick a file name"},
        {"text": "Working on it", "incomplete": True},
        {"write": {"out.txt": "done\n"}, "text": "Finished: out.txt written."},
    ]
    interaction = {
        "mode": "auto_user",
        "max_turns": 6,
        "decision_patterns": ["^DECISION:"],
        "decision_replies": ["Spaces."],
        "decision_reply": "Use out.txt.",
        "continue_prompt": "Keep going.",
    }
    outcome = run(factory, tmp_path, env, plan, interaction=interaction)
    record = outcome.record
    assert record.verdict == "passed", (record.checks, record.trajectory)
    log = record.trajectory.interaction_log
    assert [e["prompt_kind"] for e in log] == ["instruction", "reply", "reply", "nudge"]
    assert [(e.get("reply_source"), e.get("reply")) for e in log[:2]] == [
        ("reply_queue", "Spaces."),
        ("decision_reply", "Use out.txt."),
    ]
    assert log[0]["pattern"] == "question" and log[1]["pattern"] == "^DECISION:"
    assert log[2]["nudged"] is True and log[3]["completed"] is True
    assert record.trajectory.conversation_turns == 4
    sessions = {e["session_id"] for e in log}
    assert len(sessions) == 1  # every turn resumed the same session
    dims = {d["name"]: d for d in record.to_dict()["dimensions"]}
    assert dims["interaction_compliance"]["score"] == 1.0
    assert len(calls(outcome)) == 4


def test_simulator_answers_when_no_reply_is_configured(
    factory: TaskFactory, tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_SIMULATOR_AGENT", "fake")
    plan = [{"text": "Which file name do you want?"}, {"write": {"out.txt": "done\n"}, "text": "Written."}]
    outcome = run(
        factory,
        tmp_path,
        env,
        plan,
        simulator="Call it out.txt, please.",
        interaction={"mode": "auto_user", "max_turns": 4, "simulator_prompt": "You want out.txt."},
    )
    record = outcome.record
    assert record.verdict == "passed", record.checks
    first = record.trajectory.interaction_log[0]
    assert (first["reply_source"], first["reply"]) == ("simulator", "Call it out.txt, please.")
    simulator_streams = list((outcome.record_path.parent / "simulator").glob("agent.turn-*.jsonl"))
    assert len(simulator_streams) == 1  # its own process, its own stream


def test_the_simulator_gets_a_home_of_its_own_and_no_home_outlives_the_trial(
    factory: TaskFactory, tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() caches its first answer
    monkeypatch.setenv("BENCH_SIMULATOR_AGENT", "fake")
    plan = [{"text": "Which file name do you want?"}, {"write": {"out.txt": "done\n"}, "text": "Written."}]
    files = {".fake-agent.json": json.dumps(plan), ".fake-simulator.txt": "out.txt"}
    interaction = {"mode": "auto_user", "max_turns": 4, "simulator_prompt": "You want out.txt."}
    factory.task("t", files=files, solve="true\n", interaction=interaction)
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    runner.agent = create_agent("fake", dict(env))
    homes: list[str] = []
    turn = CliAgent.turn

    def spy(self: CliAgent, *args: Any, **kwargs: Any) -> Any:
        homes.append(kwargs["home"])
        assert Path(kwargs["home"]).is_dir()  # a real folder, made before the turn
        return turn(self, *args, **kwargs)

    monkeypatch.setattr(CliAgent, "turn", spy)
    try:
        outcome = runner.run(Case("t", "CONTROL", 1))
    finally:
        runner.backend.close()
    assert outcome.record.trajectory.interaction_log[0]["reply_source"] == "simulator"
    agent_home, simulator_home = homes[0], homes[1]
    assert simulator_home != agent_home and Path(simulator_home).parent == Path(agent_home).parent
    assert not Path(agent_home).parent.exists()
    assert sorted(p.name for p in scratch.rglob("*") if p.is_dir()) == ["comet-eval", "locks"]


def test_simulator_prompt_file_overrides_the_task(
    factory: TaskFactory, tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt_file = tmp_path / "sim.md"
    prompt_file.write_text("You are a terse user.")
    monkeypatch.setenv("BENCH_SIMULATOR_PROMPT_FILE", str(prompt_file))
    monkeypatch.setenv("BENCH_SIMULATOR_AGENT", "fake")
    plan = [{"text": "Which name?"}, {"write": {"out.txt": "done\n"}, "text": "Written."}]
    outcome = run(factory, tmp_path, env, plan, simulator="out.txt", interaction={"mode": "auto_user"})
    assert outcome.record.trajectory.interaction_log[0]["reply_source"] == "simulator"
    stream = next((outcome.record_path.parent / "simulator").glob("agent.turn-*.jsonl")).read_text()
    assert "out.txt" in stream


def test_auto_user_stops_at_max_turns(factory: TaskFactory, tmp_path: Path, env: dict[str, str]) -> None:
    plan = [{"text": "Which one?"}]
    outcome = run(factory, tmp_path, env, plan, interaction={"mode": "auto_user", "max_turns": 3})
    traj = outcome.record.to_dict()["trajectory"]  # the JSON form, as stored
    assert traj["conversation_turns"] == 3 and traj["completed"] is False
    assert [e["reply_source"] for e in traj["interaction_log"]] == ["continue_prompt"] * 3
    dims = {d["name"]: d for d in outcome.record.to_dict()["dimensions"]}
    assert dims["interaction_compliance"]["score"] == 0.5


def test_fresh_resume_marker_starts_a_new_session(factory: TaskFactory, tmp_path: Path, env: dict[str, str]) -> None:
    plan = [{"text": "Context full. [FRESH] Shall I continue?"}, {"write": {"out.txt": "done\n"}, "text": "ok"}]
    outcome = run(
        factory,
        tmp_path,
        env,
        plan,
        interaction={"mode": "auto_user", "max_turns": 4, "fresh_resume_marker": "[FRESH]"},
    )
    log = outcome.record.trajectory.interaction_log
    assert log[0]["fresh_session_next"] is True
    assert log[0]["session_id"] != log[1]["session_id"]


def test_agent_timeout(factory: TaskFactory, tmp_path: Path, env: dict[str, str]) -> None:
    outcome = run(factory, tmp_path, env, [{"sleep": 30}], environment={"timeout_sec": 1})
    traj = outcome.record.to_dict()["trajectory"]  # the JSON form, as stored
    assert traj["timed_out"] is True and traj["exit_code"] is None
    assert any("timed out" in e for e in traj["errors"])
    assert outcome.record.verdict == "failed"


@pytest.mark.parametrize(
    ("text", "patterns", "expected"),
    [
        ("Shall I proceed?", (), "question"),
        ("Done.\n\n**Want me to add tests?**", (), "question"),
        ("All done.", (), None),
        ("Please choose: A or B", ("choose:",), "choose:"),
        ("Is it fine? I went ahead anyway.", (), None),
    ],
)
def test_decision_points(text: str, patterns: tuple[str, ...], expected: str | None) -> None:
    assert decision_point(text, patterns) == expected


def test_the_judge_is_never_sent_the_agents_credentials(
    factory: TaskFactory, tmp_path: Path, env: dict[str, str]
) -> None:
    """The agent writes its key into a file and a file's name; the judge's prompt shows the workspace, so
    it goes through the agent's redaction first, as changes.json and the transcript do."""
    from scaffold.judge.config import JudgeConfig
    from scaffold.judge.transport import JudgeRun
    from scaffold.modelserver import ScriptedModelServer
    from scaffold.modelserver.script import parse_script

    answer = {"text": "[RUBRIC-JUDGE] task_completion: 0.5 - a file\n"}
    plan = [{"write": {"out.txt": "done\n"}, "write_env": {"leak.txt": "FAKE_API_KEY"}}]
    factory.task("t", files={".fake-agent.json": json.dumps(plan)}, solve="true\n")
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    runner.agent = create_agent("fake", dict(env))
    with ScriptedModelServer(parse_script({"responses": [answer], "judge": answer})) as server:
        runner.judge = JudgeRun(JudgeConfig("claude-code", "judge-model", server.url, api_key="judge-key"), {})
        record = runner.run(Case("t", "CONTROL", 1)).record
        sent = json.dumps(server.requests)
    assert record.judge is not None and record.judge.status == "enabled_and_successful"
    assert "leak.txt" in sent and "FAKE_API_KEY=" in sent  # the judge saw the files, not the value
    assert SECRET not in sent
