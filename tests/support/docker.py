"""Docker-backend helpers for tests: a real Runner on a given backend, and an agent that is interrupted."""

from __future__ import annotations

import _thread
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.agents.builtin import builtin_spec
from scaffold.agents.credentials import resolve_credentials
from scaffold.catalog.tasks import load_catalog
from scaffold.catalog.treatments import load_treatments
from scaffold.experiment import Experiment
from scaffold.trajectory import Trajectory
from scaffold.trial.runner import Runner, Settings
from scaffold.workspaces.base import NO_NETWORK, InstallSpec, Workspace
from tests.support.factories import TaskFactory

__all__ = ["CredentialedSleeper", "InterruptedAgent", "docker_runner"]


def docker_runner(
    tasks_dirs: list[Path],
    factory: TaskFactory,
    tmp_path: Path,
    backend: Any,
    agent: Any,
    experiment_id: str = "exp-docker",
) -> Runner:
    return Runner(
        load_catalog(tasks_dirs),
        load_treatments([factory.treatments_dir]),
        Experiment.under(tmp_path / "logs", experiment_id),
        Settings(backend="docker", agent=agent.name),
        backend,
        agent,
    )


class InterruptedAgent:
    """Starts a long command, then the user presses Ctrl-C (a KeyboardInterrupt in the main thread)."""

    name = "interrupted"
    traits = AgentTraits(invokes_skills=False)
    model: str | None = None
    install: InstallSpec | None = None
    network = NO_NETWORK

    def redact(self, text: str) -> str:
        return text

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        threading.Timer(1.0, _thread.interrupt_main).start()
        workspace.exec(
            ["sleep", "60"],
            timeout=60,
            env={},
            stdout_path=request.log_dir / "a.out",
            stderr_path=request.log_dir / "a.err",
        )
        raise AssertionError("not interrupted")


class CredentialedSleeper:
    """Receives the credentials Claude Code and Codex runs would (resolved from *env* as theirs are), then
    prints ``started`` and sleeps in its container, for a test to kill the harness meanwhile."""

    name = "sleeper"
    traits = AgentTraits(invokes_skills=False)
    model: str | None = None
    install: InstallSpec | None = None
    network = NO_NETWORK

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env: dict[str, str] = {}
        for agent in ("claude-code", "codex"):
            self.env.update(resolve_credentials(builtin_spec(agent, env).credentials, env, agent=agent))

    def redact(self, text: str) -> str:
        return text

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        workspace.exec(
            ["sh", "-c", "echo started; sleep 300"],
            timeout=600,
            env=self.env,
            stdout_path=request.log_dir / "agent.out",
            stderr_path=request.log_dir / "agent.err",
        )
        raise AssertionError("not killed")
