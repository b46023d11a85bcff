"""An agent's raw stream as the events a person reads, in order: what the transcript page shows.

The normalized Trajectory (scaffold.trajectory) keeps what is scored: counts, names, totals. A reader of a
failed trial needs more: the agent's text, each tool call with its result, the exit code of each command,
each model message's tokens, what one conversation turn cost and how long it took. :func:`timeline`
reads one turn's stream into those events, for Claude Code's ``stream-json`` (also Qoder's and
CodeBuddy's, which share its shape) and Codex's ``exec --json``; any other agent's lines are kept raw.

Pure and bounded: never raises on bad input, keeps at most ``MAX_EVENTS`` events and ``MAX_TEXT``
characters of any one text (its full length is kept beside it, so the page can say how much is left in
the stream file). The skill rules are the stream parsers' (scaffold.agents.streams.claude, .codex): a
skill call counts when its result is not an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from scaffold.agents.streams.claude import skill_of
from scaffold.agents.streams.codex import unwrap_shell
from scaffold.agents.streams.events import count, items, json_events, skill_from_path

__all__ = [
    "MAX_EVENTS",
    "MAX_TEXT",
    "Event",
    "Text",
    "Timeline",
    "TokenCounts",
    "ToolUse",
    "stream_format",
    "timeline",
]

MAX_EVENTS: Final = 5_000
"""Events kept per turn; the rest are counted (``Timeline.dropped``)."""
MAX_TEXT: Final = 65_536
"""Characters kept of one text (a tool result, a message); ``Text.size`` is the full length."""

StreamFormat = Literal["claude", "codex", "raw"]
EventKind = Literal["text", "tool", "context", "denial", "api", "error", "message", "raw", "session"]

_CLAUDE_SHAPED: Final = frozenset({"claude-code", "qoder", "codebuddy"})
_SHELL_TOOLS: Final = frozenset({"Bash", "bash", "Shell", "run_shell_command"})
_EXIT_CODE: Final = re.compile(r"^\s*Exit code (-?\d+)")


def stream_format(agent: str | None) -> StreamFormat:
    """How a built-in agent's turn streams are read; custom adapters' (and unknown) lines stay raw."""
    if agent in _CLAUDE_SHAPED:
        return "claude"
    return "codex" if agent == "codex" else "raw"


@dataclass(frozen=True, slots=True)
class Text:
    """A text cut at ``MAX_TEXT`` characters; ``size`` is the length it had."""

    text: str
    size: int

    @classmethod
    def of(cls, value: Any) -> Text:
        text = value if isinstance(value, str) else _as_text(value)
        return cls(text[:MAX_TEXT], len(text))


@dataclass(frozen=True, slots=True)
class TokenCounts:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


@dataclass(slots=True)
class ToolUse:
    """A tool call and, once the stream answers it, its result. ``exit_code``: of a command, when known
    (Codex states it; Claude Code's failed ``Bash`` results start with ``Exit code N``, its successful
    ones are 0). ``skill``: the skill the call loads; ``skill_failed`` when its result is an error or never
    came."""

    name: str
    input: Text
    id: str = ""
    command: str | None = None
    result: Text | None = None
    is_error: bool | None = None
    exit_code: int | None = None
    skill: str | None = None
    skill_failed: bool = False
    status: str = ""


@dataclass(slots=True)
class Event:
    """One thing in a turn, in stream order. ``kind``: ``text`` (the agent's), ``tool`` (``call`` set),
    ``context`` (text the harness or CLI put in the conversation: a skill's body), ``denial``, ``api`` (an
    API failure or retry; ``final`` when the run ended on it), ``error``, ``message`` (a model message
    begins: its id, model and tokens), ``session`` (start: model, version), ``raw`` (a line as written).
    ``sub``: inside a sub-agent (Claude Code's Task tool)."""

    kind: EventKind
    text: Text | None = None
    call: ToolUse | None = None
    label: str = ""
    tokens: TokenCounts | None = None
    final: bool = False
    sub: bool = False


@dataclass(slots=True)
class Timeline:
    """One conversation turn's stream, read. ``cost_usd``, ``duration_s``, ``tokens``: from the turn's
    end (Claude Code's ``result`` event; Codex's ``turn.completed`` usage, summed), None when the stream
    does not say. ``dropped``: events beyond ``MAX_EVENTS``; ``malformed``: lines that were not JSON."""

    format: StreamFormat
    events: list[Event] = field(default_factory=list)
    dropped: int = 0
    malformed: int = 0
    lines: int = 0
    cost_usd: float | None = None
    duration_s: float | None = None
    api_duration_s: float | None = None
    tokens: TokenCounts | None = None
    model_messages: int = 0
    outcome: str = ""
    """How the turn ended, as the stream says it (``success``, ``error_max_turns``, ``turn.failed``, ...)."""
    is_error: bool = False
    final_text: str = ""
    session_id: str | None = None
    models: list[str] = field(default_factory=list)
    """The models the stream names (its start, each model message), in the order first seen; the record
    names only the model asked for, none when the agent's default answered."""

    def add(self, event: Event) -> None:
        if len(self.events) < MAX_EVENTS:
            self.events.append(event)
        else:
            self.dropped += 1

    def named(self, model: str) -> None:
        """Note that the stream names *model* (nothing when empty)."""
        if model and model not in self.models:
            self.models.append(model)

    @property
    def tool_calls(self) -> list[ToolUse]:
        return [e.call for e in self.events if e.call is not None]


def timeline(lines: Iterable[str], agent: str | None) -> Timeline:
    """The events of one turn's stream of *agent* (its name as records store it)."""
    fmt = stream_format(agent)
    if fmt == "raw":
        return _raw(lines)
    reader: _Claude | _Codex = _Claude() if fmt == "claude" else _Codex()
    for event in json_events(_counted(lines, reader.line)):
        if event is None:
            reader.out.malformed += 1
        else:
            reader.feed(event)
    reader.finish()
    return reader.out


def _counted(lines: Iterable[str], tally: list[int]) -> Iterable[str]:
    for line in lines:
        tally[0] += 1
        yield line


def _raw(lines: Iterable[str]) -> Timeline:
    out = Timeline("raw")
    for line in lines:
        out.lines += 1
        if line.strip():
            out.add(Event("raw", Text.of(line.rstrip("\n"))))
    return out


class _Claude:
    def __init__(self) -> None:
        self.out = Timeline("claude")
        self.line = [0]
        self.calls: dict[str, ToolUse] = {}
        self.messages: dict[str, Event] = {}

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        sub = event.get("parent_tool_use_id") is not None
        self.out.session_id = _str(event.get("session_id")) or self.out.session_id
        if kind == "system" and event.get("subtype") == "init":
            version = event.get("claude_code_version") or event.get("version")
            label = " ".join(p for p in (_str(event.get("model")), f"version {version}" if version else "") if p)
            self.out.named(_str(event.get("model")))
            self.out.add(Event("session", label=label))
        elif kind == "system" and event.get("subtype") == "api_retry":
            status = event.get("error_status")
            text = f"retry {event.get('attempt')}/{event.get('max_retries', '?')}: {event.get('error')}"
            self.out.add(Event("api", Text.of(text + (f" (HTTP {status})" if status else "")), sub=sub))
        elif kind == "assistant" and isinstance(event.get("message"), Mapping):
            self._assistant(event["message"], sub)
        elif kind == "user" and isinstance(event.get("message"), Mapping):
            self._user(event["message"], sub)
        elif kind == "result":
            self._result(event)
        elif kind == "error":
            self.out.add(Event("error", Text.of(event.get("message") or event.get("error") or event)))

    def _assistant(self, message: Mapping[str, Any], sub: bool) -> None:
        if message.get("model") == "<synthetic>":
            # Written by the CLI itself after a failed API call: an error, not a model response.
            self.out.add(Event("api", Text.of(_content_text(message.get("content"))), final=True, sub=sub))
            return
        self.out.named(_str(message.get("model")))
        msg_id = _str(message.get("id"))
        tokens = _claude_tokens(message.get("usage"))
        known = self.messages.get(msg_id) if msg_id else None
        if known is None:
            if not sub:
                self.out.model_messages += 1
            known = Event("message", label=_str(message.get("model")), tokens=tokens, sub=sub)
            if msg_id:
                self.messages[msg_id] = known
            self.out.add(known)
        elif tokens is not None:
            known.tokens = tokens  # the same message's usage, repeated on each of its lines: the last wins
        for block in items(message.get("content")):
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and block.get("text"):
                self.out.add(Event("text", Text.of(block["text"]), sub=sub))
            elif block.get("type") == "tool_use":
                self._tool_use(block, sub)

    def _tool_use(self, block: Mapping[str, Any], sub: bool) -> None:
        name = _str(block.get("name")) or "?"
        raw = block.get("input")
        tool_input = raw if isinstance(raw, Mapping) else {}
        call = ToolUse(name, Text.of(raw if raw is not None else {}), id=_str(block.get("id")))
        if name in _SHELL_TOOLS and isinstance(tool_input.get("command"), str):
            call.command = tool_input["command"]
        call.skill = skill_of(name, tool_input)
        if call.id:
            self.calls[call.id] = call
        self.out.add(Event("tool", call=call, sub=sub))

    def _user(self, message: Mapping[str, Any], sub: bool) -> None:
        content = message.get("content")
        if isinstance(content, str):
            self.out.add(Event("context", Text.of(content), sub=sub))
            return
        for block in items(content):
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_result":
                call = self.calls.get(_str(block.get("tool_use_id")))
                if call is None:
                    self.out.add(Event("context", Text.of(_content_text(block.get("content"))), sub=sub))
                    continue
                call.result = Text.of(_content_text(block.get("content")))
                call.is_error = block.get("is_error") is True
                if call.command is not None:
                    found = _EXIT_CODE.match(call.result.text) if call.is_error else None
                    call.exit_code = int(found[1]) if found else (None if call.is_error else 0)
            elif block.get("type") == "text" and block.get("text"):
                self.out.add(Event("context", Text.of(block["text"]), sub=sub))

    def _result(self, event: Mapping[str, Any]) -> None:
        out = self.out
        out.outcome = _str(event.get("subtype")) or "result"
        out.is_error = event.get("is_error") is True or out.outcome.startswith("error")
        out.final_text = _str(event.get("result"))
        out.tokens = _claude_tokens(event.get("usage")) or out.tokens
        out.cost_usd = _number(event.get("total_cost_usd"))
        duration, api = _number(event.get("duration_ms")), _number(event.get("duration_api_ms"))
        out.duration_s = None if duration is None else duration / 1000
        out.api_duration_s = None if api is None else api / 1000
        for denial in items(event.get("permission_denials")):
            if isinstance(denial, Mapping):
                tool = _str(denial.get("tool_name")) or "?"
                out.add(Event("denial", Text.of(denial.get("tool_input") or {}), label=tool))
        status = event.get("api_error_status")
        http = f"HTTP {status}" if isinstance(status, int) and not isinstance(status, bool) else ""
        stated = next((e for e in reversed(out.events) if e.kind == "api" and e.final), None)
        if stated is not None:
            stated.label = http or stated.label  # the result states the status of the failure already shown
        elif out.is_error:
            message = f"{out.outcome}: {out.final_text}"
            out.add(Event("api" if http else "error", Text.of(message), label=http, final=True))

    def finish(self) -> None:
        for call in self.calls.values():
            if call.skill is not None:
                call.skill_failed = call.result is None or call.is_error is True
        self.out.lines = self.line[0]


class _Codex:
    def __init__(self) -> None:
        self.out = Timeline("codex")
        self.line = [0]
        self.calls: dict[str, ToolUse] = {}
        self.done: set[str] = set()

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        item = event.get("item")
        if kind == "thread.started":
            self.out.session_id = _str(event.get("thread_id")) or self.out.session_id
            self.out.add(Event("session", label="thread " + _str(event.get("thread_id"))))
        elif kind in ("item.started", "item.updated", "item.completed") and isinstance(item, Mapping):
            self._item(item, completed=kind == "item.completed")
        elif kind == "turn.completed":
            self.out.outcome = "turn.completed"
            raw = event.get("usage")
            usage: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            cached = count(usage.get("cached_input_tokens"))
            turn = TokenCounts(
                max(0, count(usage.get("input_tokens")) - cached), count(usage.get("output_tokens")), cached
            )
            self.out.model_messages += 1
            self.out.add(Event("message", label="turn.completed", tokens=turn))
            old = self.out.tokens or TokenCounts()
            self.out.tokens = TokenCounts(
                old.input + turn.input, old.output + turn.output, old.cache_read + turn.cache_read, 0
            )
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, Mapping) else error
            self.out.outcome, self.out.is_error = "turn.failed", True
            self.out.add(Event("api", Text.of(_str(message) or "turn failed"), final=True))
        elif kind == "error":
            message = _str(event.get("message")) or _as_text(event)
            # "Reconnecting... 1/5" is a retry the run may recover from; anything else is an error line.
            self.out.add(Event("api" if message.startswith("Reconnecting") else "error", Text.of(message)))

    def _item(self, item: Mapping[str, Any], *, completed: bool) -> None:
        item_id = _str(item.get("id"))
        if item_id in self.done:
            return  # Codex may repeat a completed item
        item_type = item.get("type") or item.get("item_type")
        if completed and item_id:
            self.done.add(item_id)
        if item_type == "agent_message" and completed:
            self.out.final_text = _str(item.get("text"))
            self.out.add(Event("text", Text.of(self.out.final_text)))
        elif item_type == "reasoning" and completed:
            self.out.add(Event("context", Text.of(_str(item.get("text"))), label="reasoning"))
        elif item_type == "error" and completed:
            self.out.add(Event("error", Text.of(_str(item.get("message")) or "error item")))
        elif item_type in ("command_execution", "file_change", "mcp_tool_call", "web_search", "todo_list"):
            call = self.calls.get(item_id) if item_id else None
            if call is None:
                call = self._new_call(str(item_type), item)
                if item_id:
                    self.calls[item_id] = call
                self.out.add(Event("tool", call=call))
            if completed:
                self._completed(call, item)

    def _new_call(self, item_type: str, item: Mapping[str, Any]) -> ToolUse:
        if item_type == "command_execution":
            command = unwrap_shell(item.get("command", ""))
            skills = [s for word in command.split() if (s := skill_from_path(word.strip("'\"")))]
            return ToolUse(
                "shell", Text.of(command), _str(item.get("id")), command=command, skill=next(iter(skills), None)
            )
        if item_type == "mcp_tool_call":
            name = f"{_str(item.get('server')) or 'mcp'}.{_str(item.get('tool')) or '?'}"
            return ToolUse(name, Text.of(item.get("arguments") or {}), _str(item.get("id")))
        if item_type == "web_search":
            return ToolUse("web_search", Text.of(_str(item.get("query"))), _str(item.get("id")))
        return ToolUse(item_type, Text.of(item.get("changes") or item.get("items") or {}), _str(item.get("id")))

    def _completed(self, call: ToolUse, item: Mapping[str, Any]) -> None:
        call.status = _str(item.get("status"))
        if call.command is not None:
            exit_code = item.get("exit_code")
            call.exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
            call.result = Text.of(_str(item.get("aggregated_output")))
            call.is_error = call.exit_code != 0
        elif item.get("error") or item.get("result") is not None:
            call.is_error = bool(item.get("error")) or call.status == "failed"
            call.result = Text.of(item.get("error") or item.get("result"))
        else:
            call.is_error = call.status == "failed"

    def finish(self) -> None:
        for call in self.calls.values():
            if call.skill is not None:
                call.skill_failed = call.is_error is not False
        self.out.lines = self.line[0]


def _claude_tokens(usage: Any) -> TokenCounts | None:
    if not isinstance(usage, Mapping):
        return None
    return TokenCounts(
        count(usage.get("input_tokens")),
        count(usage.get("output_tokens")),
        count(usage.get("cache_read_input_tokens")),
        count(usage.get("cache_creation_input_tokens")),
    )


def _content_text(content: Any) -> str:
    """A message or tool result's content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts = []
    for block in items(content):
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, Mapping) and block.get("type") == "image":
            parts.append("[image]")
        else:
            parts.append(_as_text(block))
    return "\n".join(parts)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:MAX_TEXT]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
