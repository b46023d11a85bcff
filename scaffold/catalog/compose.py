"""A Harbor task's ``environment/docker-compose.yaml``: read, interpolated and checked at load, as a model.

Harbor runs a task with a compose file as ``docker compose`` would, its own files first: the ``main``
service is built from the environment folder (``build: context: ${CONTEXT_DIR}``), runs
``sh -c "sleep infinity"`` after the image's ENTRYPOINT, gets the trial's log folders and the task's limits;
the task's file is merged on top, adding services (sidecars such as an ``api-server``) and overriding
``main``'s fields. Here the file is read into a :class:`Compose`: the main service and the sidecars, in
the order they start (``depends_on`` first). The docker backend runs it
(:mod:`scaffold.workspaces.docker.compose`): the sidecars on a network of the trial's own, the main
service as the agent's and the verifier's container.

Variables are interpolated as Compose does (:mod:`.compose_vars`) from Harbor's names (:func:`variables`)
and the task's ``[environment.env]``, never from this machine's environment: a compose file could
otherwise copy any of the harness's secrets into a container (whose create-time environment the engine
keeps and shows), and a task would load differently on each machine.

What cannot be honoured is refused at load with the field named, never run and scored as a failure
(:mod:`.compose_service` lists each field and why). Pure but for reading the compose file and its
``env_file`` files, and checking that build folders exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

from scaffold.catalog.compose_model import HOST_LOGS, LOG_MOUNTS, Dependency, Service
from scaffold.catalog.compose_service import Reader
from scaffold.catalog.compose_vars import InterpolationError, interpolate
from scaffold.errors import Problem
from scaffold.util.schema import load_yaml, yaml_problem

__all__ = ["COMPOSE_FILES", "MAIN", "Compose", "compose_file", "load_compose", "main_image_name", "variables"]

COMPOSE_FILES: Final = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
MAIN: Final = "main"
_TOP_LEVEL: Final = {"services", "volumes", "networks", "version", "name"}
_TOP_REFUSED: Final = {
    "include": "not supported: put every service in this one file",
    "secrets": "not supported: put the file in the environment folder and mount it read-only",
    "configs": "not supported: put the file in the environment folder and mount it read-only",
}
_SERVICE_NAME: Final = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$")
"""Compose's service names (at most 63 characters: a service's name is a host name on the trial's network)."""
_NETWORK_KEYS: Final = {"driver", "internal", "attachable", "labels"}
_VOLUME_KEYS: Final = {"driver", "labels"}


@dataclass(frozen=True, slots=True)
class Compose:
    """A task's compose file as the docker backend runs it."""

    file: str
    """Its name in the environment folder."""
    main: Service
    """The agent's and the verifier's container (Harbor's ``main``; only its defaults when the file
    does not name it)."""
    services: tuple[Service, ...]
    """The other services (sidecars), in the order they start: each after what it depends on."""
    volumes: tuple[str, ...] = ()
    """The named volumes, made for each trial and removed with it."""

    def addresses(self) -> tuple[str, ...]:
        """Every name the services answer to on the trial's network, sorted."""
        return tuple(sorted({name for s in (self.main, *self.services) for name in (s.name, *s.aliases)}))

    def waited_for(self, name: str) -> tuple[Dependency, ...]:
        """The conditions on service *name* that some service (the main one too) waits for."""
        return tuple(d for s in (self.main, *self.services) for d in s.depends_on if d.service == name)


def compose_file(environment_dir: Path) -> Path | None:
    """The environment's compose file, by Compose's names in its order of preference; None without one."""
    for name in COMPOSE_FILES:
        if (environment_dir / name).is_file():
            return environment_dir / name
    return None


def main_image_name(task: str) -> str:
    """``MAIN_IMAGE_NAME`` as Harbor names it: ``hb__<task>``, lower case, a valid image name."""
    name = f"hb__{task}".lower()
    return re.sub(r"[^a-z0-9._-]", "-", name if re.match(r"^[a-z0-9]", name) else "0" + name)


def variables(
    *, task: str, environment_dir: Path, cpus: float, memory_mb: int, env: Mapping[str, str]
) -> dict[str, str]:
    """What a compose file may interpolate: Harbor's names, then the task's ``[environment.env]``."""
    out = {
        "CONTEXT_DIR": str(environment_dir),
        "MAIN_IMAGE_NAME": main_image_name(task),
        "TEST_DIR": "/tests",
        "CPUS": f"{cpus:g}",
        "MEMORY": f"{memory_mb}M",
    }
    for kind, path in LOG_MOUNTS.items():
        key = "ARTIFACTS" if kind == "artifacts" else f"{kind.upper()}_LOGS"
        out[f"HOST_{key}_PATH"] = f"{HOST_LOGS}/{kind}"
        out[f"ENV_{key}_PATH"] = path
    return {**out, **env}


def load_compose(
    path: Path, *, variables: Mapping[str, str], has_dockerfile: bool
) -> tuple[Compose | None, list[Problem], list[Problem]]:
    """The compose file at *path* (in the environment folder) as a model, its problems and its warnings
    (the variables it uses that are not set). *has_dockerfile*: the folder has ``Dockerfile``, which the
    main service is built from unless the file says otherwise."""
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return None, [yaml_problem(path, exc)], []
    except OSError as exc:
        return None, [Problem(path, f"cannot be read: {exc.strerror}")], []
    problems: list[Problem] = []
    unset: list[str] = []
    raw = _interpolate(raw, variables, path, "", problems, unset)
    warnings = [
        Problem(path, "not set: interpolated as an empty string, as Compose does", f"${{{name}}}") for name in unset
    ]
    if not isinstance(raw, Mapping):
        return None, [*problems, Problem(path, "expected a mapping with a services key", value=raw)], warnings
    for key in raw:
        if str(key).startswith("x-") or key in _TOP_LEVEL:
            continue
        reason = _TOP_REFUSED.get(str(key), "unknown key; allowed: services, volumes, networks, version, name, x-*")
        problems.append(Problem(path, reason, str(key)))
    networks = _declared(raw.get("networks"), "networks", _NETWORK_KEYS, path, problems)
    volumes = _declared(raw.get("volumes"), "volumes", _VOLUME_KEYS, path, problems)
    services_raw = raw.get("services")
    if not isinstance(services_raw, Mapping) or not services_raw:
        problems.append(Problem(path, "expected a mapping of service names to services", "services", services_raw))
        return None, problems, warnings
    reader = Reader(path, variables, networks=networks, volumes=volumes)
    read: dict[str, Service] = {}
    for name, body in services_raw.items():
        if not _SERVICE_NAME.match(str(name)):
            problems.append(Problem(path, "a service name is letters, digits, '_', '.' and '-'", f"services.{name}"))
            continue
        service = reader.service(str(name), body)
        if service is not None:
            read[str(name)] = service
    problems.extend(reader.problems)
    main = read.pop(MAIN, None) or Service(MAIN)  # Harbor's own files make it when this one does not
    problems.extend(_main_runs(main, path, has_dockerfile))
    order, cycle_problems = _start_order(main, read, path)
    problems.extend(cycle_problems)
    if problems:
        return None, problems, warnings
    return Compose(path.name, main, tuple(read[n] for n in order), tuple(sorted(volumes))), [], warnings


def _interpolate(
    value: object, env: Mapping[str, str], path: Path, key: str, problems: list[Problem], unset: list[str]
) -> object:
    """*value* with every string inside interpolated (mapping keys stay as written, as in Compose)."""
    if isinstance(value, str):
        try:
            result = interpolate(value, env)
        except InterpolationError as exc:
            problems.append(Problem(path, str(exc), key or "(top level)"))
            return value
        unset.extend(n for n in result.unset if n not in unset)
        return result.text
    if isinstance(value, Mapping):
        return {
            k: _interpolate(v, env, path, f"{key}.{k}" if key else str(k), problems, unset) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_interpolate(v, env, path, f"{key}[{i}]", problems, unset) for i, v in enumerate(value)]
    return value


def _declared(value: object, section: str, allowed: set[str], path: Path, problems: list[Problem]) -> set[str]:
    """The names a top-level ``networks`` or ``volumes`` section declares; what cannot be honoured in each
    is a problem. Every network is the trial's one network; every volume is made for the trial."""
    if value is None:
        return set()
    if not isinstance(value, Mapping):
        problems.append(Problem(path, "expected a mapping of names", section, value))
        return set()
    names: set[str] = set()
    for name, body in value.items():
        names.add(str(name))
        if body is None:
            continue
        if not isinstance(body, Mapping):
            problems.append(Problem(path, "expected a mapping", f"{section}.{name}", body))
            continue
        for key, item in body.items():
            where = f"{section}.{name}.{key}"
            if key == "external" and item:
                what = "network" if section == "networks" else "volume"
                problems.append(Problem(path, f"an external {what} is shared beyond the trial: not supported", where))
            elif key == "driver" and item not in ("bridge" if section == "networks" else "local", None):
                problems.append(Problem(path, "only the default driver is supported", where, item))
            elif key == "enable_ipv6" and item:
                problems.append(Problem(path, "not supported: the trial's network is IPv4", where))
            elif key not in allowed and key not in ("external", "enable_ipv6"):
                reason = {
                    "name": "a fixed name would be shared by every trial: leave it out",
                    "ipam": "fixed addresses are not supported: services reach each other by name",
                    "driver_opts": "driver options are not supported",
                }.get(str(key), f"not supported; allowed: {', '.join(sorted(allowed))}")
                problems.append(Problem(path, reason, where))
    return names


def _main_runs(main: Service, path: Path, has_dockerfile: bool) -> list[Problem]:
    """The main service must have an image: built (the folder's Dockerfile, or its build) or named."""
    if has_dockerfile or main.build is not None or main.image is not None:
        return []
    return [
        Problem(
            path,
            "the main service has nothing to run: environment/Dockerfile is missing and it has no build or image",
            f"services.{MAIN}",
        )
    ]


def _start_order(main: Service, others: Mapping[str, Service], path: Path) -> tuple[list[str], list[Problem]]:
    """The sidecars in an order where each comes after what it depends on (names sorted among equals);
    problems for an unknown service, a sidecar that depends on the main one, and cycles."""
    problems: list[Problem] = []
    known = {MAIN, *others}
    for service in (main, *others.values()):
        for dep in service.depends_on:
            where = f"services.{service.name}.depends_on.{dep.service}"
            if dep.service not in known:
                problems.append(Problem(path, f"no such service; services: {', '.join(sorted(known))}", where))
            elif dep.service == MAIN:
                problems.append(
                    Problem(
                        path, "the main service starts last here (the agent's container): nothing waits for it", where
                    )
                )
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done" or name not in others:
            return
        if state.get(name) == "open":
            cycle = [*trail[trail.index(name) :], name]
            problems.append(
                Problem(path, "depends_on makes a cycle: " + " -> ".join(cycle), f"services.{name}.depends_on")
            )
            return
        state[name] = "open"
        for dep in sorted(d.service for d in others[name].depends_on):
            visit(dep, [*trail, name])
        state[name] = "done"
        order.append(name)

    for name in sorted(others):
        visit(name, [])
    return order, problems
