"""``comet trajectory``: re-parse saved raw agent streams, as text or JSON; several files are one conversation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from scaffold.cli.main import main
from tests.support.factories import REPO

STREAMS = REPO / "tests" / "data" / "streams"
CLAUDE = STREAMS / "claude-pitfalls.jsonl"
CLAUDE_RESUME = STREAMS / "claude-resume.jsonl"
CODEX = STREAMS / "codex-pitfalls.jsonl"
SESSION = "3f0c2a4e-1111-4c5d-9e2b-claude000001"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> dict[str, Any]:
    code, out, err = run(capsys, "trajectory", *argv, "--json")
    assert (code, err) == (0, "")
    data: dict[str, Any] = json.loads(out)
    return data


def test_claude_code_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "trajectory", "--agent", "claude-code", CLAUDE)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "agent:            claude-code 2.1.112",
        f"session:          {SESSION}",
        "conversation:     1 turn(s); model calls 5",
        "tool calls:       6 (Bash, Read, Skill, Task, Write)",
        "commands:         2",
        "skills invoked:   pdf-tools, csv-kit",
        "tokens:           input 20, output 640, cache read 8100, cache write 800",
        "cost (USD):       0.0421",
        "completed:        True",
        "malformed lines:  3",
        "command:          ls -la",
        "command:          python -m pytest -q",
        "permission denied: Write",
        "final text:       Done: the skill ran.",
    ]


def test_claude_code_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--agent", "claude-code", CLAUDE)
    assert data["agent"] == "claude-code"
    assert data["agent_version"] == "2.1.112"
    assert data["session_id"] == SESSION
    assert data["turns"] == 5
    assert data["conversation_turns"] == 1
    assert data["tokens"] == {"input": 20, "output": 640, "cache_read": 8100, "cache_write": 800}
    assert data["cost_usd"] == 0.0421
    assert data["skills_invoked"] == ["pdf-tools", "csv-kit"]
    assert data["commands"] == ["ls -la", "python -m pytest -q"]
    assert data["tool_call_count"] == 6
    assert data["tool_calls"][0] == {"name": "Skill", "input": {"skill": "pdf-tools"}}
    assert data["permission_denials"] == ["Write"]
    assert data["errors"] == []
    assert data["malformed_lines"] == 3
    assert data["completed"] is True
    assert data["final_text"] == "Done: the skill ran."


def test_several_files_are_turns_of_one_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--agent", "claude-code", CLAUDE, CLAUDE_RESUME)
    assert data["conversation_turns"] == 2
    assert data["turns"] == 8
    assert data["tokens"] == {"input": 30, "output": 760, "cache_read": 10950, "cache_write": 810}
    assert data["cost_usd"] == pytest.approx(0.05)
    assert data["skills_invoked"] == ["pdf-tools", "csv-kit", "report-writer"]
    assert data["tool_call_count"] == 8
    assert data["final_text"] == "Summary written."
    assert data["session_id"] == SESSION


def test_several_files_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "trajectory", "--agent", "claude-code", CLAUDE, CLAUDE_RESUME)
    assert code == 0
    assert "conversation:     2 turn(s); model calls 8\n" in out
    assert "tokens:           input 30, output 760, cache read 10950, cache write 810\n" in out
    assert "skills invoked:   pdf-tools, csv-kit, report-writer\n" in out


def test_codex_text_shows_unknowns_as_na(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "trajectory", "--agent", "codex", CODEX)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "agent:            codex"
    assert "conversation:     1 turn(s); model calls N/A" in lines
    assert "cost (USD):       N/A" in lines
    assert "tokens:           input 900, output 130, cache read 2100, cache write 0" in lines
    assert "error:            Reconnecting... 1/5" in lines


def test_codex_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--agent", "codex", CODEX)
    assert data["turns"] is None
    assert data["cost_usd"] is None
    assert data["tokens"] == {"input": 900, "output": 130, "cache_read": 2100, "cache_write": 0}
    assert data["commands"] == ["cat .agents/skills/csv-kit/SKILL.md", "python -m pytest -q && echo 'ok'"]


def test_custom_agent_uses_skill_invocation_events(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--agent", "my-agent", STREAMS / "custom-agent.jsonl")
    assert data["agent"] == "my-agent"
    assert data["skills_invoked"] == ["my-skill", "second-skill"]


def test_empty_stream_is_an_incomplete_trajectory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, _ = run(capsys, "trajectory", "--agent", "claude-code", empty)
    assert code == 0
    assert "completed:        False\n" in out
    assert "tokens:           N/A\n" in out
    assert "session:          N/A\n" in out


def test_unreadable_file_is_a_usage_error_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "turn-2.jsonl"
    code, out, err = run(capsys, "trajectory", "--agent", "claude-code", CLAUDE, missing)
    assert code == 2
    assert out == ""
    assert err == f"comet: {missing}: cannot be read: No such file or directory\n"


def test_directory_is_a_usage_error_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "trajectory", "--agent", "codex", tmp_path)
    assert code == 2
    assert out == ""
    assert err.startswith(f"comet: {tmp_path}: cannot be read: ")


def test_invalid_utf8_is_read_with_replacement(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "stream.jsonl"
    shutil.copyfile(CLAUDE, copy)
    with copy.open("ab") as handle:
        handle.write(b"\xff\xfe not utf-8\n")
    data = run_json(capsys, "--agent", "claude-code", copy)
    assert data["malformed_lines"] == 4
    assert data["turns"] == 5


def test_agent_and_file_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["trajectory", str(CLAUDE)])
    assert caught.value.code == 2
    assert "--agent" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["trajectory", "--agent", "codex"])
    assert caught.value.code == 2


def test_failed_skill_call_shows_as_attempted_not_invoked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "trajectory", "--agent", "claude-code", STREAMS / "claude-skill-unknown.jsonl")
    assert (code, err) == (0, "")
    assert "skills invoked:   none\n" in out
    assert "skills attempted: markdown-report (the call failed; not invoked)\n" in out
    data = run_json(capsys, "--agent", "claude-code", STREAMS / "claude-skill-unknown.jsonl")
    assert (data["skills_invoked"], data["skills_attempted"]) == ([], ["markdown-report"])
