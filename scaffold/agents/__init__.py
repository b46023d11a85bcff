"""Agent adapters: start an agent in a workspace, turn what it did into a normalized Trajectory.

Built in: ``oracle`` (runs the task's reference solution) and ``nop`` (does nothing), which prove that
every task can be solved and that doing nothing fails it; the CLIs ``claude-code``, ``codex``, ``qoder``
and ``codebuddy``; and custom adapters registered in ``~/.comet/eval/adapters/<id>/adapter.yaml``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scaffold.agents.install import InstallSpec
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
    needs_network: bool
    """True when the agent calls a model endpoint (a container then gets a network)."""
    install: InstallSpec | None
    """How the agent's program gets into a workspace; None when nothing is installed."""

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory: ...


def known_agents(env: Mapping[str, str] | None = None) -> list[str]:
    """Built-in agents plus the valid custom adapters registered for this user."""
    from scaffold.agents.builtin import BUILTIN_CLI_AGENTS
    from scaffold.agents.custom import load_adapters

    builtin = ("nop", "oracle", *BUILTIN_CLI_AGENTS)
    custom = load_adapters(os.environ if env is None else env, reserved=builtin).specs
    return sorted([*builtin, *custom])


def create_agent(
    name: str, env: Mapping[str, str] | None = None, *, model: str | None = None, base_url: str | None = None
) -> Agent:
    """The agent called *name*, with its credentials resolved from *env* (default: the process
    environment over ``~/.comet/eval/.env``). Missing credentials raise AgentError here, before any
    workspace or container exists."""
    from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, builtin_spec
    from scaffold.agents.cli import CliAgent
    from scaffold.agents.credentials import load_environment
    from scaffold.agents.custom import load_adapters
    from scaffold.agents.oracle import NopAgent, OracleAgent

    if name == "oracle":
        return OracleAgent()
    if name == "nop":
        return NopAgent()
    env = load_environment() if env is None else env
    if name in BUILTIN_CLI_AGENTS:
        return CliAgent(builtin_spec(name, env), env, model=model, base_url=base_url)
    catalog = load_adapters(env, reserved=("nop", "oracle", *BUILTIN_CLI_AGENTS))
    if name in catalog.specs:
        return CliAgent(catalog.specs[name], env, model=model, base_url=base_url)
    problems = [str(p) for p in catalog.problems if name in (p.file.parent.name, p.file.name)]
    detail = ("; its adapter is invalid: " + "; ".join(problems)) if problems else ""
    known = ", ".join(known_agents(env))
    raise SelectionError(f"--agent={name}: unknown agent; known: {known}{detail}")
