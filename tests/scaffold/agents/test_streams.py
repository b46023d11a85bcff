"""Stream parsers: Claude Code stream-json (also Qoder, CodeBuddy and custom adapters) and Codex exec --json.

The fixtures in tests/data/streams/ are hand-written to hit every pitfall listed in AGENT_CLI_FACTS.md;
the real captures (claude-code-basic.jsonl, codex-basic.jsonl), when present, are parsed too.
"""

from __future__ import annotations

import json

import pytest

from scaffold.agents.streams import parser_for
from scaffold.agents.streams.claude import parse_claude_stream
from scaffold.agents.streams.codex import parse_codex_stream, unwrap_shell
from scaffold.agents.streams.events import json_events, merge_turns, skill_from_path
from scaffold.trajectory import TokenUsage, ToolCall, Trajectory
from tests.support.factories import REPO

STREAMS = REPO / "tests" / "data" / "streams"
CLAUDE_SESSION = "3f0c2a4e-1111-4c5d-9e2b-claude000001"
CODEX_THREAD = "0199a7c2-5a1e-7d30-b4c1-codex0000001"


def lines_of(name: str) -> list[str]:
    return (STREAMS / name).read_text(encoding="utf-8").splitlines(keepends=True)


def jsonl(*events: object) -> list[str]:
    return [json.dumps(e) + "\n" for e in events]


def assistant(msg_id: str, *content: dict[str, object], parent: str | None = None, **usage: int) -> dict[str, object]:
    message: dict[str, object] = {"id": msg_id, "model": "claude-sonnet-4-5", "content": list(content)}
    if usage:
        message["usage"] = usage
    return {"type": "assistant", "message": message, "parent_tool_use_id": parent, "session_id": "s"}


def tool_use(name: str, /, _id: str | None = None, **tool_input: object) -> dict[str, object]:
    return {"type": "tool_use", "id": _id or f"toolu_{name}", "name": name, "input": tool_input}


def results(*answers: tuple[str, str, bool]) -> dict[str, object]:
    """A ``user`` event answering tool calls: (tool_use_id, content, is_error) each."""
    blocks = [
        {"type": "tool_result", "tool_use_id": i, "content": content, **({"is_error": True} if error else {})}
        for i, content, error in answers
    ]
    return {"type": "user", "message": {"role": "user", "content": blocks}, "parent_tool_use_id": None}


def text(value: str) -> dict[str, object]:
    return {"type": "text", "text": value}


# --- Claude Code ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pitfalls() -> Trajectory:
    return parse_claude_stream(lines_of("claude-pitfalls.jsonl"))


def test_claude_repeated_message_lines_are_one_turn_each_and_subagents_add_none(pitfalls: Trajectory) -> None:
    # msg_01 and msg_02 arrive as two lines each; msg_sub_* carry parent_tool_use_id.
    assert pitfalls.turns == 5
    assert pitfalls.conversation_turns == 1


def test_claude_result_usage_wins_over_per_line_and_stream_event_usage(pitfalls: Trajectory) -> None:
    assert pitfalls.tokens == TokenUsage(input=20, output=640, cache_read=8100, cache_write=800)


def test_claude_cost_session_version_final_text(pitfalls: Trajectory) -> None:
    assert pitfalls.cost_usd == pytest.approx(0.0421)
    assert pitfalls.session_id == CLAUDE_SESSION
    assert pitfalls.agent_version == "2.1.112"
    assert pitfalls.final_text == "Done: the skill ran."
    assert pitfalls.completed is True
    assert pitfalls.errors == ()
    assert pitfalls.agent == "claude-code"


def test_claude_tool_calls_in_order_including_subagent_ones(pitfalls: Trajectory) -> None:
    assert [c.name for c in pitfalls.tool_calls] == ["Skill", "Read", "Write", "Task", "Bash", "Bash"]
    assert pitfalls.tool_calls[0] == ToolCall("Skill", {"skill": "pdf-tools"})


def test_claude_skill_tool_and_skill_file_read_count_but_write_and_mentions_do_not(pitfalls: Trajectory) -> None:
    # Text mentions pdf-tools and .claude/skills/comet/SKILL.md; a Write creates new-skill/SKILL.md.
    assert pitfalls.skills_invoked == ("pdf-tools", "csv-kit")


def test_claude_bash_commands_and_permission_denials(pitfalls: Trajectory) -> None:
    assert pitfalls.commands == ("ls -la", "python -m pytest -q")
    assert pitfalls.permission_denials == ("Write",)


def test_claude_malformed_lines_are_counted(pitfalls: Trajectory) -> None:
    # "not json at all", a JSON array and a truncated assistant line.
    assert pitfalls.malformed_lines == 3


def test_claude_api_failure_with_success_subtype_is_an_error() -> None:
    t = parse_claude_stream(lines_of("claude-api-error.jsonl"))
    assert t.errors == (
        "API error: API Error: 429 rate limit exceeded",
        "result success: API Error: 429 rate limit exceeded",
    )
    assert t.turns == 0  # the synthetic message is the CLI's own, not a model response
    assert t.session_id == "sess-api-error"
    assert t.tool_calls == ()
    assert t.tokens == TokenUsage(0, 0, 0, 0)
    assert t.cost_usd == 0.0


def test_claude_error_result_subtypes_are_errors() -> None:
    t = parse_claude_stream(
        jsonl(
            assistant("m1", text("working"), input_tokens=1, output_tokens=1),
            {"type": "result", "subtype": "error_max_turns", "is_error": False, "num_turns": 80},
        )
    )
    assert t.errors == ("result error_max_turns:",)
    assert t.final_text == "working"


def test_claude_killed_run_is_incomplete_and_sums_tokens_per_message_id() -> None:
    t = parse_claude_stream(lines_of("claude-killed.jsonl"))
    assert t.completed is False
    # msg_a (10/1/100/50) and msg_b (7/12/300/20), each repeated on two lines: counted once each.
    assert t.tokens == TokenUsage(input=17, output=13, cache_read=400, cache_write=70)
    assert t.turns == 2
    assert t.cost_usd is None
    assert t.malformed_lines == 1
    assert t.commands == ("sleep 1000", "echo hi")
    assert t.final_text == "Still waiting."


def test_claude_partial_message_stream_events_never_add_tokens() -> None:
    t = parse_claude_stream(
        jsonl(
            {"type": "stream_event", "event": {"usage": {"input_tokens": 500, "output_tokens": 500}}},
            assistant("m1", text("hi"), input_tokens=3, output_tokens=4),
            {"type": "stream_event", "event": {"usage": {"input_tokens": 500, "output_tokens": 500}}},
        )
    )
    assert t.tokens == TokenUsage(3, 4, 0, 0)
    assert t.turns == 1


@pytest.mark.parametrize(
    "line",
    [
        "not json\n",
        "[1, 2]\n",
        '"a string"\n',
        "42\n",
        '{"type": "assistant", "message": {"id": "m1", "content": [\n',
        '{"type": "assistant", "message": "oops"}\n',
        pytest.param("1" * 5000 + "\n", id="over-long-integer"),
        pytest.param("[" * 100_000 + "\n", id="absurd-nesting"),
    ],
)
def test_claude_malformed_line_is_counted_never_raised(line: str) -> None:
    t = parse_claude_stream([line])
    assert t.malformed_lines == 1
    assert t.turns == 0
    assert t.completed is False


@pytest.mark.parametrize(
    "event",
    [
        assistant("m1", input_tokens="many", output_tokens=[1]),  # type: ignore[arg-type]
        {"type": "assistant", "message": {"id": "m1", "content": 5, "usage": {"input_tokens": float("inf")}}},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "input": [1]}]}},
        {"type": "result", "permission_denials": 3, "usage": "none", "total_cost_usd": "free"},
        {"type": "system", "subtype": "init", "session_id": None},
    ],
)
def test_claude_wrongly_typed_fields_never_raise(event: dict[str, object]) -> None:
    t = parse_claude_stream([json.dumps(event) + "\n"])
    assert t.malformed_lines == 0
    assert t.cost_usd is None


def test_claude_blank_lines_are_not_malformed() -> None:
    t = parse_claude_stream(["\n", "   \n", *jsonl(assistant("m1", text("ok")))])
    assert t.malformed_lines == 0
    assert t.turns == 1


def test_claude_skill_names_are_normalized_and_deduplicated() -> None:
    t = parse_claude_stream(
        jsonl(
            assistant("m1", tool_use("Skill", "t1", skill="/comet"), tool_use("Skill", "t2", command="comet")),
            results(("t1", "Launching skill: comet", False), ("t2", "Launching skill: comet", False)),
            assistant("m2", tool_use("Read", "t3", file_path="/w/.claude/skills/comet-open/SKILL.md")),
            results(("t3", "---\nname: comet-open\n---\n", False)),
            assistant("m3", tool_use("Read", "t4", file_path="/w/.claude/skills/comet-open/reference/x.md")),
            results(("t4", "reference", False)),
            assistant("m4", tool_use("Skill", "t5")),
            results(("t5", "<tool_use_error>skill is required</tool_use_error>", True)),
        )
    )
    assert t.skills_invoked == ("comet", "comet-open")
    assert t.skills_attempted == ()


def test_claude_unknown_skill_recorded_by_the_real_cli_is_an_attempt() -> None:
    # Recorded from Claude Code 2.1.112 (tests/scaffold/agents/test_e2e_agents.py makes the same call):
    # CONTROL installs no skill, the model calls Skill(markdown-report), the CLI answers
    # "<tool_use_error>Unknown skill: markdown-report</tool_use_error>" with is_error true.
    t = parse_claude_stream(lines_of("claude-skill-unknown.jsonl"))
    assert [c.name for c in t.tool_calls] == ["Skill", "Write"]
    assert t.skills_invoked == ()
    assert t.skills_attempted == ("markdown-report",)
    assert t.completed is True


def test_claude_skill_launched_by_the_real_cli_is_invoked() -> None:
    # Recorded: the Skill call's result is "Launching skill: markdown-report" without is_error.
    t = parse_claude_stream(lines_of("claude-code-basic.jsonl"))
    assert t.skills_invoked == ("markdown-report",)
    assert t.skills_attempted == ()


@pytest.mark.parametrize(
    ("answer", "invoked", "attempted"),
    [
        (("t1", "Launching skill: pdf-tools", False), ("pdf-tools",), ()),
        (("t1", "<tool_use_error>Unknown skill: pdf-tools</tool_use_error>", True), (), ("pdf-tools",)),
        (("other", "an answer to another call", False), (), ("pdf-tools",)),  # never answered
        (None, (), ("pdf-tools",)),  # the run ended before the result (killed)
    ],
)
def test_claude_skill_call_counts_only_when_its_result_is_not_an_error(
    answer: tuple[str, str, bool] | None, invoked: tuple[str, ...], attempted: tuple[str, ...]
) -> None:
    events: list[object] = [assistant("m1", tool_use("Skill", "t1", skill="pdf-tools"))]
    if answer is not None:
        events.append(results(answer))
    t = parse_claude_stream(jsonl(*events))
    assert (t.skills_invoked, t.skills_attempted) == (invoked, attempted)


def test_claude_failed_or_denied_skill_file_read_is_an_attempt() -> None:
    t = parse_claude_stream(
        jsonl(
            assistant("m1", tool_use("Read", "r1", file_path="/w/.claude/skills/csv-kit/SKILL.md")),
            results(("r1", "<tool_use_error>File does not exist.</tool_use_error>", True)),
            assistant("m2", tool_use("Read", "r2", file_path="/w/.claude/skills/pdf-tools/SKILL.md")),
            results(("r2", "Claude requested permissions to read from /w/.claude/skills/pdf-tools/SKILL.md", True)),
            {"type": "result", "subtype": "success", "is_error": False, "permission_denials": [{"tool_name": "Read"}]},
        )
    )
    assert t.skills_invoked == ()
    assert t.skills_attempted == ("csv-kit", "pdf-tools")


def test_claude_skill_that_failed_then_succeeded_is_invoked_not_attempted() -> None:
    t = parse_claude_stream(
        jsonl(
            assistant("m1", tool_use("Skill", "t1", skill="pdf-tools")),
            results(("t1", "<tool_use_error>Unknown skill: pdf-tools</tool_use_error>", True)),
            assistant("m2", tool_use("Read", "t2", file_path="/w/.claude/skills/pdf-tools/SKILL.md")),
            results(("t2", "---\nname: pdf-tools\n---\n", False)),
        )
    )
    assert t.skills_invoked == ("pdf-tools",)
    assert t.skills_attempted == ()


def test_claude_subagent_skill_calls_are_decided_by_their_results_too() -> None:
    t = parse_claude_stream(
        jsonl(
            assistant("s1", tool_use("Skill", "ts1", skill="csv-kit"), parent="toolu_task"),
            {
                **results(("ts1", "<tool_use_error>Unknown skill: csv-kit</tool_use_error>", True)),
                "parent_tool_use_id": "toolu_task",
            },
        )
    )
    assert t.skills_invoked == ()
    assert t.skills_attempted == ("csv-kit",)


def test_custom_skill_invocation_event_marked_failed_is_an_attempt() -> None:
    t = parse_claude_stream(
        jsonl(
            {"type": "skill_invocation", "skill": "a"},
            {"type": "skill_invocation", "skill": "b", "is_error": True},
            {"type": "skill_invocation", "skill": "c", "success": False},
            {"type": "skill_invocation", "skill": "d", "success": True},
        ),
        agent="my-agent",
        custom=True,
    )
    assert t.skills_invoked == ("a", "d")
    assert t.skills_attempted == ("b", "c")


def test_claude_custom_mode_counts_only_skill_invocation_events() -> None:
    t = parse_claude_stream(lines_of("custom-agent.jsonl"), agent="my-agent", custom=True)
    assert t.skills_invoked == ("my-skill", "second-skill")
    assert t.agent == "my-agent"
    assert t.session_id == "custom-sess-7"
    assert t.agent_version == "0.3.1"
    assert t.final_text == "custom done"
    assert t.tokens == TokenUsage(11, 22, 0, 0)
    assert len(t.tool_calls) == 3


def test_claude_builtin_mode_ignores_skill_invocation_events() -> None:
    t = parse_claude_stream(jsonl({"type": "skill_invocation", "skill": "my-skill"}))
    assert t.skills_invoked == ()


def test_claude_top_level_error_events_are_recorded() -> None:
    t = parse_claude_stream(jsonl({"type": "error", "message": "boom"}, {"type": "error", "error": "bust"}))
    assert t.errors == ("boom", "bust")


# --- Codex -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codex() -> Trajectory:
    return parse_codex_stream(lines_of("codex-pitfalls.jsonl"))


def test_codex_thread_id_is_the_session_and_turns_and_cost_are_unknown(codex: Trajectory) -> None:
    assert codex.session_id == CODEX_THREAD
    assert codex.turns is None
    assert codex.cost_usd is None
    assert codex.agent == "codex"
    assert codex.completed is True


def test_codex_commands_unwrapped_and_duplicate_items_ignored(codex: Trajectory) -> None:
    assert codex.commands == ("cat .agents/skills/csv-kit/SKILL.md", "python -m pytest -q && echo 'ok'")
    assert codex.tool_calls == (
        ToolCall("shell", {"command": "cat .agents/skills/csv-kit/SKILL.md", "exit_code": 0}),
        ToolCall("shell", {"command": "python -m pytest -q && echo 'ok'", "exit_code": 0}),
        ToolCall("file_change", {"changes": [{"path": "/workspace/report.md", "kind": "add"}]}),
    )


def test_codex_usage_cached_tokens_moved_and_turns_summed(codex: Trajectory) -> None:
    # turn 1: 1000 in (600 cached), 50 out; turn 2: 2000 in (1500 cached), 80 out.
    assert codex.tokens == TokenUsage(input=900, output=130, cache_read=2100, cache_write=0)


def test_codex_final_text_skills_errors_and_malformed(codex: Trajectory) -> None:
    assert codex.final_text == "All done: report.md written."
    assert codex.skills_invoked == ("csv-kit",)
    assert codex.errors == ("Reconnecting... 1/5",)
    assert codex.malformed_lines == 2


def test_codex_turn_failed_is_incomplete_with_both_errors() -> None:
    t = parse_codex_stream(lines_of("codex-failed.jsonl"))
    assert t.completed is False
    assert t.errors == (
        "unexpected status 401 Unauthorized",
        "turn failed: unexpected status 401 Unauthorized: Missing bearer",
    )
    assert t.tokens is None
    assert t.session_id == "0199a7c2-fail-0000-0000-codex0000002"


def test_codex_without_turn_completed_is_incomplete() -> None:
    t = parse_codex_stream(jsonl({"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"}))
    assert t.completed is False
    assert t.tokens is None


def test_codex_skill_files_read_by_several_commands() -> None:
    t = parse_codex_stream(
        jsonl(
            {
                "type": "item.completed",
                "item": {
                    "id": "i1",
                    "type": "command_execution",
                    "command": ["bash", "-lc", "sed -n 1,50p /w/.agents/skills/alpha/SKILL.md"],
                    "exit_code": 0,
                },
            },
            {
                "type": "item.completed",
                "item": {
                    "id": "i2",
                    "type": "command_execution",
                    "command": "head .agents/skills/beta/SKILL.md",
                    "exit_code": 0,
                },
            },
            {
                "type": "item.completed",
                "item": {"id": "i3", "type": "command_execution", "command": "ls .agents/skills/gamma/"},
            },
            {
                "type": "item.completed",
                "item": {"id": "i4", "type": "agent_message", "text": "use skills/delta/SKILL.md"},
            },
        )
    )
    assert t.commands == (
        "sed -n 1,50p /w/.agents/skills/alpha/SKILL.md",
        "head .agents/skills/beta/SKILL.md",
        "ls .agents/skills/gamma/",
    )
    assert t.skills_invoked == ("alpha", "beta")


def codex_command(item_id: str, command: str, exit_code: int | None, *, completed: bool = True) -> dict[str, object]:
    """A command_execution item event in the shape Codex 0.171.0 writes (see codex-basic.jsonl)."""
    status = "in_progress" if not completed else ("completed" if exit_code == 0 else "failed")
    return {
        "type": "item.completed" if completed else "item.started",
        "item": {
            "id": item_id,
            "type": "command_execution",
            "command": f"/bin/bash -lc '{command}'",
            "aggregated_output": "",
            "exit_code": exit_code,
            "status": status,
        },
    }


def test_codex_skill_file_read_that_failed_or_never_finished_is_an_attempt() -> None:
    t = parse_codex_stream(
        jsonl(
            codex_command("i1", "cat .agents/skills/alpha/SKILL.md", None, completed=False),
            codex_command("i1", "cat .agents/skills/alpha/SKILL.md", 1),  # No such file or directory
            codex_command("i2", "cat .agents/skills/beta/SKILL.md", None, completed=False),  # killed mid-command
            codex_command("i3", "cat .agents/skills/gamma/SKILL.md", None, completed=False),
            codex_command("i3", "cat .agents/skills/gamma/SKILL.md", 0),
            codex_command("i4", "cat .agents/skills/gamma/SKILL.md", 2),  # failed again, but was read once
        )
    )
    assert t.skills_invoked == ("gamma",)
    assert t.skills_attempted == ("alpha", "beta")


@pytest.mark.parametrize(
    "event",
    [
        {"type": "turn.completed", "usage": {"input_tokens": "abc", "cached_input_tokens": [1], "output_tokens": None}},
        {"type": "turn.completed", "usage": "none"},
        {"type": "item.completed", "item": {"id": {"x": 1}, "type": "command_execution", "command": 7}},
        {"type": "item.completed", "item": "not an item"},
        {"type": "turn.failed", "error": "plain text"},
    ],
)
def test_codex_wrongly_typed_fields_never_raise(event: dict[str, object]) -> None:
    t = parse_codex_stream([json.dumps(event) + "\n"])
    assert t.malformed_lines == 0
    if event["type"] == "turn.completed":
        assert t.tokens == TokenUsage(0, 0, 0, 0)


def test_codex_malformed_lines_counted() -> None:
    t = parse_codex_stream(["{", "[]", "null", '{"type": "thread.started", "thread_id": "t9"}', '{"type": "item'])
    assert t.malformed_lines == 4
    assert t.session_id == "t9"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/bin/bash -lc 'ls -la'", "ls -la"),
        ("bash -c \"echo 'hi there'\"", "echo 'hi there'"),
        (["/usr/bin/zsh", "-lc", "pwd"], "pwd"),
        (["git", "status"], "git status"),
        ("python -m pytest", "python -m pytest"),
        ("/bin/bash -lc 'unterminated", "/bin/bash -lc 'unterminated"),
    ],
)
def test_unwrap_shell(command: object, expected: str) -> None:
    assert unwrap_shell(command) == expected


# --- shared helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "skill"),
    [
        (".claude/skills/comet/SKILL.md", "comet"),
        ("/root/.agents/skills/x/SKILL.md", "x"),
        ("skills/x/README.md", None),
        ("SKILL.md", None),
        ("x/SKILL.md", None),
        ("/w/.claude/skills/comet/reference/SKILL.md", None),
    ],
)
def test_skill_from_path(path: str, skill: str | None) -> None:
    assert skill_from_path(path) == skill


def test_json_events_yields_none_for_non_objects_and_skips_blanks() -> None:
    assert list(json_events(['{"a": 1}', "", "[1]", "x", "  "])) == [{"a": 1}, None, None]


def test_parser_for_each_agent() -> None:
    line = jsonl(
        {"type": "skill_invocation", "skill": "s"},
        assistant("m", tool_use("Skill", "u1", skill="t")),
        results(("u1", "Launching skill: t", False)),
    )
    assert parser_for("claude-code")(line).skills_invoked == ("t",)
    # Qoder and CodeBuddy write Claude Code's stream: the same rule decides their skill calls.
    failed = jsonl(assistant("m", tool_use("Skill", "u1", skill="t")), results(("u1", "Unknown skill: t", True)))
    for agent in ("claude-code", "qoder", "codebuddy"):
        assert (parser_for(agent)(failed).skills_invoked, parser_for(agent)(failed).skills_attempted) == ((), ("t",))
    assert parser_for("qoder")(line).agent == "qoder"
    assert parser_for("codebuddy")(line).agent == "codebuddy"
    assert parser_for("my-agent")(line).skills_invoked == ("s",)
    assert parser_for("codex")(lines_of("codex-failed.jsonl")).agent == "codex"


# --- merge_turns -------------------------------------------------------------------------------


def test_merge_turns_sums_tokens_cost_and_counts_conversation_turns() -> None:
    first = parse_claude_stream(lines_of("claude-pitfalls.jsonl"))
    second = parse_claude_stream(lines_of("claude-resume.jsonl"))
    merged = merge_turns([first, second])
    assert merged.conversation_turns == 2
    assert merged.turns == 8
    assert merged.tokens == TokenUsage(input=30, output=760, cache_read=10950, cache_write=810)
    assert merged.cost_usd == pytest.approx(0.05)
    assert merged.skills_invoked == ("pdf-tools", "csv-kit", "report-writer")
    assert len(merged.tool_calls) == 8
    assert merged.commands == ("ls -la", "python -m pytest -q")
    assert merged.session_id == CLAUDE_SESSION
    assert merged.final_text == "Summary written."
    assert merged.malformed_lines == 3
    assert merged.permission_denials == ("Write",)
    assert merged.completed is True


def test_merge_turns_keeps_unknowns_unknown_and_last_turn_decides_completion() -> None:
    a = Trajectory("codex", turns=None, tokens=TokenUsage(1, 2, 3, 0), errors=("e1",), duration_s=1.5, exit_code=0)
    b = Trajectory("codex", turns=None, tokens=None, errors=("e2",), duration_s=2.0, completed=False, exit_code=1)
    merged = merge_turns([a, b])
    assert merged.turns is None
    assert merged.cost_usd is None
    assert merged.tokens == TokenUsage(1, 2, 3, 0)
    assert merged.errors == ("e1", "e2")
    assert merged.duration_s == pytest.approx(3.5)
    assert merged.completed is False
    assert merged.exit_code == 1
    assert merged.conversation_turns == 2


def test_merge_turns_one_known_cost_and_turn_count() -> None:
    a = Trajectory("claude-code", turns=3, cost_usd=None)
    b = Trajectory("claude-code", turns=None, cost_usd=0.25, session_id="s2")
    merged = merge_turns([a, b, Trajectory("claude-code", turns=1)])
    assert merged.cost_usd == 0.25
    assert merged.turns is None
    assert merged.session_id == "s2"
    assert merged.conversation_turns == 3


def test_merge_turns_needs_a_turn() -> None:
    with pytest.raises(ValueError, match="no turns"):
        merge_turns([])


# --- real captures (saved by a helper when available) ---------------------------------------------


@pytest.mark.skipif(not (STREAMS / "claude-code-basic.jsonl").is_file(), reason="no real Claude Code capture")
def test_real_claude_code_capture_parses() -> None:
    t = parse_claude_stream(lines_of("claude-code-basic.jsonl"))
    assert t.malformed_lines == 0
    assert t.session_id
    assert t.tool_calls
    assert t.tokens is not None
    assert t.tokens.input + t.tokens.output + t.tokens.cache_read + t.tokens.cache_write > 0
    assert t.completed is True
    assert t.turns is not None
    assert t.turns >= 1


@pytest.mark.skipif(not (STREAMS / "codex-basic.jsonl").is_file(), reason="no real Codex capture")
def test_real_codex_capture_parses() -> None:
    t = parse_codex_stream(lines_of("codex-basic.jsonl"))
    assert t.malformed_lines == 0
    assert t.session_id
    assert t.tool_calls
    assert t.commands
    assert t.turns is None
    assert t.cost_usd is None


@pytest.mark.parametrize(
    ("stderr", "line"),
    [
        (
            "An unexpected critical error occurred:NetworkAttemptError: Network attempt failed at dns\n"
            "    at r3A.execute (file:///q/qodercli.js:2:3371084)\n"
            "    at async k6A.initAuth (file:///q/qodercli.js:2:18784782)\n",
            "An unexpected critical error occurred:NetworkAttemptError: Network attempt failed at dns",
        ),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\nValueError: boom\n',
            "ValueError: boom",
        ),
        ("error: unknown option '--verbose'\n", "error: unknown option '--verbose'"),
        ("", ""),
    ],
)
def test_the_error_line_of_a_cli_stderr_skips_stack_frames(stderr: str, line: str) -> None:
    from scaffold.agents.cli import _error_line

    assert _error_line(stderr) == line
