"""The Agent contract: what the trial runner and the backends may ask of an agent adapter.

An adapter builds its command and environment (only declared credentials), runs in a workspace and
turns what it did into the normalized Trajectory. What it *is* (where it looks for skills, whether it
invokes them, whether its stream reports tokens) is one :class:`AgentTraits` value, declared once per
agent and read by whoever needs it: the runner, the rubric, noise classification.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scaffold.catalog.tasks import Task
from scaffold.catalog.treatments import Treatment
from scaffold.trajectory import Trajectory
from scaffold.workspaces.base import AgentNetwork, InstallSpec, Workspace

__all__ = ["Agent", "AgentRequest", "AgentTraits"]


@dataclass(frozen=True, slots=True)
class AgentTraits:
    """What an agent is, as far as the harness is concerned."""

    skills_dir: str = ".claude/skills"
    """Where it looks for skills, relative to the workspace; a treatment's skills are installed there."""
    instructions_file: str = "CLAUDE.md"
    """The project instructions file it reads (``CLAUDE.md``, ``AGENTS.md``)."""
    invokes_skills: bool = True
    """False for agents that cannot invoke skills (oracle, nop): skill_invocation is then N/A, not failed."""
    reports_tokens: bool = False
    """Its stream reports token usage: a finished run without any lost its telemetry (a flagged trial)."""


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """One trial's work for an agent."""

    task: Task
    treatment: Treatment
    prompt: str
    timeout_s: float
    log_dir: Path
    """The trial folder: the agent's raw streams go here (``agent.*``)."""
    model: str | None = None


class Agent(Protocol):
    """An agent adapter bound to its resolved configuration (credentials, model, endpoint)."""

    @property
    def name(self) -> str:
        """``claude-code``, ``codex``, ``oracle``, a custom adapter's id."""

    @property
    def traits(self) -> AgentTraits: ...

    @property
    def model(self) -> str | None:
        """The model it was configured with (``--model`` or its variables); None when it has none."""

    @property
    def install(self) -> InstallSpec | None:
        """How its program gets into a workspace; None when nothing is installed."""

    @property
    def network(self) -> AgentNetwork:
        """What it must reach while it works (a model endpoint), for the backend's network policy."""

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        """Do the task in *workspace*; a failure of the agent is in the Trajectory, not raised."""

    def redact(self, text: str) -> str:
        """*text* with this agent's credential values replaced, for what the harness writes from the
        workspace (an agent that wrote its key into a file must not put it in changes.json or the
        judge's prompt); *text* as it is for an agent without credentials."""
