"""Codex ``exec --json`` JSONL: thread/turn/item events.

Codex reports no cost and no API-call count (turns stay None: unknown, not zero); its
``input_tokens`` include cached tokens, so cached ones are moved to ``cache_read``; commands arrive
wrapped as ``/bin/bash -lc '...'`` and are unwrapped for the record.

A skill counts as invoked when a command that names its ``skills/<name>/SKILL.md`` completed with exit
code 0 (the file was read); a command that failed, or that started and never completed, leaves the
skill in ``skills_attempted`` (the same rule as Claude Code's failed ``Skill`` calls).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scaffold.agents.streams.events import add_tokens, attempted_only, count, json_events, skill_from_path
from scaffold.agents.streams.failures import failure
from scaffold.trajectory import ApiFailure, TokenUsage, ToolCall, Trajectory

__all__ = ["parse_codex_stream", "unwrap_shell"]


def unwrap_shell(command: Any) -> str:
    """``["bash", "-lc", "x"]`` or ``/bin/bash -lc 'x'`` -> ``x``; anything else as text."""
    if isinstance(command, list):
        parts = [str(p) for p in command]
    else:
        try:
            parts = shlex.split(str(command))
        except ValueError:
            return str(command)
    if len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return " ".join(parts) if isinstance(command, list) else str(command)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


@dataclass
class _State:
    malformed: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    attempted: list[str] = field(default_factory=list)
    running: dict[str, list[str]] = field(default_factory=dict)
    """Commands started and not completed yet: item id -> the skills their command names."""
    errors: list[str] = field(default_factory=list)
    failures: list[ApiFailure] = field(default_factory=list)
    tokens: TokenUsage | None = None
    session_id: str | None = None
    final_text: str = ""
    completed: bool = False
    failed: bool = False
    seen_items: set[str] = field(default_factory=set)

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.session_id = str(event.get("thread_id") or "") or self.session_id
        elif kind == "item.started" and isinstance(event.get("item"), dict):
            item = event["item"]
            if (item.get("type") or item.get("item_type")) == "command_execution" and item.get("id"):
                self.running[str(item["id"])] = _skills_of(unwrap_shell(item.get("command", "")))
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            self._item(event["item"])
        elif kind == "turn.completed":
            self.completed = True
            usage = _dict(event.get("usage"))
            cached = count(usage.get("cached_input_tokens"))
            turn = TokenUsage(
                max(0, count(usage.get("input_tokens")) - cached), count(usage.get("output_tokens")), cached, 0
            )
            self.tokens = add_tokens(self.tokens, turn)
        elif kind == "turn.failed":
            self.failed = True
            error = _dict(event.get("error"))
            message = str(error.get("message") or event.get("error") or "")
            self.errors.append("turn failed: " + message)
            self.failures.append(failure("turn.failed", message, final=True))
        elif kind == "error":
            # Also emitted during retries that later recover: evidence, not by itself a failure.
            message = str(event.get("message") or event)[:300]
            self.errors.append(message)
            if message.startswith("Reconnecting"):
                self.failures.append(failure("error", message, final=False))

    def _item(self, item: dict[str, Any]) -> None:
        item_id = str(item.get("id", ""))
        if item_id and item_id in self.seen_items:
            return
        self.seen_items.add(item_id)
        self.running.pop(item_id, None)
        item_type = item.get("type") or item.get("item_type")
        if item_type == "agent_message":
            self.final_text = str(item.get("text") or "")
        elif item_type == "command_execution":
            command = unwrap_shell(item.get("command", ""))
            self.commands.append(command)
            self.tool_calls.append(ToolCall("shell", {"command": command, "exit_code": item.get("exit_code")}))
            exit_code = item.get("exit_code")
            succeeded = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code == 0
            (self.skills if succeeded else self.attempted).extend(_skills_of(command))
        elif item_type == "file_change":
            self.tool_calls.append(ToolCall("file_change", {"changes": item.get("changes", [])}))
        elif item_type == "mcp_tool_call":
            self.tool_calls.append(ToolCall(str(item.get("tool") or "mcp"), {"server": item.get("server")}))
        elif item_type == "web_search":
            self.tool_calls.append(ToolCall("web_search", {"query": item.get("query")}))
        elif item_type == "error":
            self.errors.append(str(item.get("message") or "error item"))


def _skills_of(command: str) -> list[str]:
    return [skill for word in _words(command) if (skill := skill_from_path(word))]


def parse_codex_stream(lines: Iterable[str]) -> Trajectory:
    state = _State()
    for event in json_events(lines):
        if event is None:
            state.malformed += 1
        else:
            state.feed(event)
    invoked = tuple(dict.fromkeys(state.skills))
    unfinished = [skill for skills in state.running.values() for skill in skills]
    return Trajectory(
        agent="codex",
        turns=None,
        tool_calls=tuple(state.tool_calls),
        commands=tuple(state.commands),
        skills_invoked=invoked,
        skills_attempted=attempted_only([*state.attempted, *unfinished], invoked),
        tokens=state.tokens,
        cost_usd=None,
        session_id=state.session_id,
        final_text=state.final_text,
        errors=tuple(state.errors),
        failures=tuple(state.failures),
        malformed_lines=state.malformed,
        completed=state.completed and not state.failed,
    )
