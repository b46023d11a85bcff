"""The ``docker`` backend: one image per task, one container per trial, commands inside it.

Two ways for the trial's files to reach the container, decided once per session:

* **bind mode** (an engine on this machine, the default): a fresh host folder, as with the local
  backend, bind-mounted at ``/workspace``; copying in and out never goes through the engine;
* **copy mode** (a remote engine, or ``COMET_DOCKER_COPY=1``): the folder lives in a per-trial volume
  of the engine, files go in and out as tar archives (:mod:`.copy_mode`), and a kept workspace is
  copied out to the same host folder before the container goes.

The container's main process is a small shell (the keeper, :mod:`.keeper`) under Docker's init. In bind
mode it starts the trial's commands itself (~50 ms less per command than an ``exec``); in copy mode, or
whenever it cannot, a command is an ``exec`` (:mod:`.exec`). Either way the output goes to host files
while the command runs, and there is a time limit.

Decisions, each explained where it is implemented:

* agent CLIs are installed once on the host and mounted read-only; in copy mode, copied once per
  engine into a volume mounted read-only (:mod:`.agent_layer`);
* the agent's container joins the network its endpoint needs, and only that (:mod:`.network`);
* a command's whole process tree is killed inside the container by an environment marker, also when
  it exits normally (the wrapper of :mod:`.exec`, also for the keeper's commands);
* validation (strict) runs in the agent's container once the keeper has ended every other process and
  the container has left its network (:meth:`DockerBackend.begin_validation`);
* containers are removed in a background thread; labels name their session, and whatever a dead
  session left is swept (:mod:`.disposal`, :mod:`.sessions`);
* the same thread starts the next trial's container while a trial runs, and the next trial of the same
  task takes it (:mod:`.standby`);
* a Harbor task with a compose file gets its services on a network of the trial's own, started before
  its container and removed with it; that container is the compose file's ``main`` service
  (:mod:`.compose`, :mod:`.compose_images`).

:class:`DockerBackend` composes parts that each live in a module of their own: the task images
(:mod:`.task_images`), the launch of a container (:mod:`.launch`), the standby (:mod:`.standby`) and
the disposal of containers (:mod:`.disposal`). What stays here is the Backend contract itself, the choice
of bind or copy mode, the agent layer's preparation, and validation's takeover of the agent's container.

Only the Docker SDK talks to the engine (:mod:`.engine`): the *engine* given (one of a pool,
:mod:`scaffold.workspaces.engines`), else ``DOCKER_HOST``. Work done once per engine (task images, the
agent volume) is locked per engine, so two engines of a pool build side by side.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import InstallSpec, ValidationPolicy, Workspace
from scaffold.workspaces.docker.agent_layer import (
    ENABLE_CACHE_FILE,
    AgentMount,
    agent_volume,
    compile_cache,
    install_agent,
    native_addons,
    node_runtime,
)
from scaffold.workspaces.docker.base_image import BASE_TAG
from scaffold.workspaces.docker.build_failures import FailedBuilds
from scaffold.workspaces.docker.compose_images import ServiceImages, image_maker
from scaffold.workspaces.docker.compose_main import main_service
from scaffold.workspaces.docker.copy_mode import ContainerFiles, copy_from_env, engine_sees
from scaffold.workspaces.docker.disposal import Disposal
from scaffold.workspaces.docker.egress import Refusal
from scaffold.workspaces.docker.engine import connect
from scaffold.workspaces.docker.exec import quick_exec
from scaffold.workspaces.docker.host_trust import host_ca_bundle
from scaffold.workspaces.docker.images import DEFAULT_BUILD_TIMEOUT_S
from scaffold.workspaces.docker.keeper import make_control
from scaffold.workspaces.docker.launch import AgentLayers, Launcher
from scaffold.workspaces.docker.network import AgentNetworking
from scaffold.workspaces.docker.sessions import LABEL, OWNER, Reaper, Session, remove_volume, sweep
from scaffold.workspaces.docker.standby import Standbys, Unknown, standby_from_env
from scaffold.workspaces.docker.task_images import PreparedImage, TaskImages
from scaffold.workspaces.docker.workspace import ROOT, DockerWorkspace
from scaffold.workspaces.engines import Engine, default_engine
from scaffold.workspaces.files import fresh_copy, node_script, remove_empty_parents
from scaffold.workspaces.image_aliases import normalise_ref
from scaffold.workspaces.owners import OwnedFolders

__all__ = ["DockerBackend"]


def _resolved(mount: AgentMount, rel: Path) -> Path | None:
    """The file *rel* of an agent-layer folder with its symlinks followed, relative to the folder; None
    when it does not exist or leads out of the folder."""
    try:
        return (mount.host / rel).resolve(strict=True).relative_to(mount.host.resolve())
    except (OSError, ValueError):
        return None


def _direct(api: Any) -> Any:
    """Stop *api* from looking HTTP proxies up in the environment on every request (requests does, unless
    told not to: ~1 ms of CPU per call, a dozen calls per trial) when the engine is reached through a
    unix socket, a named pipe or ssh (``http+docker://`` URLs), which never go through a proxy."""
    if str(api.base_url).startswith("http+docker://"):
        api.trust_env = False
    return api


class DockerBackend:
    """Workspaces in Docker containers. *network*: the agent's container gets a network (to reach a model
    endpoint); otherwise, and always for validation, it has no network at all. *network_scope* ``host``
    puts it on an internal network whose only reachable peer is this machine (its gateway), for a model
    endpoint served here; ``internet`` is for a provider elsewhere: with *egress* (its ``host:port``
    endpoints) the container goes on that internal network too and reaches those endpoints through the
    egress proxy only (:mod:`.network`); without, it gets the default bridge. *copy*: force copy mode
    (True) or bind mode (False); None reads ``COMET_DOCKER_COPY``, else asks the engine. *session_token*:
    the token every process of the session shares, under which a task image that cannot be built is
    built once (:mod:`.build_failures`); None: this process's own.

    It is the :class:`~scaffold.workspaces.docker.workspace.ContainerHost` of its workspaces: the public
    members below the contract's line are what a DockerWorkspace asks of it."""

    name = "docker"

    def __init__(
        self,
        workspace_root: Path,
        *,
        network: bool = False,
        network_scope: Literal["host", "internet"] = "internet",
        agent_install: InstallSpec | None = None,
        base_image: str = BASE_TAG,
        build_timeout: float = DEFAULT_BUILD_TIMEOUT_S,
        agent_cache: Path | None = None,
        copy: bool | None = None,
        egress: Sequence[str] = (),
        image_aliases: Mapping[str, str] | None = None,
        engine: Engine | None = None,
        image_sources: Sequence[Engine] = (),
        standby: bool | None = None,
        session_token: str | None = None,
    ) -> None:
        self.docker_engine = engine or default_engine(os.environ)
        """Where the containers run: one engine of a pool, else the environment's (``DOCKER_HOST``)."""
        self.workspace_root = workspace_root
        self._owned = OwnedFolders(workspace_root)
        """Owner marks on the workspace and control folders: a killed session's are swept by the next."""
        self.network = network
        self._agent_install = agent_install
        self._agent_cache = agent_cache
        self.copy_mode: bool | None = copy if copy is not None else copy_from_env()
        self._copy_decided = copy is not None
        self.client = connect(self.docker_engine)
        """The engine's high-level client (``docker.DockerClient``)."""
        self._host_ca = host_ca_bundle()
        """The host's CA bundle, when it has one: put into Harbor tasks' containers (launch.Launcher)."""
        self._api = _direct(self.client.api)  # the low-level client: one request per call, no model inspects
        self._stream_client: Any = None
        self.session = Session.current()
        failed = FailedBuilds(session_token or self.session.id)
        self._images = TaskImages(
            self.client,
            self.docker_engine,
            base_image=base_image,
            build_timeout=build_timeout,
            image_aliases={normalise_ref(ref): local for ref, local in (image_aliases or {}).items()},
            image_sources=image_sources,
            agent_key=agent_install.key if agent_install else "none",
            failed=failed,
        )
        self.networking = AgentNetworking(
            self.client,
            self._api,
            scope=network_scope,
            endpoints=egress,
            engine=self.docker_engine,
            relay_image=self._images.relay_image,
            labels=self.session.labels(),
        )
        self._layers = AgentLayers()
        self._agent_ready = False
        self._node_ready = False
        self._launcher: tuple[str, list[str]] | None = None  # the npm CLI's name, how the container starts it
        self._workspaces: list[DockerWorkspace] = []
        self._reaper = Reaper(lambda: _direct(connect(self.docker_engine).api))
        info = self.client.info()
        self._cpus = float(info.get("NCPU") or os.cpu_count() or 1)
        self._architecture = str(info.get("Architecture") or "x86_64")
        self._services = ServiceImages(
            image_maker(
                self.client,
                self.docker_engine,
                aliases=self._images.image_aliases,
                base_image=base_image,
                build_timeout=build_timeout,
                fetch=self._images.fetch_image,
                failed=failed,
            ),
            architecture=self._architecture,
            main_of=lambda task: self._images.of(task).tag,
        )
        """A compose task's sidecar images (:mod:`.compose_images`)."""
        self._containers = Launcher(
            self.client,
            self._api,
            networking=self.networking,
            session=self.session,
            cpus=self._cpus,
            host_ca=self._host_ca,
            layers=self._layers,
            image_of=self._images.of,
            services_of=self._services.of,
            stream_api=self.stream_api,
        )
        self._disposal = Disposal(
            self.client,
            self._api,
            session=self.session.id,
            reaper=self._reaper,
            owned=self._owned,
            workspace_root=workspace_root,
            start=self._containers.start,
        )
        self._standbys = Standbys(
            self._api,
            enabled=standby if standby is not None else standby_from_env(),
            launcher=self._containers,
            reaper=self._reaper,
            owned=self._owned,
            workspace_root=workspace_root,
            make_workspace=self._workspace,
            remove_control=self._disposal.remove_control,
        )
        with contextlib.suppress(WorkspaceError):  # a container that resists removal must not stop the run
            sweep(self.client)
        atexit.register(self._disposal.remove_session_objects)

    @property
    def engine(self) -> str:
        """The URL of the engine the workspaces run on (recorded with each trial)."""
        return self.docker_engine.url

    def start_slots(self) -> tuple[str, int]:
        """The engine's host runs the containers, hence the agents: its URL and its CPUs."""
        return (self.docker_engine.url, int(self._cpus))

    @property
    def image_sources(self) -> tuple[Engine, ...]:
        """Engines to copy a missing base image from (a pool's others), once per engine, before a build."""
        return self._images.image_sources

    @property
    def base_image(self) -> str:
        """The image our own tasks' Dockerfiles build on (``FROM ${BASE_IMAGE}``)."""
        return self._images.base_image

    @property
    def build_timeout(self) -> float:
        """How long a task image's build may take before it is cancelled."""
        return self._images.build_timeout

    @property
    def image_aliases(self) -> dict[str, str]:
        """``--image-alias``: the images Harbor-format Dockerfiles name, mapped to local ones (normalised keys)."""
        return self._images.image_aliases

    @property
    def standby(self) -> bool:
        """Start the next trial's container while a trial runs (:mod:`.standby`)."""
        return self._standbys.enabled

    @standby.setter
    def standby(self, value: bool) -> None:
        self._standbys.enabled = value

    @property
    def keeper_commands(self) -> bool:
        """Commands go through the keeper (bind mode) until that proves impossible on this engine."""
        return self._containers.keeper_commands

    @keeper_commands.setter
    def keeper_commands(self, value: bool) -> None:
        self._containers.keeper_commands = value

    @property
    def egress(self) -> tuple[str, ...]:
        """The endpoints an agent's container reaches through the egress proxy; empty without a proxy."""
        return self.networking.egress

    @property
    def network_name(self) -> str:
        """The network an agent's container joins (``bridge`` or the host-only network)."""
        return self.networking.name

    @property
    def egress_refusals(self) -> list[Refusal]:
        """Connections the egress proxy refused so far (targets other than the model endpoint)."""
        return self.networking.refusals

    @property
    def _pythonpath(self) -> tuple[str, ...]:
        return self._layers.agent.pythonpath if self._layers.agent else ()

    # -- what a DockerWorkspace asks of its backend (ContainerHost)

    @property
    def api(self) -> Any:
        return self._api

    def stream_api(self) -> Any:
        """The low-level client for exec output streams: no read timeout (a command may be silent)."""
        if self._stream_client is None:
            self._stream_client = _direct(connect(self.docker_engine, timeout=None).api)
        return self._stream_client

    def keeper_cannot_run(self) -> None:
        self.keeper_commands = False

    def gateway(self, workspace: DockerWorkspace) -> str | None:
        return self.networking.gateway(str(workspace.container_id))

    def command_env(self, workspace: DockerWorkspace, env: Mapping[str, str]) -> dict[str, str]:
        full = dict(env)
        if workspace.phase == "agent":
            if self._pythonpath:
                full["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), *self._pythonpath])
        else:
            if "PATH" not in env:  # validation: the agent's bin folders leave PATH (the mount stays, read-only)
                full["PATH"] = self._image_of(workspace.task).path
            if workspace.native and workspace.network:
                # A Harbor verifier on the bridge goes direct, not through the agent's egress proxy (which
                # lets nothing but the model endpoint through).
                full = {**self.networking.proxy_reset(), **full}
        return full

    # -- images, bind or copy mode, the agent layer

    def prepare(self, task: Task) -> None:
        """Build (or reuse) the task's image (and its compose services'), decide bind or copy mode, install
        the agent CLI; once each."""
        image = self._images.prepare(task).tag
        self._services.prepare(task)
        if not self._copy_decided:
            self.copy_mode = self.copy_mode if self.copy_mode is not None else not self._engine_sees_host(image)
            self._copy_decided = True
        layers = self._layers
        if not self._agent_ready and self._agent_install is not None:
            layers.agent = install_agent(self._agent_install, cache_root=self._agent_cache)
            if layers.agent is not None and self.copy_mode:
                layers.agent_volume = agent_volume(self._api, layers.agent, image, self.docker_engine)
            self._agent_ready = True
        if not self._node_ready and self._agent_install is not None:
            self._prepare_node(image, required=task.format == "harbor")

    def _prepare_node(self, image: str, *, required: bool) -> None:
        """Node.js for an npm agent CLI, whatever the image has, and the CLI's compile cache. Why not the
        image's own ``node``: Debian bookworm's (18) runs Claude Code's start-up 25% slower than the official
        20 build (``claude --version``: 0.58-0.64 s against 0.45-0.49 s in the same container), 0.3-0.4 s of
        every trial; a task's image should not decide how fast the agent under test runs; and our Node.js
        (24) loads the CLI from a compile cache filled once per machine (agent_layer.compile_cache), 0.3 CPU
        s less a trial. The image's ``node`` stays first on PATH for what the agent runs in the task. Where
        this Node cannot be installed, an image with a ``node`` of its own runs the CLI on it (*required*
        is False), as before; a CLI with compiled addons keeps the image's ``node`` too."""
        self._node_ready = True
        layers = self._layers
        if self._agent_install is None or self._agent_install.kind != "npm" or layers.agent is None:
            return
        spec = node_runtime(self._architecture)
        if spec is None:
            return
        try:
            layers.node = install_agent(spec, cache_root=self._agent_cache)
            if layers.node is not None and self.copy_mode:
                layers.node_volume = agent_volume(self._api, layers.node, image, self.docker_engine)
        except WorkspaceError as exc:
            layers.node = None
            if required:
                self._node_ready = False  # the next Harbor task tries again: its image has no node of its own
                raise
            warnings.warn(f"the agent CLI runs on the image's own Node.js: {exc}", stacklevel=2)
            return
        if not native_addons(layers.agent.host):  # else its own node runs it: the image's, or ours on PATH
            self._launcher = self._node_launcher(self._agent_install.executable, image)

    def command_argv(self, workspace: DockerWorkspace, argv: Sequence[str]) -> list[str]:
        """*argv* as the container runs it: in the agent phase, the npm agent CLI named by its bare name
        (``claude``) is started on the harness's Node.js, ``<node> [--require <cache>] <its script>`` (see
        _prepare_node)."""
        if workspace.phase != "agent" or self._launcher is None or not argv or argv[0] != self._launcher[0]:
            return list(argv)
        return [*self._launcher[1], *argv[1:]]

    def _node_launcher(self, name: str, image: str) -> tuple[str, list[str]] | None:
        """``(name, [node, --require, <cache>/enable-cache.cjs, script])`` in the container for the npm CLI
        *name*; without the cache where it cannot be filled; None when *name* is not a Node script of the
        agent's package (it is then found on PATH as before)."""
        agent, node = self._layers.agent, self._layers.node
        assert agent is not None and node is not None
        script = _resolved(agent, Path("node_modules/.bin") / name)
        node_bin = _resolved(node, Path("node_modules/.bin/node"))
        if script is None or node_bin is None or not node_script(agent.host / script):
            return None
        argv = [f"{node.target}/{node_bin.as_posix()}", f"{agent.target}/{script.as_posix()}"]
        assert self._agent_install is not None
        key = f"{node.host.name} {self._agent_install.key}"
        try:
            cache = compile_cache(node, agent.host / script, key, cache_root=self._agent_cache)
            volume = agent_volume(self._api, cache, image, self.docker_engine) if self.copy_mode else None
        except WorkspaceError as exc:
            warnings.warn(f"the agent CLI starts without a compile cache: {exc}", stacklevel=2)
            return (name, argv)
        self._layers.cache = (cache, volume)
        return (name, [argv[0], "--require", f"{cache.target}/{ENABLE_CACHE_FILE}", argv[1]])

    def image_tag(self, task: Task) -> str:
        """``comet-eval/task-<name>:<hash>`` of the environment folder, base image id and agent key; for a
        Harbor-format task, of its build as :mod:`.harbor_image` makes it (``-without-skills`` variant)."""
        return self._images.image_tag(task)

    def fetch_image(self, tag: str) -> bool:
        """Make sure the engine has *tag*, copying it from one of :attr:`image_sources` when it does not
        (under the engine's lock: once per engine); False when it is not there and no source has it."""
        return self._images.fetch_image(tag)

    def _image_of(self, task: Task) -> PreparedImage:
        """The prepared image of *task* (its variant: with or without the environment's skills)."""
        return self._images.of(task)

    def _engine_sees_host(self, image: str) -> bool:
        """Whether the engine can bind-mount this machine's folders (else: copy mode), asked with a new,
        uniquely named folder. ~20 ms, once per session."""
        probe = (self.workspace_root / f".comet-probe-{uuid.uuid4().hex[:12]}").absolute()
        probe.mkdir(parents=True)
        try:
            return self._engine_sees(probe, image)
        finally:
            shutil.rmtree(probe, ignore_errors=True)
            remove_empty_parents(self.workspace_root, self.workspace_root.parent)

    def _engine_sees(self, folder: Path, image: str) -> bool:
        labels = {**OWNER, **self.session.labels(), f"{LABEL}.phase": "probe"}
        return engine_sees(self._api, folder, image, labels)

    # -- containers

    def expect(self, task: str | Unknown | None) -> None:
        self._standbys.expect(task)

    def create(self, task: Task, trial_key: str, *, network: bool | None = None) -> DockerWorkspace:
        self.prepare(task)
        network = self.network if network is None else network
        path = self.workspace_root / trial_key
        workspace = self._standbys.hand_over(task, trial_key, path, network) or self._fresh(
            task, trial_key, path, network
        )
        self._workspaces.append(workspace)
        self._standbys.follow(task, network)
        return workspace

    def _workspace(self, task: Task, trial_key: str, path: Path, network: bool) -> DockerWorkspace:
        native = task.format == "harbor"
        root = (main_service(task).working_dir or self._image_of(task).workdir) if native else ROOT
        return DockerWorkspace(
            self, task, trial_key, path, network=network, copy=bool(self.copy_mode), root=root, native=native
        )

    def _fresh(self, task: Task, trial_key: str, path: Path, network: bool) -> DockerWorkspace:
        workspace = self._workspace(task, trial_key, path, network)
        try:
            if workspace.native:
                shutil.rmtree(path, ignore_errors=True)  # nothing lives here until a kept copy comes out
            elif workspace.copy:
                shutil.rmtree(path, ignore_errors=True)  # a copy kept by an earlier run: not this trial's
                workspace.volume = self._containers.create_volume(workspace)
                assert isinstance(workspace.files, ContainerFiles)
                workspace.files.seed(task.environment_dir)  # queued: goes in with the first command
            else:
                self._owned.claim(path)  # copy mode keeps nothing on this machine until a kept copy comes out
                fresh_copy(task.environment_dir, path)
                workspace.control = make_control(self.workspace_root)
                self._owned.claim(workspace.control)
            self._containers.start(workspace, "agent")
        except BaseException:
            if workspace.volume is not None:
                remove_volume(self._api, workspace.volume)
            self._owned.remove(path)
            self._disposal.remove_control(workspace)
            raise
        return workspace

    # -- validation

    def begin_validation(self, workspace: DockerWorkspace, policy: ValidationPolicy) -> None:
        """Turn the agent's container into the validation container, or replace it when that fails.

        ``SHARED``: the container goes on as it is (processes, network); only the agent CLI leaves PATH.
        ``STRICT``: validation runs in the same container, as in Terminal-Bench and Harbor, rather than a
        fresh one (which cost ~250 ms to start plus ~55 ms to remove, per trial). What a fresh container
        guaranteed still holds: (a) the keeper ends every process but the init and itself, so nothing the
        agent started runs on (background servers, also those that shed the exec marker), before any
        validation file is copied in; (b) a container that had the bridge leaves it (a forced
        disconnect), so validation has no network; (c) the agent CLI leaves PATH. What differs: changes
        the agent made outside /workspace (installed packages, /tmp, its HOME) stay visible to
        validation, as they do with the local backend. When the keeper cannot answer or the disconnect
        fails, the container is replaced by a fresh one on the same files, without network, as before.
        """
        if workspace.phase != "agent" or workspace.container is None:
            return
        if policy is ValidationPolicy.SHARED:
            harbor = workspace.task.harbor
            if workspace.network and harbor is not None and harbor.allow_internet:
                self.networking.join_bridge(workspace.container.id)
                self._restore_dns(workspace)
            workspace.phase = "validation"
            return
        ok = workspace.keeper is not None and workspace.keeper.reset()
        if ok and workspace.network:
            ok = self.networking.leave(workspace.container.id)
        if ok:
            workspace.phase = "validation"
        else:
            self._disposal.replace_container(workspace, phase="validation")

    def _restore_dns(self, workspace: DockerWorkspace) -> None:
        """The engine's resolver again, for a container that now has a way out (keeper.NO_DNS)."""
        if not self.networking.host_only or workspace.container is None:
            return
        if workspace.keeper is not None and workspace.keeper.restore_dns():
            return
        # What the engine writes for a container on a user-defined network: its embedded resolver.
        script = "printf 'nameserver 127.0.0.11\\noptions ndots:0\\n' > /etc/resolv.conf"
        code, _, err = quick_exec(self._api, workspace.container.id, ["/bin/sh", "-c", script], "/")
        if code != 0:
            raise WorkspaceError(
                f"cannot give the container of {workspace.trial_key} its resolver back: {err[-300:]!r}"
            )

    def end_processes(self, workspace: DockerWorkspace) -> None:
        """End every process of the container when not even a killer exec can start (a fork bomb at the
        pids limit): the keeper's reset needs no new process; failing that, replace the container. A
        container that is gone or stopped (someone removed it, or killed its main process) is an error,
        not something to paper over with a new one."""
        if workspace.keeper is not None and workspace.keeper.reset():
            return
        from docker.errors import NotFound

        try:
            state = (self._api.inspect_container(workspace.container_id).get("State") or {}).get("Status")
        except NotFound:
            state = "gone"
        if state != "running":
            raise WorkspaceError(f"cannot end the processes in the container of {workspace.host_path}: it is {state}")
        if workspace.native:  # its files are the container's own: a replacement would start from the image
            raise WorkspaceError(f"cannot end the processes in the container of {workspace.trial_key}")
        self._disposal.replace_container(workspace, phase=workspace.phase)

    # -- the end

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        assert isinstance(workspace, DockerWorkspace)
        if sys.exc_info()[0] is not None:  # Ctrl-C, a stopped worker: no next trial will take the standby
            self._standbys.drop()
        try:
            self._disposal.destroy(workspace, keep=keep)
        finally:
            if workspace in self._workspaces:
                self._workspaces.remove(workspace)

    def drain(self) -> None:
        """Wait until the containers and volumes handed to the background removal are gone; the standby
        container, if any, goes too (nothing of the session is left running)."""
        self._standbys.drop()
        self._disposal.drain()

    def close(self) -> None:
        """Wait for the background removals, then remove every container and volume of this session
        (also ones a crash left untracked) and stale ones of dead sessions."""
        atexit.unregister(self._disposal.remove_session_objects)
        try:
            self._standbys.drop()
            self._disposal.close()
        finally:
            self.networking.close()
            self._workspaces.clear()
            remove_empty_parents(self.workspace_root, self.workspace_root.parent)
            if self._stream_client is not None:
                self._stream_client.close()
            self.client.close()
