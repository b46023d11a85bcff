"""Claude Code ``--output-format stream-json`` (also Qoder's and CodeBuddy's, which share its shape).

Pitfalls handled (see AGENT_CLI_FACTS.md): one API response arrives as several ``assistant`` lines
with the same message id and repeated usage, so turns and tokens are counted per message id and the
final ``result`` usage wins; API failures end in ``result`` with ``is_error`` true even when
``subtype`` says success; sub-agent events carry ``parent_tool_use_id``.

A skill counts as invoked only when its call succeeded: the ``tool_result`` answering the ``Skill`` call
(or the ``Read`` of its ``SKILL.md``), matched by ``tool_use_id``, is not ``is_error``. Claude Code answers
a skill that is not installed with ``Unknown skill: NAME`` and ``is_error`` true; counting that call
would let a treatment without the skill pass the skill_invocation check. Failed calls, and calls the
stream never answers (a killed run), are kept as ``skills_attempted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scaffold.agents.streams.events import attempted_only, count, items, json_events, skill_from_path
from scaffold.agents.streams.failures import failure
from scaffold.trajectory import ApiFailure, TokenUsage, ToolCall, Trajectory

__all__ = ["parse_claude_stream", "skill_of"]

_READ_TOOLS = {"Read", "read_file", "View"}
_SHELL_TOOLS = {"Bash", "bash", "Shell", "run_shell_command"}


def tokens_of(usage: Any) -> TokenUsage | None:
    if not isinstance(usage, dict):
        return None

    return TokenUsage(
        count(usage.get("input_tokens")),
        count(usage.get("output_tokens")),
        count(usage.get("cache_read_input_tokens")),
        count(usage.get("cache_creation_input_tokens")),
    )


def skill_of(name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The skill a tool call uses (a ``Skill`` call, or a read of a skill's SKILL.md), else None."""
    if name == "Skill":
        skill = tool_input.get("skill") or tool_input.get("command") or tool_input.get("name")
        return str(skill).lstrip("/") if skill else None
    if name in _READ_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("path")
        return skill_from_path(str(path)) if path else None
    return None


@dataclass
class _State:
    agent: str
    custom: bool
    malformed: int = 0
    message_ids: list[str] = field(default_factory=list)
    usage_by_message: dict[str, TokenUsage] = field(default_factory=dict)
    tool_calls: list[ToolCall] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    attempted: list[str] = field(default_factory=list)
    pending: dict[str, str] = field(default_factory=dict)
    """Skill calls waiting for their tool result: tool_use id -> skill name."""
    errors: list[str] = field(default_factory=list)
    failures: list[ApiFailure] = field(default_factory=list)
    denials: list[str] = field(default_factory=list)
    session_id: str | None = None
    version: str | None = None
    final_text: str = ""
    last_text: str = ""
    result_tokens: TokenUsage | None = None
    cost: float | None = None
    completed: bool = False

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        self.session_id = event.get("session_id") or self.session_id
        if kind == "system" and event.get("subtype") == "init":
            self.version = event.get("claude_code_version") or event.get("version") or self.version
        elif kind == "skill_invocation" and self.custom and event.get("skill"):
            # A custom adapter's own evidence; it may mark a failed attempt the way tool results do.
            failed = event.get("is_error") is True or event.get("success") is False
            (self.attempted if failed else self.skills).append(str(event["skill"]))
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self._tool_results(event)
        elif kind == "result":
            self._result(event)
        elif kind == "system" and event.get("subtype") == "api_retry":
            # Announced before each retry; the run may still recover, so not final.
            message = f"retry {event.get('attempt')}/{event.get('max_retries')}: {event.get('error')}"
            self.failures.append(
                failure(
                    "system/api_retry", message, status=event.get("error_status"), code=event.get("error"), final=False
                )
            )
        elif kind == "error":
            self.errors.append(str(event.get("message") or event.get("error") or event)[:300])

    def _tool_results(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if not isinstance(message, dict) or not self.pending:
            return
        for block in items(message.get("content")):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            skill = self.pending.pop(str(block.get("tool_use_id")), None)
            if skill is not None:
                (self.attempted if block.get("is_error") is True else self.skills).append(skill)

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if not isinstance(message, dict):
            self.malformed += 1
            return
        if message.get("model") == "<synthetic>":
            # Written by the CLI itself after a failed API call: an error, not a model response.
            text = _text_of(message.get("content"))
            self.errors.append("API error: " + text)
            self.failures.append(failure("assistant/<synthetic>", text, code=event.get("error"), final=True))
            return
        msg_id = str(message.get("id") or f"line-{len(self.message_ids)}")
        if event.get("parent_tool_use_id") is None and msg_id not in self.message_ids:
            self.message_ids.append(msg_id)
        tokens = tokens_of(message.get("usage"))
        if tokens is not None:
            self.usage_by_message[msg_id] = tokens
        for block in items(message.get("content")):
            if isinstance(block, dict):
                self._block(block)

    def _block(self, block: dict[str, Any]) -> None:
        if block.get("type") == "text" and block.get("text"):
            self.last_text = str(block["text"])
        elif block.get("type") == "tool_use":
            name = str(block.get("name", ""))
            raw = block.get("input")
            tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
            self.tool_calls.append(ToolCall(name, tool_input))
            if name in _SHELL_TOOLS and isinstance(tool_input.get("command"), str):
                self.commands.append(tool_input["command"])
            skill = None if self.custom else skill_of(name, tool_input)
            if skill:
                # Decided by its tool result (_tool_results); a call without an id can never be answered.
                if block.get("id"):
                    self.pending[str(block["id"])] = skill
                else:
                    self.attempted.append(skill)

    def _result(self, event: dict[str, Any]) -> None:
        self.completed = True
        self.final_text = str(event.get("result") or self.last_text)
        self.result_tokens = tokens_of(event.get("usage"))
        if isinstance(event.get("total_cost_usd"), (int, float)):
            self.cost = float(event["total_cost_usd"])
        for denial in items(event.get("permission_denials")):
            if isinstance(denial, dict):
                self.denials.append(str(denial.get("tool_name", "?")))
        status = event.get("api_error_status")
        if isinstance(status, int) and self.failures and self.failures[-1].final:
            # The result states the status of the failure its synthetic message described.
            self.failures[-1] = failure(
                self.failures[-1].source, self.failures[-1].message, status=status, code=None, final=True
            )
        elif event.get("is_error") and isinstance(status, int):
            self.failures.append(failure("result", str(event.get("result") or ""), status=status, final=True))
        if event.get("is_error") or str(event.get("subtype", "")).startswith("error"):
            self.errors.append(f"result {event.get('subtype')}: {str(event.get('result') or '')[:300]}".strip())

    def trajectory(self) -> Trajectory:
        invoked = tuple(dict.fromkeys(self.skills))
        unanswered = self.pending.values()  # the run ended (or was killed) before their result
        tokens = self.result_tokens
        if tokens is None and self.usage_by_message:
            tokens = TokenUsage(
                sum(u.input for u in self.usage_by_message.values()),
                sum(u.output for u in self.usage_by_message.values()),
                sum(u.cache_read for u in self.usage_by_message.values()),
                sum(u.cache_write for u in self.usage_by_message.values()),
            )
        return Trajectory(
            agent=self.agent,
            turns=len(self.message_ids),
            tool_calls=tuple(self.tool_calls),
            commands=tuple(self.commands),
            skills_invoked=invoked,
            skills_attempted=attempted_only([*self.attempted, *unanswered], invoked),
            tokens=tokens,
            cost_usd=self.cost,
            session_id=self.session_id,
            final_text=self.final_text or self.last_text,
            permission_denials=tuple(self.denials),
            errors=tuple(self.errors),
            failures=tuple(self.failures),
            malformed_lines=self.malformed,
            completed=self.completed,
            agent_version=self.version,
        )


def parse_claude_stream(lines: Iterable[str], *, agent: str = "claude-code", custom: bool = False) -> Trajectory:
    """Normalize a stream-json transcript. With *custom*, ``{"type": "skill_invocation"}`` events are
    the only skill evidence (the original Comet eval's contract for custom adapters)."""
    state = _State(agent, custom)
    for event in json_events(lines):
        if event is None:
            state.malformed += 1
        else:
            state.feed(event)
    return state.trajectory()


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))[:300]
    return str(content or "")[:300]
