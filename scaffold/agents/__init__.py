"""Agent adapters: start an agent in a workspace, turn what it did into a normalized Trajectory.

Built in here: ``oracle`` (runs the task's reference solution) and ``nop`` (does nothing), which prove
that every task can be solved and that doing nothing fails it. Real agent CLIs plug in behind the same
protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scaffold.errors import SelectionError
from scaffold.tasks import Task
from scaffold.trajectory import Trajectory
from scaffold.treatments import Treatment
from scaffold.workspaces import Workspace

__all__ = ["Agent", "AgentRequest", "create_agent", "known_agents"]


@dataclass(frozen=True, slots=True)
class AgentRequest:
    task: Task
    treatment: Treatment
    prompt: str
    timeout_s: float
    log_dir: Path
    model: str | None = None


class Agent(Protocol):
    name: str
    skills_dir: str
    """Where this agent looks for skills, relative to the workspace (``.claude/skills``)."""
    instructions_file: str
    """The project instructions file it reads (``CLAUDE.md``, ``AGENTS.md``)."""
    invokes_skills: bool
    """False for agents that cannot invoke skills: skill_invocation is then N/A, not failed."""

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory: ...


def _oracle() -> Agent:
    from scaffold.agents.oracle import OracleAgent

    return OracleAgent()


def _nop() -> Agent:
    from scaffold.agents.oracle import NopAgent

    return NopAgent()


_BUILTIN: dict[str, Callable[[], Agent]] = {"oracle": _oracle, "nop": _nop}


def known_agents() -> list[str]:
    return sorted(_BUILTIN)


def create_agent(name: str) -> Agent:
    try:
        factory = _BUILTIN[name]
    except KeyError:
        raise SelectionError(f"--agent={name}: unknown agent; known: {', '.join(known_agents())}") from None
    return factory()
