"""The docker backend against a real second engine that cannot see this machine's files.

A second ``dockerd`` is started in its own network namespace, listening on TCP only
(``DOCKER_HOST=tcp://…``, as a remote engine is reached), and in its own mount namespace with a
private ``/tmp`` over the host's, so the folders where the harness keeps workspaces do not exist on
its side. Nothing is special-cased for it: the backend must find out by itself that bind mounts
cannot work (``engine_sees``), switch to copy mode, build the task image there from the base image,
run the trials, validate, and leave no container or volume behind on that engine.

Needs root, iproute2 (``ip``), util-linux (``nsenter``, ``unshare``) and ``dockerd``: the same as
``.ci/run`` provisions. Skipped locally when any is missing; with ``COMET_REQUIRE_DOCKER=1`` (CI) a
missing piece is a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.experiment.cases import Case
from tests.support.factories import TaskFactory
from tests.support.netns import FarHost

# One worker runs the module: the namespace and its engine (one data root) exist once per machine.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("remote-engine")]

NETNS = "comet-remote-engine"
HOST_END, ENGINE_END = "comet-rmt0", "comet-rmt1"
HOST_IP, ENGINE_IP = "10.231.77.1", "10.231.77.2"
ENGINE_URL = f"tcp://{ENGINE_IP}:2375"
FAR = FarHost(NETNS, HOST_END, ENGINE_END, HOST_IP, ENGINE_IP)
# Kept between runs like the CI engine's data root, so the base image is loaded only once per machine.
DATA_ROOT = Path("/var/lib/comet-remote-docker")
EXEC_ROOT = Path("/run/comet-remote-docker")
PIDFILE = Path("/run/comet-remote-docker.pid")
LOG = Path("/tmp/comet-remote-dockerd.log")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network and mount namespaces)"
    for tool in ("ip", "nsenter", "unshare", "dockerd"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def _teardown() -> None:
    """Stop an engine and namespace left by an earlier run (or this one); quiet when there is none."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        pid = int(PIDFILE.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
    PIDFILE.unlink(missing_ok=True)
    FAR.remove()


def _start_engine() -> subprocess.Popen[bytes]:
    _teardown()
    FAR.create()
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    EXEC_ROOT.mkdir(parents=True, exist_ok=True)
    # nsenter, not `ip netns exec`: the latter remounts /sys, hiding the cgroup hierarchy dockerd needs.
    # unshare gives the engine a private /tmp: the host's workspaces and pytest folders vanish for it.
    script = (
        "mount -t tmpfs tmpfs /tmp && exec dockerd "
        f"--data-root {DATA_ROOT} --exec-root {EXEC_ROOT} --pidfile {PIDFILE} -H {ENGINE_URL} --tls=false"
    )
    enter = ["nsenter", f"--net=/run/netns/{NETNS}", "unshare", "--mount", "--propagation", "private"]
    with LOG.open("wb") as log:
        return subprocess.Popen(
            [*enter, "sh", "-c", script],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _engine(timeout: float = 60) -> Any:
    import docker

    deadline = time.monotonic() + timeout
    while True:
        try:
            client = docker.DockerClient(base_url=ENGINE_URL, timeout=120)
            client.ping()
            return client
        except Exception as exc:
            if time.monotonic() > deadline:
                tail = LOG.read_text(errors="replace")[-3000:] if LOG.exists() else "(no log)"
                pytest.fail(f"the second Docker engine did not answer at {ENGINE_URL}: {exc}\n{tail}", pytrace=False)
            time.sleep(0.3)


@pytest.fixture(scope="module")
def remote_engine(docker_client: Any, docker_base_image: str) -> Iterator[Any]:
    """A second engine reached over TCP that sees none of this machine's /tmp, with the base image."""
    missing = _missing()
    if missing:
        if os.environ.get("COMET_REQUIRE_DOCKER") == "1":
            pytest.fail(f"COMET_REQUIRE_DOCKER=1 but a second engine cannot be started: {missing}", pytrace=False)
        pytest.skip(f"second Docker engine: {missing}")
    engine = _start_engine()
    try:
        client = _engine()
        try:
            client.images.get(docker_base_image)
        except Exception:  # not loaded yet on this machine: copy it over from the first engine
            client.images.load(docker_client.images.get(docker_base_image).save(named=True))
        yield client
        client.close()
    finally:
        _teardown()
        with contextlib.suppress(subprocess.TimeoutExpired):
            engine.wait(timeout=15)
        if engine.poll() is None:
            engine.kill()
            engine.wait()


@pytest.fixture
def on_remote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", ENGINE_URL)
    monkeypatch.delenv("COMET_DOCKER_COPY", raising=False)  # the backend has to find out by itself
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), ENGINE_IP]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)


ANSWER_CHECK = """\
from pathlib import Path
from scaffold.python.validation.core import write_test_results
answer = Path("answer.txt")
ok = answer.exists() and answer.read_text().strip() == "42" and Path("question.txt").exists()
write_test_results({"passed": ["answer is 42"]} if ok else {"failed": ["answer is 42"]})
"""


def test_trials_on_an_engine_that_cannot_see_this_machine(
    remote_engine: Any, on_remote: None, factory: TaskFactory, tmp_path: Path
) -> None:
    from scaffold.agents import create_agent
    from scaffold.catalog.tasks import load_catalog
    from scaffold.catalog.treatments import load_treatments
    from scaffold.experiment import Experiment
    from scaffold.trial.runner import Runner, Settings
    from scaffold.workspaces.docker import DockerBackend

    # A task whose environment, solution and validation all have to travel through the engine's API.
    factory.task(
        "remote-ok",
        solve='cp "$COMET_SOLUTION_DIR/answer.txt" answer.txt\n',
        scripts={"check.py": ANSWER_CHECK},
        files={"question.txt": "What is six times seven?\n"},
    )
    (factory.root / "tasks" / "remote-ok" / "solution" / "answer.txt").write_text("42\n")
    backend = DockerBackend(tmp_path / "ws")
    results = {}
    try:
        for agent in ("oracle", "nop"):
            runner = Runner(
                load_catalog([factory.root / "tasks", BUILTIN_TASKS_DIR]),
                load_treatments([BUILTIN_TREATMENTS_DIR]),
                Experiment.under(tmp_path / "logs", f"remote-{agent}"),
                Settings(backend="docker", agent=agent, keep_workspaces="none"),
                backend,
                create_agent(agent),
            )
            for task in ("remote-ok", "fix-median"):
                results[(agent, task)] = runner.run(Case(task, "CONTROL", 1)).record
        assert backend.copy_mode is True, "the backend should have found that bind mounts cannot work there"
    finally:
        backend.close()

    for task in ("remote-ok", "fix-median"):
        passed, failed = results[("oracle", task)], results[("nop", task)]
        assert passed.verdict == "passed", passed.errors or passed.checks
        assert failed.verdict == "failed" and not failed.errors, failed
        assert passed.workspace.backend == "docker"
    label = f"comet-eval.session={backend.session.id}"
    assert remote_engine.containers.list(all=True, filters={"label": label}) == []
    assert remote_engine.volumes.list(filters={"label": label}) == []
