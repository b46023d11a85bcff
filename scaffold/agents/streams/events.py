"""What every stream parser shares: JSON lines read safely, counts and lists from event fields, skill
paths, and the merge of one conversation's turns into one trajectory."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from msgspec.structs import replace

from scaffold.trajectory import TokenUsage, Trajectory

__all__ = [
    "add_tokens",
    "attempted_only",
    "count",
    "items",
    "json_events",
    "merge_turns",
    "skill_from_path",
    "skills_by_name",
]


def json_events(lines: Iterable[str]) -> Iterator[dict[str, Any] | None]:
    """Each non-blank line as a JSON object, or None when it is not one."""
    for line in lines:
        text = line.strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # also over-long integers and absurd nesting
            yield None
            continue
        yield value if isinstance(value, dict) else None


def count(value: Any) -> int:
    """A token count from an event field: 0 unless it is a finite number (never raises)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return int(value)


def items(value: Any) -> list[Any]:
    """An event field that should be a list, as one (anything else: empty)."""
    return value if isinstance(value, list) else []


def skill_from_path(path: str) -> str | None:
    """``.../skills/<name>/SKILL.md`` -> ``<name>``: a skill file load that succeeded counts as an invocation."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 3 and parts[-1] == "SKILL.md" and parts[-3] == "skills":
        return parts[-2]
    return None


def skills_by_name(trajectory: Trajectory, folders: Mapping[str, str]) -> Trajectory:
    """*trajectory* with each skill found by its folder named as the treatment names it. A read of
    ``.../skills/<folder>/SKILL.md`` gives the folder (:func:`skill_from_path`), a ``Skill`` call the
    SKILL.md's ``name``; a SkillsBench skill installed under a folder its frontmatter does not name is one
    skill either way. *folders*: folder -> skill name, for the installed skills whose folder is not their
    name (and is no other skill's name: then which one was meant cannot be told, and it is left as it is)."""
    if not folders:
        return trajectory

    def named(names: Iterable[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(folders.get(n, n) for n in names))

    invoked = named(trajectory.skills_invoked)
    return replace(
        trajectory,
        skills_invoked=invoked,
        skills_attempted=attempted_only(named(trajectory.skills_attempted), invoked),
    )


def add_tokens(a: TokenUsage | None, b: TokenUsage | None) -> TokenUsage | None:
    if a is None or b is None:
        return a or b
    return TokenUsage(
        a.input + b.input, a.output + b.output, a.cache_read + b.cache_read, a.cache_write + b.cache_write
    )


def merge_turns(turns: Sequence[Trajectory]) -> Trajectory:
    """One trajectory from the conversation turns of one session, in order."""
    if not turns:
        raise ValueError("no turns to merge")
    first, *rest = turns
    merged = replace(first, conversation_turns=len(turns))
    for t in rest:
        merged = replace(
            merged,
            turns=None if merged.turns is None or t.turns is None else merged.turns + t.turns,
            tool_calls=merged.tool_calls + t.tool_calls,
            commands=merged.commands + t.commands,
            skills_invoked=merged.skills_invoked + tuple(s for s in t.skills_invoked if s not in merged.skills_invoked),
            skills_attempted=merged.skills_attempted
            + tuple(s for s in t.skills_attempted if s not in merged.skills_attempted),
            tokens=add_tokens(merged.tokens, t.tokens),
            cost_usd=None
            if merged.cost_usd is None and t.cost_usd is None
            else (merged.cost_usd or 0.0) + (t.cost_usd or 0.0),
            session_id=t.session_id or merged.session_id,
            final_text=t.final_text,
            permission_denials=merged.permission_denials + t.permission_denials,
            errors=merged.errors + t.errors,
            failures=merged.failures + t.failures,
            malformed_lines=merged.malformed_lines + t.malformed_lines,
            exit_code=t.exit_code,
            timed_out=merged.timed_out or t.timed_out,
            duration_s=merged.duration_s + t.duration_s,
            completed=t.completed,
            agent_version=t.agent_version or merged.agent_version,
        )
    # A skill tried in one turn and used in a later one was invoked: attempted lists only the never-used.
    return replace(merged, skills_attempted=attempted_only(merged.skills_attempted, merged.skills_invoked))


def attempted_only(attempted: Iterable[str], invoked: Sequence[str]) -> tuple[str, ...]:
    """The skills of *attempted* never in *invoked*, once each, in order."""
    return tuple(dict.fromkeys(s for s in attempted if s not in invoked))
