"""The launch of a trial's container: its options, its creation and start, its attachment to the workspace.

A container is made in two steps so that the standby (:mod:`.standby`) can take the second off the trial's
critical path: :meth:`Launcher.spec` decides everything (image, mounts, limits, network, environment,
labels, name) with no API call beyond building a host config; :func:`launch` then creates and starts it
through whichever client it is given (the trial's, or the background thread's own). :meth:`Launcher.attach`
makes the running container the workspace's: its model (made from the create response, not an inspect),
its keeper, and the host's CA bundle in a Harbor task's container. A fresh container and a standby's
both start a bind-mounted workspace with a fresh copy of the environment's files.

A Harbor task's container also starts its image's ENTRYPOINT beside the keeper, with Harbor's command
(:func:`.keeper.service_command`), so a service the entrypoint starts runs as it does with Harbor. A task
with a compose file gets its services first (:mod:`.compose`): the container is then made on the trial's
network as ``main`` (its compose fields applied), joins the agent's network as a second one, and the
keeper leaves its resolver alone (the services are found by name through the engine's).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from scaffold.catalog.compose_model import Service
from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker import compose
from scaffold.workspaces.docker.agent_layer import AgentMount
from scaffold.workspaces.docker.compose_main import ContainerLimits, MainContainer, main_service
from scaffold.workspaces.docker.copy_mode import put_absolute
from scaffold.workspaces.docker.host_trust import HOST_CA_PATH, ca_environment
from scaffold.workspaces.docker.keeper import CONTROL, Keeper, keeper_entrypoint, service_command
from scaffold.workspaces.docker.network import AgentNetworking
from scaffold.workspaces.docker.sessions import LABEL, OWNER, Session, remove_container
from scaffold.workspaces.docker.task_images import PreparedImage
from scaffold.workspaces.docker.workspace import ROOT, DockerWorkspace, Launched, Phase

__all__ = ["AgentLayers", "Launcher", "container_name", "launch"]


@dataclass(frozen=True, slots=True)
class _Spec:
    """A container to create: for which trial, from which image, its name and the create call's options;
    for a compose task also its services, the networks it joins after its own, what is copied in."""

    trial_key: str
    image: str
    name: str
    options: dict[str, Any]
    project: compose.ProjectSpec | None = None
    networks: tuple[str, ...] = ()
    copies: tuple[tuple[Path, str], ...] = ()


@dataclass(slots=True)
class AgentLayers:
    """What a container of the agent's phase mounts read-only, as the backend's preparation installed it:
    the agent CLI, the Node.js an npm CLI runs on, the CLI's compile cache; each with its volume in copy
    mode (None: its host folder is bind-mounted)."""

    agent: AgentMount | None = None
    agent_volume: str | None = None
    node: AgentMount | None = None
    """The Node.js an npm agent CLI runs on (agent_layer.node_runtime): mounted in every agent phase; on
    PATH (last) only in images that have none (Harbor tasks')."""
    node_volume: str | None = None
    cache: tuple[AgentMount, str | None] | None = None  # the CLI's compile cache and its volume


def launch(api: Any, spec: _Spec) -> Launched:
    """Create and start the container of *spec* through *api*, after its compose services if it has any:
    its id, name and services. Nothing it made is left when it fails (or is interrupted)."""
    services = compose.start(api, spec.project) if spec.project is not None else None
    container: str | None = None
    try:
        try:
            container = api.create_container(spec.image, None, name=spec.name, **spec.options)["Id"]
        except Exception as exc:
            raise WorkspaceError(f"cannot create a container from {spec.image} for {spec.trial_key}: {exc}") from None
        try:
            for network in spec.networks:
                api.connect_container_to_network(container, network)
            for source, target in spec.copies:
                compose.put_path(api, container, source, target)
            api.start(container)
        except Exception as exc:
            raise WorkspaceError(f"cannot start the container of {spec.trial_key}: {exc}") from None
    except BaseException:
        if container is not None:
            with contextlib.suppress(Exception):
                remove_container(api, container)
        if services is not None:
            with contextlib.suppress(Exception):
                compose.remove(api, services)
        raise
    return Launched(container, f"/{spec.name}", services)


def container_name(workspace: DockerWorkspace, kind: str) -> str:
    """A unique engine name for a container (or volume) of *workspace*: ``comet-<trial>-<kind>-<hex>``."""
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", workspace.trial_key).strip("-.")[:80]
    return f"comet-{slug}-{kind}-{uuid.uuid4().hex[:6]}"


def _mount(layer: AgentMount, volume: str | None) -> Any:
    """A read-only mount of an agent layer: its volume (copy mode), else its host folder."""
    from docker.types import Mount

    if volume is not None:
        return Mount(layer.target, volume, type="volume", read_only=True, no_copy=True)
    return Mount(layer.target, str(layer.host), type="bind", read_only=True)


class Launcher:
    """Makes the containers of one backend's workspaces on its engine (*client*, *api*): *networking* is the
    agent's network, *session* labels them, *cpus* caps a task's limit, *host_ca* (the host's CA bundle,
    or None) goes into Harbor tasks' containers, *layers*, *image_of* and *services_of* (a compose task's
    sidecar images) are read at each launch (filled in by the backend's preparation), *stream_api* gives
    the client a container's keeper talks through."""

    def __init__(
        self,
        client: Any,
        api: Any,
        *,
        networking: AgentNetworking,
        session: Session,
        cpus: float,
        host_ca: Path | None,
        layers: AgentLayers,
        image_of: Callable[[Task], PreparedImage],
        services_of: Callable[[Task], Mapping[str, str]],
        stream_api: Callable[[], Any],
    ) -> None:
        self._client = client
        self._api = api
        self._networking = networking
        self._session = session
        self._cpus = cpus
        self._host_ca = host_ca
        self._layers = layers
        self._image_of = image_of
        self._services_of = services_of
        self._stream_api = stream_api
        self.keeper_commands = True
        """Commands go through the keeper (bind mode) until that proves impossible on this engine."""

    def start(self, workspace: DockerWorkspace, phase: Phase) -> None:
        """Create and start the workspace's container (two API calls: the model is made from the create
        response, not from an inspect). The keeper is its main process; stdin stays open for it."""
        self.attach(workspace, launch(self._api, self.spec(workspace, phase=phase)), phase)

    def spec(self, workspace: DockerWorkspace, *, phase: Phase) -> _Spec:
        """What the container of *workspace* is created with; no API call beyond building a host config,
        so a standby's can be made here and launched by the background thread."""
        from docker.types import Mount

        task = workspace.task
        image = self._image_of(task)
        layers = self._layers
        agent = layers.agent if phase == "agent" else None
        network = workspace.network and phase == "agent"
        mode = self._network_mode(workspace, network)
        main = main_service(task)
        composed = self._main_container(workspace, main)
        # No name resolves on the host-only network (see keeper.NO_DNS), except a compose task's services,
        # which the engine's resolver answers for: that container keeps it.
        internal = network and self._networking.host_only and composed is None
        mounts: list[Any] = []
        if workspace.native:
            pass  # the image's own file system is the workspace
        elif workspace.volume is not None:
            mounts = [Mount(ROOT, workspace.volume, type="volume", no_copy=True)]
        else:
            mounts = [Mount(ROOT, str(workspace.host_path.absolute()), type="bind")]
        if workspace.control is not None:
            mounts.append(Mount(CONTROL, str(workspace.control.absolute()), type="bind"))
        env = self._environment(workspace)
        if agent is not None:
            mounts.append(_mount(agent, layers.agent_volume))
            if layers.node is not None:
                mounts.append(_mount(layers.node, layers.node_volume))
            if layers.cache is not None:
                mounts.append(_mount(*layers.cache))
            node = layers.node if workspace.native else None  # on PATH only where the image has no node
            env["PATH"] = ":".join([*agent.bin_dirs, image.path, *(node.bin_dirs if node else ())])
        if network:
            env.update(self._networking.proxy_environment())
        networks: tuple[str, ...] = ()
        options: dict[str, Any] = {}
        if composed is not None:
            env = composed.environment(env)
            networks, mode = composed.networks(mode), composed.project.network
            options = composed.create_options(self._api)
        try:
            config = self._host_config(workspace, mounts, mode, network, composed, "bridge" in networks)
        except Exception as exc:
            raise WorkspaceError(f"cannot configure the container of {workspace.trial_key}: {exc}") from None
        start = service_command(image.entrypoint if main.entrypoint is None else main.entrypoint, main.command)
        return _Spec(
            workspace.trial_key,
            image.tag,
            container_name(workspace, phase),
            {
                # The keeper as the entrypoint: an image of its own (Harbor's) may declare one, which would
                # otherwise get the keeper as its arguments; it starts that one beside itself.
                "entrypoint": keeper_entrypoint(no_dns=internal, start=start if task.harbor is not None else ()),
                "labels": {**dict(main.labels), **self.labels(workspace, phase)},
                "working_dir": workspace.root,
                "environment": env,
                "stdin_open": True,
                "host_config": config,
                **options,
            },
            composed.project if composed is not None else None,
            networks,
            tuple((task.environment_dir / c.source, c.target) for c in main.copies),
        )

    def _main_container(self, workspace: DockerWorkspace, main: Service) -> MainContainer | None:
        """A compose task's main container with its services planned for this trial; None without a
        compose file."""
        task = workspace.task
        spec = task.harbor.compose if task.harbor is not None else None
        if spec is None:
            return None
        project = compose.plan(
            self._api,
            spec,
            self._services_of(task),
            labels=self.labels(workspace, "compose"),
            name=lambda kind: container_name(workspace, kind),
            environment_dir=task.environment_dir,
            pids_limit=task.spec.environment.pids_limit,
            task=task.name,
        )
        return MainContainer(project, main, spec.addresses())

    def attach(self, workspace: DockerWorkspace, created: Launched, phase: Phase) -> None:
        """Make *created* the container of *workspace*: its model, its services, its keeper, the host's CA
        bundle."""
        workspace.container = self._client.containers.prepare_model({"Id": created.id, "Name": created.name})
        workspace.services = created.services
        if workspace.task.harbor is not None and self._host_ca is not None:
            self._put_host_ca(created.id)
        control = workspace.control if self.keeper_commands else None
        workspace.keeper = Keeper(self._stream_api(), created.id, control)
        workspace.phase = phase

    def labels(self, workspace: DockerWorkspace, phase: str) -> dict[str, str]:
        """The labels of a container (or volume) of *workspace*: owner, session, experiment, trial, task, phase."""
        return {
            **OWNER,
            **self._session.labels(),
            f"{LABEL}.experiment": workspace.trial_key.split("/", 1)[0],
            f"{LABEL}.trial": workspace.trial_key,
            f"{LABEL}.task": workspace.task.name,
            f"{LABEL}.phase": phase,
        }

    def create_volume(self, workspace: DockerWorkspace) -> str:
        """The volume that holds a copy-mode workspace's ``/workspace``: its name."""
        name = container_name(workspace, "ws")
        try:
            self._api.create_volume(name, labels=self.labels(workspace, "workspace"))
        except Exception as exc:
            raise WorkspaceError(f"cannot create the volume of {workspace.trial_key}: {exc}") from None
        return name

    def _host_config(
        self,
        workspace: DockerWorkspace,
        mounts: list[Any],
        mode: str,
        network: bool,
        composed: MainContainer | None,
        way_out: bool,
    ) -> Any:
        task = workspace.task.spec.environment
        limits = ContainerLimits(task.cpus, f"{task.memory_mb}m", task.pids_limit)
        extra: dict[str, Any] = {"dns_opt": self._networking.dns_options() if network else None}
        if composed is not None:
            limits = composed.limits(limits)
            extra = composed.host_options(way_out)
            mounts = [*mounts, *extra.pop("mounts")]
        return self._api.create_host_config(
            mounts=mounts,
            network_mode=mode,
            nano_cpus=int(min(limits.cpus, self._cpus) * 1e9),
            mem_limit=limits.memory,
            memswap_limit=limits.memory,  # the same as the memory: no swap on top
            pids_limit=limits.pids,
            init=True,  # reaps the orphans of killed commands
            **extra,
        )

    def _network_mode(self, workspace: DockerWorkspace, network: bool) -> str:
        harbor = workspace.task.harbor
        if harbor is not None and harbor.allow_internet and not network:
            # The task allows the internet (Harbor's default) and the agent needs none of ours (oracle,
            # nop): the container gets the engine's default bridge, as Harbor gives it, for solve.sh and the
            # verifier. An agent with a model endpoint keeps its endpoint-only network while it works;
            # validation then joins the bridge (DockerBackend.begin_validation).
            return "bridge"
        return self._networking.mode() if network else "none"

    def _environment(self, workspace: DockerWorkspace) -> dict[str, str]:
        harbor = workspace.task.harbor
        if harbor is None:
            return {"COMET_WORKSPACE": workspace.root, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        # Harbor's images are run as they are: their own locale and bytecode habits, plus the compose file's
        # environment of the main service and the task's [environment.env]; no workspace variable of ours
        # is needed by their scripts.
        main = harbor.compose.main.environment if harbor.compose is not None else ()
        env = {"COMET_WORKSPACE": workspace.root, **dict(main), **dict(harbor.environment_env)}
        if self._host_ca is not None:  # pip, uv, curl and npm in the task's commands trust the host's CA
            env.update(ca_environment())
        return env

    def _put_host_ca(self, container_id: str) -> None:
        """The host's CA bundle at HOST_CA_PATH in a Harbor task's container, also for a prebuilt
        ``docker_image`` that no build of ours put it into (behind a TLS-inspecting proxy, HTTPS from
        inside a container fails without it)."""
        assert self._host_ca is not None
        with tempfile.TemporaryDirectory(prefix="comet-ca-") as tmp:
            folder = Path(tmp) / PurePosixPath(HOST_CA_PATH).parent.name
            folder.mkdir()
            shutil.copyfile(self._host_ca, folder / PurePosixPath(HOST_CA_PATH).name)
            put_absolute(self._api, container_id, folder, str(PurePosixPath(HOST_CA_PATH).parent))
