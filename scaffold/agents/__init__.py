"""Agent adapters: start an agent in a workspace, turn what it did into a normalized Trajectory.

Built in: ``oracle`` (runs the task's reference solution) and ``nop`` (does nothing), which prove that
every task can be solved and that doing nothing fails it; the CLIs ``claude-code``, ``codex``, ``qoder``
and ``codebuddy``; and custom adapters registered in ``~/.comet/eval/adapters/<id>/adapter.yaml``.

base.py          the Agent contract, AgentTraits, AgentRequest
cli.py           command-line agents: one turn, credentials, the raw stream scrubbed and parsed
conversation.py  one turn, or an auto_user dialogue that resumes the session
builtin.py       the built-in CLIs (and every built-in agent's traits);  custom.py: adapter.yaml
credentials.py   which variables reach the agent, and their values scrubbed from its output
oracle.py        the oracle and nop agents;  streams/: the stream parsers
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from scaffold.agents.base import Agent
from scaffold.agents.builtin import BUILTIN_CLI_AGENTS, builtin_spec
from scaffold.agents.cli import CliAgent
from scaffold.agents.conversation import TurnTaker
from scaffold.agents.credentials import load_environment
from scaffold.agents.custom import load_adapters
from scaffold.agents.oracle import NopAgent, OracleAgent
from scaffold.errors import SelectionError

__all__ = ["create_agent", "known_agents"]

_BUILTIN = ("nop", "oracle", *BUILTIN_CLI_AGENTS)


def known_agents(env: Mapping[str, str] | None = None) -> list[str]:
    """Built-in agents plus the valid custom adapters registered for this user."""
    custom = load_adapters(os.environ if env is None else env, reserved=_BUILTIN).specs
    return sorted([*_BUILTIN, *custom])


def create_agent(
    name: str, env: Mapping[str, str] | None = None, *, model: str | None = None, base_url: str | None = None
) -> Agent:
    """The agent called *name*, with its credentials resolved from *env* (default: the process
    environment over ``~/.comet/eval/.env``). Missing credentials raise AgentError here, before any
    workspace or container exists."""
    env = load_environment() if env is None else env
    if name in _BUILTIN:
        _refuse_shadowing_adapters(name, env)
    if name == "oracle":
        return OracleAgent()
    if name == "nop":
        return NopAgent()

    def simulator() -> TurnTaker | None:
        return _simulator(name)

    if name in BUILTIN_CLI_AGENTS:
        return CliAgent(builtin_spec(name, env), env, model=model, base_url=base_url, simulator=simulator)
    catalog = load_adapters(env, reserved=_BUILTIN)
    if name in catalog.specs:
        return CliAgent(catalog.specs[name], env, model=model, base_url=base_url, simulator=simulator)
    problems = [str(p) for p in catalog.problems if name in (p.file.parent.name, p.file.name)]
    detail = ("; its adapter is invalid: " + "; ".join(problems)) if problems else ""
    known = ", ".join(known_agents(env))
    raise SelectionError(f"--agent={name}: unknown agent; known: {known}{detail}")


def _refuse_shadowing_adapters(name: str, env: Mapping[str, str]) -> None:
    """A registered adapter that claims built-in *name* is a usage error naming its file and field.

    Running the built-in beside it would be silent about the user's adapter: results would be reported
    for an agent they did not mean to run. So the run stops until the adapter gets its own id.
    """
    catalog = load_adapters(env, reserved=_BUILTIN)
    claims = [
        str(p)
        for p in catalog.problems
        if (p.key == "metadata.id" and p.value == name) or name in (p.file.parent.name, p.file.name)
    ]
    if claims:
        raise SelectionError(f"--agent={name}: a custom adapter claims this built-in agent's id: " + "; ".join(claims))


def _simulator(agent: str) -> TurnTaker | None:
    """The agent that plays the user of *agent*'s auto_user conversation: ``BENCH_SIMULATOR_AGENT`` (default:
    the same agent), with ``BENCH_SIMULATOR_API_KEY``/``_BASE_URL``/``_MODEL`` in place of the ``BENCH_*``
    ones. Made when a conversation first needs it, from the environment as it is then."""
    env = load_environment()
    sim_env = dict(env)
    for part in ("API_KEY", "BASE_URL", "MODEL"):
        if env.get(f"BENCH_SIMULATOR_{part}"):
            sim_env[f"BENCH_{part}"] = env[f"BENCH_SIMULATOR_{part}"]
    user = create_agent(env.get("BENCH_SIMULATOR_AGENT") or agent, sim_env)
    return user if isinstance(user, CliAgent) else None  # oracle and nop take no turns
