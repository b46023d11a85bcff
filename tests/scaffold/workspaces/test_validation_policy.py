"""``Workspace.begin_validation``: the validation phase is an explicit call, whatever the files are called.

For every backend (local; docker with its files bind-mounted; docker in copy mode, as with a remote
engine): during the agent's phase a command leaves processes behind that escape its process tree in the
ways agents' servers do (a background job, ``setsid``, ``setsid`` with a cleared environment), and copying
files in, to any folder, changes nothing. After ``begin_validation(STRICT)`` none of those processes runs
and nothing outside the workspace can be reached over the network, not even a server on this machine.
After ``begin_validation(SHARED)`` (Harbor-format verifiers) the processes are still there.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold.catalog.tasks import Task, load_task
from scaffold.workspaces.base import Backend, ValidationPolicy, Workspace
from scaffold.workspaces.local import LocalBackend
from scaffold.workspaces.netns import IsolatedNetwork
from tests.support.factories import TaskFactory


class Sleepers:
    """Three processes a command leaves behind, each escaping differently: a background job (dies with its
    command's group on every backend), setsid (its own session), and setsid with no environment at all (no
    marker either). Their durations are unique to the test, which looks for them among all processes."""

    def __init__(self) -> None:
        base = random.randrange(100_000, 900_000) * 10
        self.job, self.session, self.bare = (f"sleep {base + i}" for i in (1, 2, 3))
        # The pause lets both setsid calls happen before the command ends and its process group is killed.
        self.command = (
            f"{self.job} & setsid {self.session} & env -i PATH=/usr/bin:/bin setsid {self.bare} & "
            "sleep 0.5; echo started"
        )

    @property
    def all(self) -> tuple[str, str, str]:
        return (self.job, self.session, self.bare)


@pytest.fixture
def sleepers(backend: Backend) -> Iterator[Sleepers]:
    made = Sleepers()
    yield made
    if backend.name == "local":  # whatever a failed test (or SHARED, by design) left running
        for pid, cmdline in _processes():
            if cmdline in made.all:
                os.kill(pid, signal.SIGKILL)


PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("reached")
except OSError as exc:
    print("unreachable", exc)
"""


class Listener:
    """A TCP server on every address of this machine that accepts and closes connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(
    params=[
        "local",
        pytest.param("docker-bind", marks=pytest.mark.docker),
        pytest.param("docker-copy", marks=pytest.mark.docker),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "local":
        probe = IsolatedNetwork.make()
        available = probe.available
        probe.close()
        if not available and os.environ.get("COMET_CI") != "1":
            pytest.skip("this machine gives the local backend no network namespace (see IsolationWarning)")
        request.getfixturevalue("unconfined")  # confined, the escapers end with their command
        made: Backend = LocalBackend(tmp_path / "ws")
    else:
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
        from scaffold.workspaces.docker import DockerBackend

        # With a network in the agent's phase (the default bridge), so that leaving it is tested too.
        made = DockerBackend(tmp_path / "ws", network=True, copy=request.param == "docker-copy")
    try:
        yield made
    finally:
        made.close()


def run(workspace: Workspace, argv: list[str], logs: Path, name: str) -> str:
    result = workspace.exec(
        argv, timeout=60, env={}, stdout_path=logs / f"{name}.out", stderr_path=logs / f"{name}.err"
    )
    return result.stdout() + result.stderr()


def _processes() -> Iterator[tuple[int, str]]:
    for pid in filter(str.isdigit, os.listdir("/proc")):  # noqa: PTH208
        try:
            yield int(pid), Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue


def running(workspace: Workspace, backend: Backend, sleepers: Sleepers, logs: Path) -> set[str]:
    """Which of the sleepers run, as the machine (local) or the container (docker) sees it, once the
    background job has had its moment to die (a SIGKILL is delivered, not waited for)."""
    deadline = time.monotonic() + 5
    while True:
        if backend.name == "local":
            found = {cmdline for _, cmdline in _processes() if cmdline in sleepers.all}
        else:
            table = run(workspace, ["ps", "-eo", "args"], logs, "ps")
            found = {s for s in sleepers.all if s in table.splitlines()}
        if sleepers.job not in found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def this_machine(workspace: Workspace, backend: Backend) -> str:
    """An address of this machine as the workspace's commands would reach it with a network."""
    if backend.name == "local":
        return "127.0.0.1"
    address = workspace.host_address  # the bridge gateway, during the agent's phase
    assert address
    return address


def reach(workspace: Workspace, host: str, port: int, logs: Path, name: str) -> str:
    workspace.write_text(".probe.py", PROBE)
    return run(workspace, [workspace.python, ".probe.py", host, str(port)], logs, name)


def task_of(factory: TaskFactory) -> Task:
    return load_task(factory.task("policy"))


def test_strict_validation_ends_every_agent_process_and_the_network(
    backend: Backend, sleepers: Sleepers, factory: TaskFactory, listener: Listener, tmp_path: Path
) -> None:
    task = task_of(factory)
    logs = tmp_path / "logs"
    backend.prepare(task)
    workspace = backend.create(task, "exp-policy/strict-CONTROL-r1")
    try:
        host = this_machine(workspace, backend)
        assert "reached" in reach(workspace, host, listener.port, logs, "agent-phase"), "the agent has a network"
        assert "started" in run(workspace, ["sh", "-c", sleepers.command], logs, "leave")
        # The background job ended with its command; the one without an environment outlived it everywhere
        # (the docker backend also ends the setsid one, by its exec marker; the local one cannot).
        left = running(workspace, backend, sleepers, logs)
        assert sleepers.job not in left and sleepers.bare in left
        # Files copied in under any name, even the one validation uses, do not end the agent's phase.
        workspace.put(task.validation_dir, "checks-under-another-name")
        workspace.put(task.validation_dir, ".eval-validation")
        assert running(workspace, backend, sleepers, logs) == left

        workspace.begin_validation(ValidationPolicy.STRICT)

        assert running(workspace, backend, sleepers, logs) == set()
        assert "unreachable" in reach(workspace, host, listener.port, logs, "validation")
        assert "unreachable" in reach(workspace, "127.0.0.1", listener.port, logs, "validation-loopback")
        # The files are still there, and still the workspace's own.
        assert workspace.read_text("checks-under-another-name/check.py")
    finally:
        backend.destroy(workspace, keep=False)


def test_shared_validation_keeps_the_agents_processes(
    backend: Backend, sleepers: Sleepers, factory: TaskFactory, tmp_path: Path
) -> None:
    task = task_of(factory)
    logs = tmp_path / "logs"
    backend.prepare(task)
    workspace = backend.create(task, "exp-policy/shared-CONTROL-r1")
    try:
        run(workspace, ["sh", "-c", sleepers.command], logs, "leave")
        left = running(workspace, backend, sleepers, logs)
        assert sleepers.bare in left
        workspace.begin_validation(ValidationPolicy.SHARED)
        assert running(workspace, backend, sleepers, logs) == left
        workspace.begin_validation(ValidationPolicy.STRICT)  # once begun, the phase does not change again
        assert running(workspace, backend, sleepers, logs) == left
    finally:
        backend.destroy(workspace, keep=False)


def test_the_runner_begins_validation_before_the_first_check(factory: TaskFactory, tmp_path: Path) -> None:
    """The trial runner makes the call, once, with STRICT, before any validation command."""
    from scaffold.experiment.cases import Case
    from scaffold.workspaces.testing import Command, Reply, ScriptedBackend
    from tests.support.factories import make_runner

    factory.task("policy")
    phases: list[tuple[str, tuple[str, ...]]] = []

    def answer(command: Command) -> Reply:
        phases.append((command.phase, command.argv))
        return Reply()

    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    backend = ScriptedBackend(tmp_path / "ws", answer, root=None)
    runner.backend = backend
    runner.run(Case("policy", "CONTROL", 1))
    (workspace,) = backend.workspaces
    assert workspace.policy is ValidationPolicy.STRICT
    assert [p for p, _ in phases] == ["agent", "validation"]  # solve.sh, then check.py
    assert phases[1][1][-1] == ".eval-validation/check.py"
