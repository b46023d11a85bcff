"""The container of a compose task's main service: what it gets on top of any Harbor task's container.

:mod:`.launch` makes it as for every trial (keeper, the agent's mounts and network, limits, validation);
for a task with a compose file (:class:`MainContainer`) it is also:

* on the trial's network first, as ``main`` (and its aliases), so the engine's resolver answers the
  services' names; the agent's network (host-only, or the bridge) is joined second, after creation; with
  neither, the trial's network is its only one, and it has no way out;
* given the compose file's fields for ``main``: user, hostname, labels, volumes, tmpfs, ulimits, extra
  hosts, and its limits when the file changes Harbor's (``${CPUS}``, ``${MEMORY}``);
* told to reach the services directly: their names join ``NO_PROXY``, since the egress proxy lets only
  the model endpoint through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scaffold.catalog.compose import MAIN
from scaffold.catalog.compose_model import Service
from scaffold.catalog.tasks import Task
from scaffold.workspaces.docker.compose import NO_WAY_OUT_DNS, ProjectSpec, host_options

__all__ = ["HARBOR_MAIN", "ContainerLimits", "MainContainer", "main_service"]

HARBOR_MAIN: Final = Service(MAIN)
"""The main service as Harbor's own compose files make it, for a task without a compose file."""
_NOT_FOR_MAIN: Final = ("nano_cpus", "mem_limit", "init", "read_only", "cap_add", "restart_policy")
"""Host options of a service that the main container takes otherwise: its limits are computed here, the
keeper needs its init, and the rest are refused at load."""


def main_service(task: Task) -> Service:
    """The main service of *task*'s compose file; Harbor's defaults for a task without one."""
    harbor = task.harbor
    return harbor.compose.main if harbor is not None and harbor.compose is not None else HARBOR_MAIN


@dataclass(frozen=True, slots=True)
class ContainerLimits:
    cpus: float
    memory: int | str
    pids: int


@dataclass(frozen=True, slots=True)
class MainContainer:
    """The main container of one trial of a compose task: *project* is its services' plan, *main* its
    own service, *addresses* every name the services answer to."""

    project: ProjectSpec
    main: Service
    addresses: tuple[str, ...]

    def networks(self, mode: str) -> tuple[str, ...]:
        """The networks joined after the trial's own: the agent's (*mode*), unless it has none."""
        return () if mode == "none" else (mode,)

    def create_options(self, api: Any) -> dict[str, Any]:
        """Options of the create call besides a Harbor task's."""
        endpoint = api.create_endpoint_config(aliases=[self.main.name, *self.main.aliases])
        return {
            "user": self.main.user,
            "hostname": self.main.hostname,
            "networking_config": api.create_networking_config({self.project.network: endpoint}),
        }

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """*env* with the services' names in ``NO_PROXY`` when it sends HTTP through the egress proxy."""
        if "NO_PROXY" not in env:
            return dict(env)
        value = ",".join([env["NO_PROXY"], *self.addresses])
        return {**env, "NO_PROXY": value, "no_proxy": value}

    def limits(self, task: ContainerLimits) -> ContainerLimits:
        """The task's limits, or the compose file's where it changes them."""
        return ContainerLimits(
            self.main.cpus or task.cpus, self.main.memory or task.memory, self.main.pids or task.pids
        )

    def host_options(self, way_out: bool) -> dict[str, Any]:
        """Host config options besides a Harbor task's (``mounts`` to add to its own); resolver options
        that fail fast when the container has no way out (*way_out*: it joins the bridge)."""
        options = host_options(self.main, self.project.volumes)
        for key in _NOT_FOR_MAIN:
            options.pop(key, None)
        options["dns_opt"] = None if way_out else NO_WAY_OUT_DNS
        return options
