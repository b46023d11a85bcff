"""The normalized trajectory every agent adapter produces, whatever its native stream looks like.

These are the typed values a trial record stores as its ``trajectory`` (scaffold.records), so they are
``msgspec`` structs: a record file decodes straight into them, every field checked against its type,
without a pass through plain dicts. Frozen (change one with :func:`msgspec.structs.replace`) and not
tracked by the cyclic garbage collector: they hold JSON data only, never a reference cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

import msgspec

from scaffold.util.plain import plain

__all__ = ["ApiFailure", "TokenUsage", "ToolCall", "Trajectory"]


class ToolCall(msgspec.Struct, frozen=True, gc=False):
    name: str
    input: Mapping[str, Any] = {}


# Bounds checked when a record is decoded (never when a parser builds these): a record file with a count
# beyond 64 bits or an infinite cost is damaged, and is listed as unreadable (scaffold.records.files).
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_FINITE: Final = 1.7976931348623157e308
_Money = Annotated[float, msgspec.Meta(ge=0.0, le=_FINITE)]
_Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=_FINITE)]


class TokenUsage(msgspec.Struct, frozen=True, gc=False):
    input: _Count = 0
    output: _Count = 0
    cache_read: _Count = 0
    cache_write: _Count = 0


class ApiFailure(msgspec.Struct, frozen=True, gc=False):
    """A typed API failure read from an agent's stream (scaffold.agents.streams.failures).

    ``kind`` is one of ``FAILURE_KINDS``; ``status`` the HTTP status when the stream says it; ``final`` is
    true when the CLI gave up (the run ended on it), false for a retry it announced, which may have
    recovered.
    """

    kind: str
    status: int | None = None
    source: str = ""
    message: str = ""
    final: bool = False


class Trajectory(msgspec.Struct, frozen=True, gc=False):
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
    """Skills the agent used: a skill call that succeeded, or a successful read of the skill's SKILL.md."""
    skills_attempted: tuple[str, ...] = ()
    """Skills the agent tried and never got: every call failed (``Unknown skill``, a denied or failed read)
    or had no result. Never scored as invocations; empty in records written before it existed."""
    tokens: TokenUsage | None = None
    cost_usd: _Money | None = None
    session_id: str | None = None
    final_text: str = ""
    permission_denials: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failures: tuple[ApiFailure, ...] = ()
    """Typed API failures from the stream, in the order they were seen."""
    malformed_lines: int = 0
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: _Seconds = 0.0
    completed: bool = True
    agent_version: str | None = None
    interaction_log: tuple[Mapping[str, Any], ...] = ()
    """auto_user conversations: one entry per turn (prompt kind, decision, reply and its source)."""

    def summary(self) -> dict[str, Any]:
        """The JSON-ready form stored in trial records: every field, then ``tool_call_count``."""
        return self.counted(plain(self))

    def counted(self, data: dict[str, Any]) -> dict[str, Any]:
        """*data* (this trajectory as builtins) with the derived ``tool_call_count`` its JSON form ends with."""
        data["tool_call_count"] = len(self.tool_calls)
        return data
