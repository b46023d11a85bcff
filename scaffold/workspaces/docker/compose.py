"""A Harbor task's compose services on the docker backend: the trial's network, its volumes, its sidecars.

Why not ``docker compose`` itself: the machines this runs on have Docker Engine 20.10 from Debian
bookworm, whose ``docker compose`` (v2) plugin is not packaged (only the deprecated Python
``docker-compose`` 1.29), and there is no internet to fetch it; and a compose project of its own would
build, label, network and remove outside the backend, which already does all of that for a trial's
container (image aliases and stand-ins, build time limits, ``build_failed``, session labels, sweeps,
egress). So the part of the Compose specification that a Harbor task needs is read at load
(:mod:`scaffold.catalog.compose`) and run here through the Docker SDK, on the backend's own machinery.

One trial, as Harbor's ``docker compose up --wait`` makes it (:func:`start`):

* a network of its own (internal: no way out), where every service answers to its name (and aliases);
* its named volumes, made for it;
* the sidecars, each once what it depends on is started, healthy or done (``depends_on``), with the
  environment folder's read-only files copied in before it starts; then every one is waited for until
  it runs (healthy, when it has a health check; done with 0, for a one-shot);
* the main service last: the agent's container, made by :mod:`.launch` as for any Harbor task (keeper,
  limits, the agent's network as well, egress rules, validation) on this network, under the name ``main``.

Sidecars have no way out: an agent that reaches them must not reach further through them (its own
container's egress rules would otherwise be one relay away). Everything carries the trial's labels, so
what a killed session left is swept as its containers are (:func:`.sessions.sweep`); :func:`remove`
takes it all down after the trial. A sidecar that fails to start or to become ready fails the trial's
workspace with the service's name and the end of its output.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from scaffold.catalog.compose import Compose
from scaffold.catalog.compose_model import Dependency, Healthcheck, Service
from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.copy_mode import tar_stream
from scaffold.workspaces.docker.sessions import LABEL, remove_container, remove_network, remove_volume

__all__ = [
    "NO_WAY_OUT_DNS",
    "READY_TIMEOUT_S",
    "ProjectSpec",
    "Services",
    "host_options",
    "plan",
    "put_path",
    "remove",
    "start",
    "unmet",
]

READY_TIMEOUT_S: Final = 300.0
"""How long the services of a trial may take to be ready, all together (Docker decides when one is
unhealthy, after its own retries; this only bounds a service that never decides)."""
NO_WAY_OUT_DNS: Final = ["timeout:1", "attempts:1"]
"""Resolver options for a container without a way out: a name outside the trial fails in a second,
not after the 20 s of the resolver's default retries (measured on the internal network)."""
_POLL_S: Final = 0.2


@dataclass(frozen=True, slots=True)
class Sidecar:
    """One sidecar to create: its service, engine name, image, create options and files to copy in."""

    service: str
    name: str
    image: str
    options: dict[str, Any]
    copies: tuple[tuple[Path, str], ...]
    waits: tuple[Dependency, ...]


@dataclass(frozen=True, slots=True)
class ProjectSpec:
    """What :func:`start` makes for one trial: decided with no API call (see :func:`plan`)."""

    network: str
    labels: dict[str, str]
    volumes: dict[str, str]
    """Each named volume of the compose file, by its name there: its name on the engine."""
    sidecars: tuple[Sidecar, ...]
    main_waits: tuple[Dependency, ...]
    task: str


@dataclass(slots=True)
class Services:
    """What :func:`start` made on the engine for a trial, removed with it (:func:`remove`)."""

    network: str | None = None
    containers: dict[str, str] = field(default_factory=dict)
    """The sidecars' container ids, by service name, in the order they started."""
    volumes: list[str] = field(default_factory=list)


def plan(
    api: Any,
    compose: Compose,
    images: Mapping[str, str],
    *,
    labels: Mapping[str, str],
    name: Callable[[str], str],
    environment_dir: Path,
    pids_limit: int,
    task: str,
) -> ProjectSpec:
    """The trial's project: *images* by service name, *labels* for everything, *name* makes a unique
    engine name of a kind (``net``, a service's name, ``vol-<name>``); sidecars get *pids_limit* unless
    their file says otherwise (a fork bomb in one must not take the engine down)."""
    network = name("net")
    volumes = {volume: name(f"vol-{volume}") for volume in compose.volumes}
    sidecars = []
    for service in compose.services:
        host = api.create_host_config(
            network_mode=network,
            dns_opt=NO_WAY_OUT_DNS,
            pids_limit=service.pids or pids_limit,
            **host_options(service, volumes),
        )
        options = {
            "entrypoint": None if service.entrypoint is None else list(service.entrypoint),
            "command": None if service.command is None else list(service.command),
            "environment": dict(service.environment),
            "working_dir": service.working_dir,
            "user": service.user,
            "hostname": service.hostname,
            "labels": {**dict(service.labels), **labels, f"{LABEL}.service": service.name},
            "healthcheck": _healthcheck(service.healthcheck),
            "networking_config": api.create_networking_config(
                {network: api.create_endpoint_config(aliases=[service.name, *service.aliases])}
            ),
            "host_config": host,
            "tty": service.tty,
            "stdin_open": service.stdin_open,
            "use_config_proxy": False,  # no way out: a proxy of this machine's docker config is no use
        }
        copies = tuple((environment_dir / c.source, c.target) for c in service.copies)
        sidecar = Sidecar(service.name, name(service.name), images[service.name], options, copies, service.depends_on)
        sidecars.append(sidecar)
    return ProjectSpec(network, dict(labels), volumes, tuple(sidecars), compose.main.depends_on, task)


def host_options(service: Service, volumes: Mapping[str, str]) -> dict[str, Any]:
    """The host config options of *service* that the main service and the sidecars share: mounts of its
    volumes, tmpfs, shm, ulimits, capabilities, extra hosts, limits, init (*volumes*: engine names)."""
    from docker.types import Mount, Ulimit

    options: dict[str, Any] = {
        "mounts": [
            Mount(m.target, volumes[m.source] if m.source else None, type="volume", read_only=m.read_only)
            for m in service.volumes
        ],
        "tmpfs": dict(service.tmpfs) or None,
        "shm_size": service.shm_size,
        "ulimits": [Ulimit(name=n, soft=s, hard=h) for n, s, h in service.ulimits] or None,
        "cap_add": list(service.cap_add) or None,
        "cap_drop": list(service.cap_drop) or None,
        "extra_hosts": dict(service.extra_hosts) or None,
        "read_only": service.read_only or None,
        "init": service.init,
    }
    if service.cpus is not None:
        options["nano_cpus"] = int(service.cpus * 1e9)
    if service.memory is not None:
        options["mem_limit"] = service.memory
    if service.restart != "no":
        policy, _, count = service.restart.partition(":")
        options["restart_policy"] = {"Name": policy, "MaximumRetryCount": int(count or 0)}
    return options


def _healthcheck(check: Healthcheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    out: dict[str, Any] = {}
    if check.test is not None:
        out["test"] = list(check.test)
    for key in ("interval", "timeout", "start_period"):
        seconds = getattr(check, key)
        if seconds is not None:
            out[key] = int(seconds * 1e9)
    if check.retries is not None:
        out["retries"] = check.retries
    return out


def put_path(api: Any, container: str, source: Path, target: str) -> None:
    """Copy the host file or folder *source* to the absolute *target* of a container not started yet;
    the folders above it are made by the engine as it unpacks the archive."""
    try:
        api.put_archive(container, "/", tar_stream([(target.strip("/"), source)]))
    except Exception as exc:
        raise WorkspaceError(f"cannot copy {source} to {target} in the container: {exc}") from None


def start(api: Any, spec: ProjectSpec) -> Services:
    """Make the trial's network, volumes and sidecars (see the module docstring); remove whatever was made
    when anything fails (a WorkspaceError naming the service), or when interrupted."""
    made = Services()
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        api.create_network(spec.network, driver="bridge", internal=True, labels=spec.labels, check_duplicate=True)
        made.network = spec.network
        for volume in spec.volumes.values():
            api.create_volume(volume, labels=spec.labels)
            made.volumes.append(volume)
        for sidecar in spec.sidecars:
            for dep in sidecar.waits:
                _wait(api, made, dep, deadline, spec.task)
            created = api.create_container(sidecar.image, name=sidecar.name, **sidecar.options)
            made.containers[sidecar.service] = created["Id"]
            for source, target in sidecar.copies:
                put_path(api, created["Id"], source, target)
            api.start(created["Id"])
        for dep in spec.main_waits:
            _wait(api, made, dep, deadline, spec.task)
        for service in made.containers:
            _wait(api, made, Dependency(service, "ready"), deadline, spec.task)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            remove(api, made)
        if isinstance(exc, WorkspaceError) or not isinstance(exc, Exception):
            raise
        raise WorkspaceError(f"task {spec.task}: cannot start its compose services: {exc}") from None
    return made


def _wait(api: Any, made: Services, dep: Dependency, deadline: float, task: str) -> None:
    """Until the service of *dep* meets its condition (``ready``: as ``up --wait`` wants it: healthy when
    it has a health check, else running, or done with exit code 0)."""
    container = made.containers[dep.service]
    while True:
        state = api.inspect_container(container).get("State") or {}
        problem = unmet(state, dep.condition)
        if problem is None:
            return
        if problem or time.monotonic() > deadline:
            why = problem or f"not {dep.condition.removeprefix('service_')} after {READY_TIMEOUT_S:g}s"
            raise WorkspaceError(f"task {task}: the service {dep.service} {why}{_output(api, container)}")
        time.sleep(_POLL_S)


def unmet(state: Mapping[str, Any], condition: str) -> str | None:
    """None when *state* meets *condition*; "" while it may still; else why it never will."""
    status = state.get("Status")
    code = state.get("ExitCode")
    health = (state.get("Health") or {}).get("Status")
    ended = status in ("exited", "dead")
    if condition == "service_started":
        return None if status != "created" else ""
    if condition == "service_completed_successfully":
        return "" if not ended else None if code == 0 else f"exited with code {code}"
    if condition == "service_healthy" and health is None:
        return "has no health check (depends_on: condition: service_healthy needs one)"
    if health == "unhealthy":
        return "is unhealthy"
    if health is not None and health != "none":
        return None if health == "healthy" else "" if not ended else f"exited with code {code}"
    if status == "running" or (ended and code == 0):
        return None
    return "" if not ended else f"exited with code {code}"


def _output(api: Any, container: str) -> str:
    """The end of a container's output, and its last health check's, for an error message."""
    with contextlib.suppress(Exception):
        logs = api.logs(container, tail=20).decode("utf-8", "replace").strip()
        health = (api.inspect_container(container).get("State") or {}).get("Health") or {}
        checks = [str(c.get("Output") or "").strip() for c in (health.get("Log") or [])[-1:]]
        shown = "\n".join(part for part in (logs, *checks) if part)
        return f"; its last output:\n{shown[-2000:]}" if shown else ""
    return ""


def remove(api: Any, services: Services) -> None:
    """Remove the sidecars, then the network and the volumes (once the main container is gone too)."""
    errors: list[str] = []
    for container in reversed(list(services.containers.values())):
        try:
            remove_container(api, container)
        except WorkspaceError as exc:
            errors.append(str(exc))
    for action, name in [
        *((remove_network, n) for n in [services.network] if n),
        *((remove_volume, v) for v in services.volumes),
    ]:
        try:
            action(api, name)
        except WorkspaceError as exc:
            errors.append(str(exc))
    if errors:
        raise WorkspaceError("; ".join(errors))
