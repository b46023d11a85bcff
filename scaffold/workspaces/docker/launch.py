"""The launch of a trial's container: its options, its creation and start, its attachment to the workspace.

A container is made in two steps so that the standby (:mod:`.standby`) can take the second off the trial's
critical path: :meth:`Launcher.spec` decides everything (image, mounts, limits, network, environment,
labels, name) with no API call beyond building a host config; :func:`launch` then creates and starts it
through whichever client it is given (the trial's, or the background thread's own). :meth:`Launcher.attach`
makes the running container the workspace's: its model (made from the create response, not an inspect),
its keeper, and the host's CA bundle in a Harbor task's container. A fresh container and a standby's
both start a bind-mounted workspace with a fresh copy of the environment's files.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.agent_layer import AgentMount
from scaffold.workspaces.docker.copy_mode import put_absolute
from scaffold.workspaces.docker.host_trust import HOST_CA_PATH, ca_environment
from scaffold.workspaces.docker.keeper import CONTROL, KEEPER_SCRIPT, NO_DNS, Keeper
from scaffold.workspaces.docker.network import AgentNetworking
from scaffold.workspaces.docker.sessions import LABEL, OWNER, Session, remove_container
from scaffold.workspaces.docker.task_images import PreparedImage
from scaffold.workspaces.docker.workspace import ROOT, DockerWorkspace, Phase

__all__ = ["AgentLayers", "Launcher", "container_name", "launch"]


@dataclass(frozen=True, slots=True)
class _Spec:
    """A container to create: for which trial, from which image, its name and the create call's options."""

    trial_key: str
    image: str
    name: str
    options: dict[str, Any]


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


def launch(api: Any, spec: _Spec) -> dict[str, str]:
    """Create and start the container of *spec* through *api*: its id and name."""
    try:
        created = api.create_container(spec.image, None, name=spec.name, **spec.options)
    except Exception as exc:
        raise WorkspaceError(f"cannot create a container from {spec.image} for {spec.trial_key}: {exc}") from None
    try:
        api.start(created["Id"])
    except BaseException as exc:
        remove_container(api, created["Id"])
        if isinstance(exc, Exception):
            raise WorkspaceError(f"cannot start the container of {spec.trial_key}: {exc}") from None
        raise
    return {"Id": created["Id"], "Name": f"/{spec.name}"}


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
    or None) goes into Harbor tasks' containers, *layers* and *image_of* are read at each launch (filled in
    by the backend's preparation), *stream_api* gives the client a container's keeper talks through."""

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

        image = self._image_of(workspace.task)
        layers = self._layers
        agent = layers.agent if phase == "agent" else None
        network = workspace.network and phase == "agent"
        mode = self._network_mode(workspace, network)
        internal = network and self._networking.host_only  # no name resolves there: see keeper.NO_DNS
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
        try:
            config = self._host_config(workspace, mounts, mode, network)
        except Exception as exc:
            raise WorkspaceError(f"cannot configure the container of {workspace.trial_key}: {exc}") from None
        return _Spec(
            workspace.trial_key,
            image.tag,
            container_name(workspace, phase),
            {
                # The keeper as the entrypoint: an image of its own (Harbor's) may declare one, which would
                # otherwise get the keeper as its arguments.
                "entrypoint": ["/bin/sh", "-c", KEEPER_SCRIPT, "comet-keeper", *([NO_DNS] if internal else [])],
                "labels": self.labels(workspace, phase),
                "working_dir": workspace.root,
                "environment": env,
                "stdin_open": True,
                "host_config": config,
            },
        )

    def attach(self, workspace: DockerWorkspace, created: Mapping[str, str], phase: Phase) -> None:
        """Make *created* the container of *workspace*: its model, its keeper, the host's CA bundle."""
        workspace.container = self._client.containers.prepare_model(dict(created))
        if workspace.task.harbor is not None and self._host_ca is not None:
            self._put_host_ca(created["Id"])
        control = workspace.control if self.keeper_commands else None
        workspace.keeper = Keeper(self._stream_api(), created["Id"], control)
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

    def _host_config(self, workspace: DockerWorkspace, mounts: list[Any], mode: str, network: bool) -> Any:
        limits = workspace.task.spec.environment
        return self._api.create_host_config(
            mounts=mounts,
            network_mode=mode,
            dns_opt=self._networking.dns_options() if network else None,
            nano_cpus=int(min(limits.cpus, self._cpus) * 1e9),
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",  # the same as the memory: no swap on top
            pids_limit=limits.pids_limit,
            init=True,  # reaps the orphans of killed commands
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
        # Harbor's images are run as they are: their own locale and bytecode habits, plus the task's
        # [environment.env]; no workspace variable of ours is needed by their scripts.
        env = {"COMET_WORKSPACE": workspace.root, **dict(harbor.environment_env)}
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
