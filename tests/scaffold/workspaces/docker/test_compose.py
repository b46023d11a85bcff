"""Harbor tasks with a docker-compose environment on a real engine (scaffold.workspaces.docker.compose).

The multi-container recipe (tests/data/harbor-tasks/multi-container-api: a main container and an API
sidecar with a health check) passes with the oracle and fails with nop, through the pytest suite as a
user runs it, on this machine's engine and on a pool's remote engine (copy mode); a run killed mid-trial
leaves containers, a network and a volume that the next session sweeps; the sidecars are reached by
name from the agent's container behind the egress proxy, while only the main container has the agent's
network; the compose fields (volumes shared with a one-shot service, files copied in, build arguments,
aliases) do what they say; a sidecar that never becomes healthy fails the workspace, naming it, and
leaves nothing; the standby brings its own services for the next trial. A Harbor image's ENTRYPOINT
starts its service beside the keeper.

Needs ``DOCKER_HOST``; builds the base images once when missing. The pool test also needs what
tests.support.engines needs (root, network namespaces); each is skipped without, failed under
``COMET_REQUIRE_DOCKER=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import load_task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import ValidationPolicy
from scaffold.workspaces.docker import DockerBackend
from tests.support.engines import CERTS, FarEngine, missing
from tests.support.factories import REPO

pytestmark = [pytest.mark.docker, pytest.mark.slow]

HARBOR_TASKS = REPO / "tests" / "data" / "harbor-tasks"
RECIPE = "multi-container-api"


def _argv(folder: Path, tasks: Path, *args: str) -> list[str]:
    """The local suite on the Harbor tasks in *tasks* with the docker backend, its files in *folder*."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), f"--tasks-dir={tasks}"]
    argv += ["--backend=docker", "-p", "no:cacheprovider", "-q", "--keep-workspaces=none"]
    return [*argv, f"--workspace-root={folder / 'ws'}", f"--logs-dir={folder / 'logs'}", *args]


def _suite(
    folder: Path, tasks: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run :func:`_argv`'s suite to its end: the run and its logs folder."""
    argv = _argv(folder, tasks, *args)
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=1200, check=False)
    return done, folder / "logs"


def _records(logs: Path) -> dict[str, dict[str, Any]]:
    return {
        path.parent.name: json.loads(path.read_text())
        for path in sorted((logs / "experiments").glob("*/trials/*/record.json"))
    }


def _leftovers(client: Any, label: str) -> list[str]:
    """Our containers, networks and volumes carrying *label* (``comet-eval.experiment=...``)."""
    found = [f"container {c.name}" for c in client.containers.list(all=True, filters={"label": label})]
    found += [f"network {n['Name']}" for n in client.api.networks(filters={"label": label})]
    return found + [f"volume {v.name}" for v in client.volumes.list(filters={"label": label})]


def _oracle_passes_and_nop_fails(folder: Path, client: Any, *args: str, env: dict[str, str] | None = None) -> None:
    for agent, verdict in (("oracle", "passed"), ("nop", "failed")):
        experiment = f"compose-{agent}-{uuid.uuid4().hex[:8]}"
        run, logs = _suite(folder / agent, HARBOR_TASKS, f"--task={RECIPE}", f"--agent={agent}",
                           f"--experiment-id={experiment}", *args, env=env)  # fmt: skip
        records = _records(logs)
        assert list(records) == [f"{RECIPE}-CONTROL-r1"], run.stdout[-3000:] + run.stderr[-3000:]
        (record,) = records.values()
        assert record["verdict"] == verdict, (record["checks"], record["errors"], run.stdout[-3000:])
        assert record["noise"]["category"] == "included"
        assert _leftovers(client, f"comet-eval.experiment={experiment}") == []


def test_the_recipe_passes_with_the_oracle_and_fails_with_nop_on_this_engine(
    tmp_path: Path, docker_trixie_image: str, docker_client: Any
) -> None:
    _oracle_passes_and_nop_fails(
        tmp_path, docker_client, f"--image-alias=python:3.13-slim-bookworm={docker_trixie_image}"
    )


@pytest.mark.xdist_group("compose-pool-engine")
def test_the_recipe_passes_with_the_oracle_and_fails_with_nop_on_a_pool_engine(
    tmp_path: Path, docker_trixie_image: str, docker_client: Any
) -> None:
    """A pool of one remote engine (TLS over TCP, blind to this machine's files: copy mode), which has the
    stand-in base image (copied there once: its data root is kept between runs)."""
    problem = missing()
    if problem:
        if os.environ.get("COMET_REQUIRE_DOCKER") == "1":
            pytest.fail(f"COMET_REQUIRE_DOCKER=1 but a pool engine cannot be started: {problem}", pytrace=False)
        pytest.skip(f"pool engine: {problem}")
    far = FarEngine("compose", 4)
    far.start()
    try:
        far.load_image(docker_client, docker_trixie_image)
        env = dict(os.environ)
        env.update(DOCKER_CERT_PATH=str(CERTS / "client"), DOCKER_TLS_VERIFY="1")
        env["NO_PROXY"] = env["no_proxy"] = ",".join(filter(None, [env.get("NO_PROXY"), far.ip]))
        env.pop("COMET_DOCKER_COPY", None)
        client = far.client()
        try:
            _oracle_passes_and_nop_fails(
                tmp_path, client, f"--docker-host={far.url}*1",
                f"--image-alias=python:3.13-slim-bookworm={docker_trixie_image}", env=env,
            )  # fmt: skip
        finally:
            client.close()
    finally:
        far.remove()


def test_a_killed_run_leaves_what_the_next_session_sweeps(
    tmp_path: Path, docker_trixie_image: str, docker_client: Any
) -> None:
    """SIGKILL the harness while the oracle works: the main container, the sidecar, the trial's network
    and its volume stay behind, labelled with the dead session; the next session removes them all."""
    tasks = tmp_path / "tasks"
    shutil.copytree(HARBOR_TASKS / RECIPE, tasks / "slow-compose")
    (tasks / "slow-compose" / "solution" / "solve.sh").write_text("#!/bin/bash\necho started\nsleep 300\n")
    compose = tasks / "slow-compose" / "environment" / "docker-compose.yaml"
    compose.write_text(
        compose.read_text().replace("    expose:", "    volumes: [scratch:/scratch]\n    expose:")
        + "\nvolumes:\n  scratch: {}\n"
    )
    alias = f"--image-alias=python:3.13-slim-bookworm={docker_trixie_image}"
    experiment = f"compose-killed-{uuid.uuid4().hex[:8]}"
    label = f"comet-eval.experiment={experiment}"
    argv = _argv(tmp_path / "killed", tasks, "--agent=oracle", f"--experiment-id={experiment}", alias)
    log = tmp_path / "killed" / "pytest.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=tmp_path / "killed", stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while True:
            agent = docker_client.containers.list(filters={"label": [label, "comet-eval.phase=agent"]})
            if agent and any("sleep 300" in " ".join(p) for p in agent[0].top()["Processes"] or []):
                break
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the oracle never started"
            time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = _leftovers(docker_client, label)
    kinds = sorted({entry.split()[0] for entry in left})
    assert kinds == ["container", "network", "volume"], left
    assert len([e for e in left if e.startswith("container")]) == 2, left  # main and the sidecar

    # The next session (a nop run of another experiment) sweeps the dead session's objects at its start.
    run, _ = _suite(tmp_path / "next", tasks, "--agent=nop", alias)
    assert "1 xfailed" in run.stdout or "failed" in run.stdout, run.stdout[-3000:]
    assert _leftovers(docker_client, label) == []


ENTRYPOINT_DOCKERFILE = """\
FROM {base}
RUN mkdir -p /srv/www && echo up > /srv/www/status \\
 && printf '#!/bin/sh\\npython3 -m http.server 8123 --directory /srv/www > /tmp/server.log 2>&1 &\\nexec "$@"\\n' \\
      > /entrypoint.sh && chmod +x /entrypoint.sh
WORKDIR /app
ENTRYPOINT ["/entrypoint.sh"]
"""
ENTRYPOINT_CHECK = """\
#!/bin/bash
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
fetch="import urllib.request as u; print(u.urlopen('http://127.0.0.1:8123/status').read().decode())"
for _ in $(seq 50); do
    if [ "$(python3 -c "$fetch")" = up ]; then
        echo 1 > /logs/verifier/reward.txt
        break
    fi
    sleep 0.1
done
"""


def test_a_service_the_images_entrypoint_starts_runs_for_the_verifier(tmp_path: Path, docker_base_image: str) -> None:
    """dns-blacklisting's pattern: the image's ENTRYPOINT starts a server, then ``exec "$@"``. The keeper
    stays the main process and starts the entrypoint beside it (with Harbor's ``sleep infinity``)."""
    task = tmp_path / "tasks" / "entrypoint-server"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n')
    (task / "instruction.md").write_text("Nothing to do: the server is the image's.\n")
    (task / "environment" / "Dockerfile").write_text(ENTRYPOINT_DOCKERFILE.format(base=docker_base_image))
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (task / "tests" / "test.sh").write_text(ENTRYPOINT_CHECK)
    run, logs = _suite(tmp_path / "run", tmp_path / "tasks", "--agent=oracle")
    (record,) = _records(logs).values()
    assert record["verdict"] == "passed", (record["checks"], record["errors"], run.stdout[-3000:])


# --- the backend itself ---------------------------------------------------------------------------------

FEATURES = """\
services:
  main:
    depends_on:
      init: {condition: service_completed_successfully}
      web: {condition: service_healthy}
    environment: [GREETING=hello]
    volumes:
      - shared:/shared
      - ./conf.txt:/etc/app/conf.txt:ro
  init:
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "echo ready > /shared/ready"]
    volumes: [shared:/shared]
  web:
    build:
      context: web
      args: {BASE: "%(base)s", GREETING: "it's \\"$$built\\""}
    command: python3 -m http.server 8000 --directory /www
    networks:
      default:
        aliases: [www]
    healthcheck:
      test: python3 -c "import socket; socket.create_connection(('localhost', 8000), 2)"
      interval: 1s
      retries: 30
volumes:
  shared: {}
"""
WEB_DOCKERFILE = """\
ARG BASE=nothing
FROM ${BASE}
ARG GREETING=unset
RUN mkdir /www && printf '%s' "$GREETING" > /www/greeting
"""
PROBE = """\
import json, os, urllib.request
out = {
    "web": urllib.request.urlopen("http://web:8000/greeting", timeout=10).read().decode(),
    "alias": urllib.request.urlopen("http://www:8000/greeting", timeout=10).read().decode(),
    "ready": open("/shared/ready").read().strip(),
    "conf": open("/etc/app/conf.txt").read().strip(),
    "greeting": os.environ.get("GREETING"),
    "proxy": os.environ.get("HTTP_PROXY", ""),
}
print(json.dumps(out))
"""


def _compose_task(root: Path, compose: str, base: str, files: dict[str, str] | None = None) -> Path:
    task = root / f"compose-{uuid.uuid4().hex[:8]}"
    for sub in ("environment/web", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60\n')
    (task / "instruction.md").write_text("Probe.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "environment" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /app\n")
    (task / "environment" / "docker-compose.yaml").write_text(compose)
    for rel, text in (files or {}).items():
        (task / "environment" / rel).write_text(text)
    return task


@pytest.fixture
def egress_backend(tmp_path: Path) -> Iterator[DockerBackend]:
    """An agent's network through the egress proxy (host-only network, HTTP_PROXY set in the container)."""
    backend = DockerBackend(tmp_path / "ws", network=True, network_scope="internet", egress=["192.0.2.10:443"])
    yield backend
    backend.close()


def test_the_services_are_reached_by_name_behind_the_egress_proxy_and_their_fields_apply(
    tmp_path: Path, docker_base_image: str, docker_client: Any, egress_backend: DockerBackend
) -> None:
    backend = egress_backend
    task = load_task(
        _compose_task(
            tmp_path / "tasks",
            FEATURES % {"base": docker_base_image},
            docker_base_image,
            {"conf.txt": "copied\n", "web/Dockerfile": WEB_DOCKERFILE},
        )
    )
    workspace = backend.create(task, f"exp-compose/{task.name}")
    try:
        (tmp_path / "probe.py").write_text(PROBE)
        workspace.put_at(tmp_path / "probe.py", "/tmp/probe.py")
        result = workspace.exec(
            ["python3", "/tmp/probe.py"], timeout=60, env={},
            stdout_path=tmp_path / "out.log", stderr_path=tmp_path / "err.log",
        )  # fmt: skip
        assert result.exit_code == 0, (tmp_path / "err.log").read_text()
        seen = json.loads((tmp_path / "out.log").read_text())
        assert seen["proxy"], "the agent's HTTP goes through the egress proxy"
        assert seen["web"] == seen["alias"] == 'it\'s "$built"'  # build args, written into the Dockerfile
        assert (seen["ready"], seen["conf"], seen["greeting"]) == ("ready", "copied", "hello")

        services = workspace.services
        assert services is not None and services.network is not None
        assert set(services.containers) == {"init", "web"} and len(services.volumes) == 1
        main = docker_client.api.inspect_container(workspace.container_id)
        assert set(main["NetworkSettings"]["Networks"]) == {services.network, backend.network_name}
        web = docker_client.api.inspect_container(services.containers["web"])
        assert set(web["NetworkSettings"]["Networks"]) == {services.network}  # no way out for a sidecar
        network = docker_client.api.inspect_network(services.network)
        assert network["Internal"] is True
        for labels in (network["Labels"], web["Config"]["Labels"], main["Config"]["Labels"]):
            assert labels["comet-eval.session"] == backend.session.id
            assert labels["comet-eval.trial"] == f"exp-compose/{task.name}"

        workspace.begin_validation(ValidationPolicy.SHARED)  # Harbor's verifier: the services stay up
        result = workspace.exec(
            ["python3", "/tmp/probe.py"], timeout=60, env={},
            stdout_path=tmp_path / "out2.log", stderr_path=tmp_path / "err2.log",
        )  # fmt: skip
        assert result.exit_code == 0, (tmp_path / "err2.log").read_text()
    finally:
        backend.destroy(workspace, keep=False)
        backend.drain()
    assert _leftovers(docker_client, f"comet-eval.trial=exp-compose/{task.name}") == []


def test_a_sidecar_that_never_becomes_healthy_fails_the_workspace_and_leaves_nothing(
    tmp_path: Path, docker_base_image: str, docker_client: Any
) -> None:
    compose = """\
services:
  main:
    depends_on:
      broken: {condition: service_healthy}
  broken:
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "echo starting the broken service; sleep 300"]
    healthcheck:
      test: ["CMD", "false"]
      interval: 1s
      retries: 2
"""
    task = load_task(_compose_task(tmp_path / "tasks", compose, docker_base_image))
    backend = DockerBackend(tmp_path / "ws", standby=False)
    try:
        with pytest.raises(WorkspaceError) as failed:
            backend.create(task, f"exp-broken/{task.name}")
        assert "the service broken is unhealthy" in str(failed.value)
        assert "starting the broken service" in str(failed.value)  # its output, to see why
    finally:
        backend.close()
    assert _leftovers(docker_client, f"comet-eval.trial=exp-broken/{task.name}") == []


def test_the_standby_brings_its_services_and_the_next_trial_takes_them(
    tmp_path: Path, docker_trixie_image: str, docker_client: Any
) -> None:
    """The next trial's container is started while a trial runs, its sidecars first; the next trial of the
    task takes the lot, and reaches the sidecar by name; what no trial takes goes when the backend closes."""
    backend = DockerBackend(
        tmp_path / "ws", standby=True, image_aliases={"python:3.13-slim-bookworm": docker_trixie_image}
    )
    task = load_task(HARBOR_TASKS / RECIPE)
    try:
        first = backend.create(task, "exp-standby/first")
        deadline = time.monotonic() + 120
        session = f"comet-eval.session={backend.session.id}"
        while not (
            standby := [
                c
                for c in docker_client.containers.list(filters={"label": [session, "comet-eval.phase=agent"]})
                if c.labels["comet-eval.trial"].startswith("standby-")
            ]
        ):
            assert time.monotonic() < deadline, "no standby was made"
            time.sleep(0.2)
        backend.destroy(first, keep=False)
        second = backend.create(task, "exp-standby/second")
        try:
            assert second.container_id == standby[0].id  # the standby's container, and its services
            assert second.services is not None and set(second.services.containers) == {"api-server"}
            result = second.exec(
                ["python3", "-c", "import urllib.request as u; print(u.urlopen('http://api-server:5000/items').read())"],
                timeout=60, env={}, stdout_path=tmp_path / "out.log", stderr_path=tmp_path / "err.log",
            )  # fmt: skip
            assert result.exit_code == 0 and "bravo" in (tmp_path / "out.log").read_text(), result.stderr()
        finally:
            backend.destroy(second, keep=False)
    finally:
        backend.close()
    assert _leftovers(docker_client, f"comet-eval.session={backend.session.id}") == []
