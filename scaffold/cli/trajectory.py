"""``comet trajectory``: saved raw agent streams parsed again into the normalized trajectory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from scaffold.errors import CometError

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet trajectory --agent NAME FILE...``."""
    trajectory = commands.add_parser(
        "trajectory", help="re-parse saved raw agent streams into the normalized trajectory"
    )
    trajectory.add_argument("--agent", required=True, help="the agent that wrote the streams (claude-code, codex, ...)")
    trajectory.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="raw stream files; several files are the turns of one conversation, in order",
    )
    trajectory.add_argument("--json", action="store_true", help="print the trajectory as JSON")
    trajectory.set_defaults(func=_trajectory)


def _trajectory(args: argparse.Namespace) -> int:
    from scaffold.agents.streams import parser_for
    from scaffold.agents.streams.events import merge_turns

    parse = parser_for(args.agent)
    turns = []
    for file in args.files:
        try:
            with file.open(encoding="utf-8", errors="replace") as handle:
                turns.append(parse(handle))
        except OSError as exc:
            raise CometError(f"{file}: cannot be read: {exc.strerror}") from None
    trajectory = merge_turns(turns)
    summary = trajectory.summary()
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    tokens = trajectory.tokens
    lines = [
        f"agent:            {trajectory.agent} {trajectory.agent_version or ''}".rstrip(),
        f"session:          {trajectory.session_id or 'N/A'}",
        f"conversation:     {trajectory.conversation_turns} turn(s); model calls {_na(trajectory.turns)}",
        f"tool calls:       {len(trajectory.tool_calls)}"
        + (f" ({', '.join(sorted({c.name for c in trajectory.tool_calls}))})" if trajectory.tool_calls else ""),
        f"commands:         {len(trajectory.commands)}",
        f"skills invoked:   {', '.join(trajectory.skills_invoked) or 'none'}",
        *(
            # Failed or unanswered skill calls: shown beside the invocations, never counted as one.
            [f"skills attempted: {', '.join(trajectory.skills_attempted)} (the call failed; not invoked)"]
            if trajectory.skills_attempted
            else []
        ),
        "tokens:           "
        + (
            f"input {tokens.input}, output {tokens.output}, cache read {tokens.cache_read}, "
            f"cache write {tokens.cache_write}"
            if tokens
            else "N/A"
        ),
        f"cost (USD):       {_na(trajectory.cost_usd)}",
        f"completed:        {trajectory.completed}",
        f"malformed lines:  {trajectory.malformed_lines}",
    ]
    lines += [f"command:          {c}" for c in trajectory.commands[:20]]
    lines += [f"permission denied: {d}" for d in trajectory.permission_denials]
    lines += [f"error:            {e}" for e in trajectory.errors]
    if trajectory.final_text:
        lines.append("final text:       " + trajectory.final_text.strip().replace("\n", "\n                  ")[:2000])
    print("\n".join(lines))
    return 0


def _na(value: object) -> str:
    return "N/A" if value is None else str(value)
