"""Docker-backend helpers for tests: a real Runner on a given backend, and an agent that is interrupted."""

from __future__ import annotations

import _thread
import threading
from pathlib import Path
from typing import Any

from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.experiment import Experiment
from scaffold.tasks import load_catalog
from scaffold.trajectory import Trajectory
from scaffold.treatments import load_treatments
from scaffold.trial import Runner, Settings
from scaffold.workspaces.base import NO_NETWORK, InstallSpec, Workspace
from tests.support.factories import TaskFactory

__all__ = ["InterruptedAgent", "docker_runner"]


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
