"""Conversations with an agent: one turn, or an ``auto_user`` dialogue that resumes the session.

In ``auto_user`` mode each turn's final message is read: a decision point (a configured pattern, or a
closing question) is answered from the task's reply queue, then its fixed reply, then a simulator
agent, else the continue prompt; a turn that ended without completing is nudged with the continue
prompt; a turn that completed ends the conversation; ``max_turns`` bounds it. Every turn, decision and
reply is logged in the trajectory.

The loop knows the agent only through :class:`TurnTaker` (one turn in a workspace, resuming a session),
and the simulator only as a function that makes one, so it depends on no adapter.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from scaffold.agents.base import AgentRequest
from scaffold.agents.credentials import load_environment
from scaffold.agents.streams.events import merge_turns, skills_by_name
from scaffold.catalog.tasks import Interaction
from scaffold.trajectory import Trajectory
from scaffold.workspaces.base import Workspace

__all__ = ["Simulator", "TurnTaker", "converse", "decision_point"]


class TurnTaker(Protocol):
    """An agent that runs one conversation turn at a time (scaffold.agents.cli.CliAgent)."""

    @property
    def name(self) -> str: ...

    def turn(
        self,
        workspace: Workspace,
        request: AgentRequest,
        prompt: str,
        *,
        session_id: str | None,
        index: int,
        home: str,
        timeout_s: float,
    ) -> Trajectory:
        """Run one turn (resuming *session_id* when given) and parse what it printed."""


Simulator = Callable[[], "TurnTaker | None"]
"""Makes the agent that plays the user (``BENCH_SIMULATOR_*``), or None when that agent takes no turns."""

SIMULATOR_FRAME = (
    "You are simulating the user of a coding assistant. Answer its question below in one short message, "
    "as the user would, choosing what lets the work go on. Do not use tools.\n\n"
)


def decision_point(text: str, patterns: Sequence[str]) -> str | None:
    """The pattern (or ``question``) that makes *text* a decision point, or None."""
    for pattern in patterns:
        if re.search(pattern, text, flags=re.IGNORECASE | re.MULTILINE):
            return pattern
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[-1].rstrip("*_`) ").endswith(("?", "？")):
        return "question"
    return None


class _Replies:
    """Where answers to decision points come from, in the original Comet eval's order."""

    def __init__(self, interaction: Interaction, simulator_prompt: str | None) -> None:
        self.queue = deque(interaction.decision_replies)
        self.fixed = interaction.decision_reply
        self.simulator_prompt = simulator_prompt
        self.continue_prompt = interaction.continue_prompt

    def next(self) -> tuple[str, str]:
        if self.queue:
            return self.queue.popleft(), "reply_queue"
        if self.fixed:
            return self.fixed, "decision_reply"
        if self.simulator_prompt:
            return "", "simulator"
        return self.continue_prompt, "continue_prompt"


def simulator_prompt(interaction: Interaction, env: Mapping[str, str]) -> str | None:
    """``BENCH_SIMULATOR_PROMPT_FILE`` overrides the task's ``simulator_prompt``."""
    path = env.get("BENCH_SIMULATOR_PROMPT_FILE")
    if path:
        return Path(path).expanduser().read_text(encoding="utf-8")
    return interaction.simulator_prompt


def converse(
    agent: TurnTaker,
    workspace: Workspace,
    request: AgentRequest,
    home: str,
    simulator: Simulator,
    *,
    simulator_home: str,
) -> Trajectory:
    """Run the task's conversation; *home* is the agent's HOME, *simulator_home* the simulator's (its own
    sessions and settings, in a folder the caller makes and removes)."""
    interaction = request.task.spec.interaction
    auto = interaction.mode == "auto_user"
    max_turns = interaction.max_turns if auto else 1
    deadline = time.monotonic() + request.timeout_s
    # $BENCH_SIMULATOR_PROMPT_FILE from the process environment, then ~/.comet/eval/.env, like every default.
    replies = _Replies(interaction, simulator_prompt(interaction, load_environment()) if auto else None)
    prompt, kind = request.prompt, "instruction"
    session: str | None = None
    turns: list[Trajectory] = []
    log: list[dict[str, Any]] = []
    finished = False
    for index in range(1, max_turns + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        turn = agent.turn(workspace, request, prompt, session_id=session, index=index, home=home, timeout_s=remaining)
        turns.append(turn)
        entry: dict[str, Any] = {
            "turn": index,
            "prompt_kind": kind,
            "prompt": prompt[:2000],
            "session_id": turn.session_id,
            "final_text": turn.final_text[:2000],
        }
        log.append(entry)
        if not auto or turn.timed_out:
            finished = turn.completed
            break
        fresh = bool(interaction.fresh_resume_marker and interaction.fresh_resume_marker in turn.final_text)
        session = None if fresh else (turn.session_id or session)
        entry["fresh_session_next"] = fresh
        pattern = decision_point(turn.final_text, interaction.decision_patterns)
        if pattern is not None:
            reply, source = replies.next()
            if source == "simulator":
                reply = (
                    _simulate(
                        simulator,
                        workspace,
                        request,
                        replies.simulator_prompt or "",
                        turn.final_text,
                        index,
                        simulator_home,
                        deadline,
                    )
                    or interaction.continue_prompt
                )
            entry.update(decision=True, pattern=pattern, reply=reply[:2000], reply_source=source)
            prompt, kind = reply, "reply"
        elif not turn.completed or turn.exit_code not in (0, None):
            entry.update(decision=False, nudged=True)
            prompt, kind = interaction.continue_prompt, "nudge"
        else:
            entry.update(decision=False, completed=True)
            finished = True
            break
    if not turns:
        return Trajectory(agent=agent.name, errors=("no time left for a first turn",), completed=False, timed_out=True)
    # A read of the SKILL.md of a skill installed under a folder its frontmatter does not name is a use
    # of that skill: the trajectory names it as the treatment (and so every rubric and report) does.
    merged = skills_by_name(merge_turns(turns), request.treatment.names_by_folder)
    return msgspec.structs.replace(merged, interaction_log=tuple(log), completed=finished)


def _simulate(
    simulator: Simulator,
    workspace: Workspace,
    request: AgentRequest,
    instructions: str,
    message: str,
    index: int,
    home: str,
    deadline: float,
) -> str:
    """Ask the simulator agent (its own process and session) for the user's reply."""
    user = simulator()
    if user is None:
        return ""
    prompt = SIMULATOR_FRAME + instructions.strip() + "\n\nThe assistant said:\n" + message
    result = user.turn(
        workspace,
        dataclasses.replace(request, log_dir=request.log_dir / "simulator"),
        prompt,
        session_id=None,
        index=index,
        home=home,
        timeout_s=max(1.0, min(300.0, deadline - time.monotonic())),
    )
    return str(result.final_text).strip()
