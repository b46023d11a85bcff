"""The normalized trajectory every agent adapter produces, whatever its native stream looks like."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["TokenUsage", "ToolCall", "Trajectory"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True, slots=True)
class Trajectory:
    """What an agent did in one trial.

    ``None`` means "not reported by this agent" (N/A in reports), never zero: an agent without
    telemetry has unknown tokens, not free ones.
    """

    agent: str
    turns: int | None = None
    conversation_turns: int = 1
    tool_calls: tuple[ToolCall, ...] = ()
    commands: tuple[str, ...] = ()
    skills_invoked: tuple[str, ...] = ()
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    session_id: str | None = None
    final_text: str = ""
    permission_denials: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failures: tuple[Mapping[str, Any], ...] = ()
    """Typed API failures from the stream (kind, status, source, message, final): see streams.failures."""
    malformed_lines: int = 0
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    completed: bool = True
    agent_version: str | None = None
    interaction_log: tuple[Mapping[str, Any], ...] = ()
    """auto_user conversations: one entry per turn (prompt kind, decision, reply and its source)."""

    def summary(self) -> dict[str, Any]:
        """The JSON-ready form stored in trial records."""
        data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        data["interaction_log"] = [dict(e) for e in self.interaction_log]
        data["failures"] = [dict(f) for f in self.failures]
        data["tool_calls"] = [{"name": c.name, "input": dict(c.input)} for c in self.tool_calls]
        data["tool_call_count"] = len(self.tool_calls)
        return data

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> Trajectory:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["tool_calls"] = tuple(ToolCall(c["name"], c.get("input", {})) for c in data.get("tool_calls", ()))
        tokens = data.get("tokens")
        fields["tokens"] = TokenUsage(**tokens) if tokens else None
        for key in ("commands", "skills_invoked", "permission_denials", "errors", "failures", "interaction_log"):
            fields[key] = tuple(data.get(key, ()))
        return cls(**fields)
