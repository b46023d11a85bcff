"""Parsers from each agent's native output stream to the normalized Trajectory.

Pure functions over lines of text: they never raise on bad input. A line that is not a JSON object
is counted in ``malformed_lines`` (the raw stream itself is kept with the trial).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from scaffold.agents.streams.claude import parse_claude_stream
from scaffold.agents.streams.codex import parse_codex_stream
from scaffold.trajectory import Trajectory

__all__ = ["parser_for"]


def parser_for(agent: str) -> Callable[[Iterable[str]], Trajectory]:
    """The stream parser of a built-in agent; custom adapters use the generic JSONL parser."""
    if agent == "codex":
        return parse_codex_stream
    if agent in ("claude-code", "qoder", "codebuddy"):
        return lambda lines: parse_claude_stream(lines, agent=agent)
    return lambda lines: parse_claude_stream(lines, agent=agent, custom=True)
