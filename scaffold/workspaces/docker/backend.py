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
  session left is swept (:mod:`.sessions`);
* the same thread starts the next trial's container while a trial runs, and the next trial of the same
  task takes it (:mod:`.standby`).

Only the Docker SDK talks to the engine (:mod:`.engine`): the *engine* given (one of a pool,
:mod:`scaffold.workspaces.engines`), else ``DOCKER_HOST``. Work done once per engine (task images, the
agent volume) is locked per engine, so two engines of a pool build side by side.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from scaffold.catalog.tasks import HarborSettings, Task
from scaffold.errors import SkillLeakError, WorkspaceError
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
from scaffold.workspaces.docker.copy_mode import ContainerFiles, copy_from_env, engine_sees, put_absolute
from scaffold.workspaces.docker.egress import Refusal
from scaffold.workspaces.docker.engine import connect, engine_lock, image_id, state_dir
from scaffold.workspaces.docker.exec import quick_exec
from scaffold.workspaces.docker.harbor_image import (
    WITHOUT_SKILLS,
    find_skills,
    harbor_image,
    harbor_image_tag,
    plan_build,
)
from scaffold.workspaces.docker.host_trust import HOST_CA_PATH, ca_environment, host_ca_bundle
from scaffold.workspaces.docker.images import DEFAULT_BUILD_TIMEOUT_S, build_image, copy_image, task_image_tag
from scaffold.workspaces.docker.keeper import CONTROL, KEEPER_SCRIPT, NO_DNS, Keeper, make_control
from scaffold.workspaces.docker.network import AgentNetworking
from scaffold.workspaces.docker.sessions import LABEL, OWNER, Reaper, Session, remove_container, remove_volume, sweep
from scaffold.workspaces.docker.standby import (
    STANDBY_DELAY_S,
    STANDBY_FOLDER,
    STANDBY_WAIT_S,
    UNKNOWN,
    Standby,
    Unknown,
    standby_from_env,
    standby_key,
)
from scaffold.workspaces.docker.workspace import ROOT, DockerWorkspace, Phase
from scaffold.workspaces.engines import Engine, default_engine
from scaffold.workspaces.files import HostFiles, copy_tree, fresh_copy, node_script, remove_empty_parents
from scaffold.workspaces.fresh_copies import Copied
from scaffold.workspaces.image_aliases import normalise_ref
from scaffold.workspaces.owners import OwnedFolders

__all__ = ["DockerBackend"]


@dataclass(frozen=True, slots=True)
class _Spec:
    """A container to create: for which trial, from which image, its name and the create call's options."""

    trial_key: str
    image: str
    name: str
    options: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Image:
    tag: str
    path: str  # the image's PATH, to put agent bin folders in front of
    workdir: str = "/"  # the image's WORKDIR: a Harbor task's workspace root


def _resolved(mount: AgentMount, rel: Path) -> Path | None:
    """The file *rel* of an agent-layer folder with its symlinks followed, relative to the folder; None
    when it does not exist or leads out of the folder."""
    try:
        return (mount.host / rel).resolve(strict=True).relative_to(mount.host.resolve())
    except (OSError, ValueError):
        return None


def _variant(task: Task) -> str:
    """The key of a task's image: its name, and whether the environment's skills are left out."""
    return task.name + (WITHOUT_SKILLS if task.without_skills else "")


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
    (True) or bind mode (False); None reads ``COMET_DOCKER_COPY``, else asks the engine.

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
    ) -> None:
        self.docker_engine = engine or default_engine(os.environ)
        """Where the containers run: one engine of a pool, else the environment's (``DOCKER_HOST``)."""
        self.image_sources = tuple(image_sources)
        """Engines to copy a missing base image from (a pool's others), once per engine, before a build."""
        self.workspace_root = workspace_root
        self._owned = OwnedFolders(workspace_root)
        """Owner marks on the workspace and control folders: a killed session's are swept by the next."""
        self.network = network
        self._agent_install = agent_install
        self._agent_cache = agent_cache
        self.base_image = base_image
        self.build_timeout = build_timeout
        self.image_aliases = {normalise_ref(ref): local for ref, local in (image_aliases or {}).items()}
        """``--image-alias``: the images Harbor-format Dockerfiles name, mapped to local ones (normalised keys)."""
        self.copy_mode: bool | None = copy if copy is not None else copy_from_env()
        self._copy_decided = copy is not None
        self.client = connect(self.docker_engine)
        self._host_ca = host_ca_bundle()
        """The host's CA bundle, when it has one: put into Harbor tasks' containers (_put_host_ca)."""
        """The engine's high-level client (``docker.DockerClient``)."""
        self._api = _direct(self.client.api)  # the low-level client: one request per call, no model inspects
        self._stream_client: Any = None
        self.session = Session.current()
        self.networking = AgentNetworking(
            self.client,
            self._api,
            scope=network_scope,
            endpoints=egress,
            engine=self.docker_engine,
            relay_image=self._relay_image,
            labels=self.session.labels(),
        )
        self._images: dict[str, _Image] = {}  # by _variant(task)
        self._failed: dict[str, WorkspaceError] = {}
        self._skills_found: dict[str, tuple[str, ...]] = {}  # image id -> its SKILL.md files
        self._agent: AgentMount | None = None
        self._agent_ready = False
        self._agent_volume: str | None = None
        self._node: AgentMount | None = None
        """The Node.js an npm agent CLI runs on (agent_layer.node_runtime): mounted in every agent phase; on
        PATH (last) only in images that have none (Harbor tasks')."""
        self._node_volume: str | None = None
        self._node_ready = False
        self._launcher: tuple[str, list[str]] | None = None  # the npm CLI's name, how the container starts it
        self._cache: tuple[AgentMount, str | None] | None = None  # the CLI's compile cache and its volume
        self.keeper_commands = True
        """Commands go through the keeper (bind mode) until that proves impossible on this engine."""
        self._workspaces: list[DockerWorkspace] = []
        self.standby = standby if standby is not None else standby_from_env()
        """Start the next trial's container while a trial runs (:mod:`.standby`)."""
        self._standby: Standby | None = None
        self._next_task: str | Unknown | None = UNKNOWN  # expect(): the task of the trial after the next
        self._reaper = Reaper(lambda: _direct(connect(self.docker_engine).api))
        info = self.client.info()
        self._cpus = float(info.get("NCPU") or os.cpu_count() or 1)
        self._architecture = str(info.get("Architecture") or "x86_64")
        with contextlib.suppress(WorkspaceError):  # a container that resists removal must not stop the run
            sweep(self.client)
        atexit.register(self._remove_session_objects)

    @property
    def engine(self) -> str:
        """The URL of the engine the workspaces run on (recorded with each trial)."""
        return self.docker_engine.url

    def start_slots(self) -> tuple[str, int]:
        """The engine's host runs the containers, hence the agents: its URL and its CPUs."""
        return (self.docker_engine.url, int(self._cpus))

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
        return self._agent.pythonpath if self._agent else ()

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

    # -- images

    def prepare(self, task: Task) -> None:
        """Build (or reuse) the task's image, decide bind or copy mode, install the agent CLI; once each."""
        key = _variant(task)
        if key in self._failed:  # a broken build (or a skill leak) fails every trial at once, not after another build
            raise self._failed[key]
        if key not in self._images:
            try:
                self._images[key] = self._task_image(task)
            except WorkspaceError as exc:
                self._failed[key] = exc
                raise
        image = self._images[key].tag
        if not self._copy_decided:
            self.copy_mode = self.copy_mode if self.copy_mode is not None else not self._engine_sees_host(image)
            self._copy_decided = True
        if not self._agent_ready and self._agent_install is not None:
            self._agent = install_agent(self._agent_install, cache_root=self._agent_cache)
            if self._agent is not None and self.copy_mode:
                self._agent_volume = agent_volume(self._api, self._agent, image, self.docker_engine)
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
        if self._agent_install is None or self._agent_install.kind != "npm" or self._agent is None:
            return
        spec = node_runtime(self._architecture)
        if spec is None:
            return
        try:
            self._node = install_agent(spec, cache_root=self._agent_cache)
            if self._node is not None and self.copy_mode:
                self._node_volume = agent_volume(self._api, self._node, image, self.docker_engine)
        except WorkspaceError as exc:
            self._node = None
            if required:
                self._node_ready = False  # the next Harbor task tries again: its image has no node of its own
                raise
            warnings.warn(f"the agent CLI runs on the image's own Node.js: {exc}", stacklevel=2)
            return
        if not native_addons(self._agent.host):  # else its own node runs it: the image's, or ours on PATH
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
        assert self._agent is not None and self._node is not None
        script = _resolved(self._agent, Path("node_modules/.bin") / name)
        node = _resolved(self._node, Path("node_modules/.bin/node"))
        if script is None or node is None or not node_script(self._agent.host / script):
            return None
        argv = [f"{self._node.target}/{node.as_posix()}", f"{self._agent.target}/{script.as_posix()}"]
        assert self._agent_install is not None
        key = f"{self._node.host.name} {self._agent_install.key}"
        try:
            cache = compile_cache(self._node, self._agent.host / script, key, cache_root=self._agent_cache)
            volume = agent_volume(self._api, cache, image, self.docker_engine) if self.copy_mode else None
        except WorkspaceError as exc:
            warnings.warn(f"the agent CLI starts without a compile cache: {exc}", stacklevel=2)
            return (name, argv)
        self._cache = (cache, volume)
        return (name, [argv[0], "--require", f"{cache.target}/{ENABLE_CACHE_FILE}", argv[1]])

    def image_tag(self, task: Task) -> str:
        """``comet-eval/task-<name>:<hash>`` of the environment folder, base image id and agent key; for a
        Harbor-format task, of its build as :mod:`.harbor_image` makes it (``-without-skills`` variant)."""
        written = self._as_written(task)
        if written is not None:
            build = plan_build(written, aliases=self.image_aliases, base_image=self.base_image)
            with tempfile.TemporaryDirectory(prefix="comet-harbor-tag-") as tmp:
                return harbor_image_tag(self.client, written, build, Path(tmp))
        base = image_id(self.client, self.base_image)
        agent = self._agent_install.key if self._agent_install else "none"
        extra = {"base": base or f"missing:{self.base_image}", "agent": agent}
        return task_image_tag(task.name, task.environment_dir, self._dockerfile(task), extra)

    @staticmethod
    def _mount(layer: AgentMount, volume: str | None) -> Any:
        """A read-only mount of an agent layer: its volume (copy mode), else its host folder."""
        from docker.types import Mount

        if volume is not None:
            return Mount(layer.target, volume, type="volume", read_only=True, no_copy=True)
        return Mount(layer.target, str(layer.host), type="bind", read_only=True)

    def _network_mode(self, workspace: DockerWorkspace, network: bool) -> str:
        harbor = workspace.task.harbor
        if harbor is not None and harbor.allow_internet and not network:
            # The task allows the internet (Harbor's default) and the agent needs none of ours (oracle,
            # nop): the container gets the engine's default bridge, as Harbor gives it, for solve.sh and the
            # verifier. An agent with a model endpoint keeps its endpoint-only network while it works;
            # validation then joins the bridge (begin_validation).
            return "bridge"
        return self.networking.mode() if network else "none"

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

    def _image_of(self, task: Task) -> _Image:
        """The prepared image of *task* (its variant: with or without the environment's skills)."""
        return self._images[_variant(task)]

    def _dockerfile(self, task: Task) -> Path:
        return task.root / task.spec.environment.dockerfile

    def _as_written(self, task: Task) -> Task | None:
        """*task* as the Harbor build takes it when its Dockerfile is to be built as written: a Harbor task,
        or one of ours whose Dockerfile names its own base image instead of ``FROM ${BASE_IMAGE}`` (the
        original Comet eval's tasks say ``FROM python:3.12-slim``): then aliases, pulls, the host's CA
        bundle and proxies apply to it too. None for ours on the offline base, built exactly as before."""
        if task.harbor is not None:
            return task
        try:
            text = self._dockerfile(task).read_text(encoding="utf-8")
        except OSError:
            return None
        return None if "BASE_IMAGE" in text else dataclasses.replace(task, harbor=HarborSettings())

    def _task_image(self, task: Task) -> _Image:
        written = self._as_written(task)
        if written is not None:
            tag = harbor_image(
                self.client,
                written,
                aliases=self.image_aliases,
                base_image=self.base_image,
                build_timeout=self.build_timeout,
                engine=self.docker_engine,
                fetch=self.fetch_image,
            )
            if task.without_skills:
                self._check_no_skills(tag)
            return self._image_config(tag)
        self.fetch_image(self.base_image)
        tag = self.image_tag(task)
        safe = tag.replace("/", "_").replace(":", "_")
        with engine_lock(self.docker_engine, f"image-{safe}"):
            if image_id(self.client, tag) is None:
                log_path = state_dir() / "builds" / f"{safe}.log"
                try:
                    build_image(
                        context=task.environment_dir,
                        dockerfile=self._dockerfile(task),
                        tag=tag,
                        buildargs={"BASE_IMAGE": self.base_image},
                        labels={**OWNER, f"{LABEL}.task": task.name},
                        timeout=self.build_timeout,
                        log_path=log_path,
                        engine=self.docker_engine,
                    )
                except WorkspaceError as exc:
                    hint = ""
                    if image_id(self.client, self.base_image) is None:
                        hint = (
                            f"\n(the base image {self.base_image} is missing: build it with `comet images build-base`)"
                        )
                    raise WorkspaceError(f"task {task.name}: {exc}{hint}") from None
        return self._image_config(tag)

    def _relay_image(self) -> str:
        """The image of a remote engine's egress relay: the base image (it has python3), copied from
        another engine of the pool when missing."""
        if not self.fetch_image(self.base_image):
            raise WorkspaceError(
                f"the egress relay on {self.engine} needs the base image {self.base_image} there: build it "
                f"with `DOCKER_HOST={self.engine} comet images build-base`, or load it into that engine"
            )
        return self.base_image

    def fetch_image(self, tag: str) -> bool:
        """Make sure the engine has *tag*, copying it from one of :attr:`image_sources` when it does not
        (under the engine's lock: once per engine); False when it is not there and no source has it."""
        if image_id(self.client, tag) is not None:
            return True
        if not self.image_sources:
            return False
        with engine_lock(self.docker_engine, f"load-{tag}"):
            if image_id(self.client, tag) is not None:
                return True
            for source in self.image_sources:
                if source.url == self.docker_engine.url:
                    continue
                try:
                    client = connect(source, timeout=600)
                except WorkspaceError:
                    continue  # that engine is down: another may have it
                try:
                    if copy_image(client, self.client, tag):
                        return True
                finally:
                    client.close()
        return False

    def _image_config(self, tag: str) -> _Image:
        config = self.client.images.get(tag).attrs.get("Config") or {}
        env = config.get("Env") or []
        path = next((e.split("=", 1)[1] for e in env if e.startswith("PATH=")), "/usr/local/bin:/usr/bin:/bin")
        return _Image(tag, path, config.get("WorkingDir") or "/")

    def _check_no_skills(self, tag: str) -> None:
        """SkillLeakError when the image *tag* (meant to be without the task's skills) holds a SKILL.md;
        searched once per image id (a CONTROL image shared by tasks is searched once)."""
        key = image_id(self.client, tag) or tag
        if key not in self._skills_found:
            self._skills_found[key] = find_skills(self.client, tag)
        if self._skills_found[key]:
            raise SkillLeakError(tag, self._skills_found[key])

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
        self._next_task = task

    def create(self, task: Task, trial_key: str, *, network: bool | None = None) -> DockerWorkspace:
        self.prepare(task)
        network = self.network if network is None else network
        path = self.workspace_root / trial_key
        workspace = self._from_standby(task, trial_key, path, network) or self._fresh(task, trial_key, path, network)
        self._workspaces.append(workspace)
        following, self._next_task = self._next_task, UNKNOWN  # a hint is for one trial
        if following is UNKNOWN or following == task.name:  # not known: the same task, as with --count
            self._stand_by(task, network)
        return workspace

    @staticmethod
    def _noted(workspace: DockerWorkspace) -> Copied | None:
        """Where a bind-mounted workspace's copy notes what it copied (scaffold.workspaces.fresh_copies)."""
        if isinstance(workspace.files, HostFiles):
            workspace.files.copied = Copied()
            return workspace.files.copied
        return None

    def _workspace(self, task: Task, trial_key: str, path: Path, network: bool) -> DockerWorkspace:
        native = task.format == "harbor"
        root = self._image_of(task).workdir if native else ROOT
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
                workspace.volume = self._create_volume(workspace)
                assert isinstance(workspace.files, ContainerFiles)
                workspace.files.seed(task.environment_dir)  # queued: goes in with the first command
            else:
                self._owned.claim(path)  # copy mode keeps nothing on this machine until a kept copy comes out
                fresh_copy(task.environment_dir, path, copied=self._noted(workspace))
                workspace.control = make_control(self.workspace_root)
                self._owned.claim(workspace.control)
            self._start(workspace, phase="agent")
        except BaseException:
            if workspace.volume is not None:
                remove_volume(self._api, workspace.volume)
            self._owned.remove(path)
            self._remove_control(workspace)
            raise
        return workspace

    # -- the standby: the next trial's container, started while this one runs

    def _stand_by(self, task: Task, network: bool) -> None:
        """Start a container for the next trial of *task* in the background thread (see :mod:`.standby`).
        Never fails the trial: a standby that cannot be made is simply not there."""
        if not self.standby or self._standby is not None:
            return
        ident = uuid.uuid4().hex[:12]
        spare = self._workspace(task, f"standby-{ident}", self.workspace_root / STANDBY_FOLDER / ident, network)
        try:
            if spare.copy and not spare.native:
                spare.volume = self._name(spare, "ws")  # made by the job, before the container
            elif not spare.native:
                self._owned.claim(spare.host_path)
                spare.host_path.mkdir(parents=True)
                spare.control = make_control(self.workspace_root)
                self._owned.claim(spare.control)
            spec = self._spec(spare, phase="agent")
        except (OSError, WorkspaceError):
            self._owned.remove(spare.host_path)
            self._remove_control(spare)
            return
        standby = Standby(standby_key(task, network), spare)
        labels = self._labels(spare, "workspace")

        def job(api: Any) -> None:
            try:
                standby.cancelled.wait(STANDBY_DELAY_S)
                if not standby.begin():
                    return
                if spare.volume is not None:
                    api.create_volume(spare.volume, labels=labels)
                standby.created = self._launch(api, spec)
            finally:
                standby.done.set()

        self._standby = standby
        self._reaper.submit(job)

    def _from_standby(self, task: Task, trial_key: str, path: Path, network: bool) -> DockerWorkspace | None:
        """The trial's workspace on the standby container, when there is one for this task; None: make one."""
        standby, self._standby = self._standby, None
        if standby is None:
            return None
        fits = standby.key == standby_key(task, network)
        if not fits or not standby.take() or not standby.done.wait(STANDBY_WAIT_S) or not standby.created:
            self._discard(standby)
            return None
        if not self._running(standby.created["Id"]):
            # Made before its container (or its whole engine) went away: the trial makes its own, which
            # fails where the engine is gone, and then an engine pool moves the worker to a live engine.
            self._discard(standby)
            return None
        spare = standby.workspace
        workspace = self._workspace(task, trial_key, path, network)
        try:
            shutil.rmtree(path, ignore_errors=True)  # a copy kept by an earlier run: not this trial's
            if workspace.copy and not workspace.native:
                workspace.volume = spare.volume
                assert isinstance(workspace.files, ContainerFiles)
                workspace.files.seed(task.environment_dir)  # queued: goes in with the first command
            elif not workspace.native:
                # The container mounts the standby's folder: renamed, it is the trial's, mount and all.
                self._owned.claim(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                spare.host_path.rename(path)
                self._owned.release(spare.host_path)
                copy_tree(task.environment_dir, path, copied=self._noted(workspace))
                workspace.control, spare.control = spare.control, None
            self._attach(workspace, standby.created, "agent")
        except BaseException as exc:
            # The standby goes, and the trial gets a fresh container (an error of the files recurs there);
            # at once while Ctrl-C propagates, as the process may be about to end.
            interrupted = not isinstance(exc, Exception)
            self._owned.remove(path)
            self._remove_control(workspace)
            self._discard(standby, synchronously=interrupted)
            if interrupted:
                raise
            return None
        return workspace

    def _running(self, container_id: str) -> bool:
        """Whether the container answers as running (one round trip): a standby is checked before a trial
        takes it, as nothing about it was looked at since it was made."""
        try:
            return bool(self._api.inspect_container(container_id)["State"]["Running"])
        except Exception:  # the SDK's own when the engine is gone, or a container that was removed
            return False

    def _discard(self, standby: Standby, *, synchronously: bool = False) -> None:
        """Remove a standby no trial takes (another task came, or the session ends), in the background.
        One not begun is never made; one begun is made, then removed."""
        standby.cancelled.set()
        spare = standby.workspace

        def job(api: Any) -> None:
            standby.done.wait(STANDBY_WAIT_S)  # made by an earlier job of the same thread: done
            if standby.created:
                remove_container(api, standby.created["Id"])
            if spare.volume is not None:
                remove_volume(api, spare.volume)
            self._owned.remove(spare.host_path)
            remove_empty_parents(spare.host_path.parent, self.workspace_root)
            self._remove_control(spare)

        if synchronously:
            job(self._api)
        else:
            self._reaper.submit(job)

    def _labels(self, workspace: DockerWorkspace, phase: str) -> dict[str, str]:
        return {
            **OWNER,
            **self.session.labels(),
            f"{LABEL}.experiment": workspace.trial_key.split("/", 1)[0],
            f"{LABEL}.trial": workspace.trial_key,
            f"{LABEL}.task": workspace.task.name,
            f"{LABEL}.phase": phase,
        }

    def _name(self, workspace: DockerWorkspace, kind: str) -> str:
        slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", workspace.trial_key).strip("-.")[:80]
        return f"comet-{slug}-{kind}-{uuid.uuid4().hex[:6]}"

    def _create_volume(self, workspace: DockerWorkspace) -> str:
        name = self._name(workspace, "ws")
        try:
            self._api.create_volume(name, labels=self._labels(workspace, "workspace"))
        except Exception as exc:
            raise WorkspaceError(f"cannot create the volume of {workspace.trial_key}: {exc}") from None
        return name

    def _start(self, workspace: DockerWorkspace, *, phase: Phase) -> None:
        """Create and start the workspace's container (two API calls: the model is made from the create
        response, not from an inspect). The keeper is its main process; stdin stays open for it."""
        self._attach(workspace, self._launch(self._api, self._spec(workspace, phase=phase)), phase)

    def _spec(self, workspace: DockerWorkspace, *, phase: Phase) -> _Spec:
        """What the container of *workspace* is created with; no API call beyond building a host config,
        so a standby's can be made here and launched by the background thread."""
        from docker.types import Mount

        image = self._image_of(workspace.task)
        agent = self._agent if phase == "agent" else None
        network = workspace.network and phase == "agent"
        mode = self._network_mode(workspace, network)
        internal = network and self.networking.host_only  # no name resolves there: see keeper.NO_DNS
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
            mounts.append(self._mount(agent, self._agent_volume))
            if self._node is not None:
                mounts.append(self._mount(self._node, self._node_volume))
            if self._cache is not None:
                mounts.append(self._mount(*self._cache))
            node = self._node if workspace.native else None  # on PATH only where the image has no node
            env["PATH"] = ":".join([*agent.bin_dirs, image.path, *(node.bin_dirs if node else ())])
        if network:
            env.update(self.networking.proxy_environment())
        try:
            config = self._host_config(workspace, mounts, mode, network)
        except Exception as exc:
            raise WorkspaceError(f"cannot configure the container of {workspace.trial_key}: {exc}") from None
        return _Spec(
            workspace.trial_key,
            image.tag,
            self._name(workspace, phase),
            {
                # The keeper as the entrypoint: an image of its own (Harbor's) may declare one, which would
                # otherwise get the keeper as its arguments.
                "entrypoint": ["/bin/sh", "-c", KEEPER_SCRIPT, "comet-keeper", *([NO_DNS] if internal else [])],
                "labels": self._labels(workspace, phase),
                "working_dir": workspace.root,
                "environment": env,
                "stdin_open": True,
                "host_config": config,
            },
        )

    def _host_config(self, workspace: DockerWorkspace, mounts: list[Any], mode: str, network: bool) -> Any:
        limits = workspace.task.spec.environment
        return self._api.create_host_config(
            mounts=mounts,
            network_mode=mode,
            dns_opt=self.networking.dns_options() if network else None,
            nano_cpus=int(min(limits.cpus, self._cpus) * 1e9),
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",  # the same as the memory: no swap on top
            pids_limit=limits.pids_limit,
            init=True,  # reaps the orphans of killed commands
        )

    @staticmethod
    def _launch(api: Any, spec: _Spec) -> dict[str, str]:
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

    def _attach(self, workspace: DockerWorkspace, created: Mapping[str, str], phase: Phase) -> None:
        """Make *created* the container of *workspace*: its model, its keeper, the host's CA bundle."""
        workspace.container = self.client.containers.prepare_model(dict(created))
        if workspace.task.harbor is not None and self._host_ca is not None:
            self._put_host_ca(created["Id"])
        control = workspace.control if self.keeper_commands else None
        workspace.keeper = Keeper(self.stream_api(), created["Id"], control)
        workspace.phase = phase

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
            self._replace_container(workspace, phase="validation")

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
        self._replace_container(workspace, phase=workspace.phase)

    def _replace_container(self, workspace: DockerWorkspace, *, phase: Phase) -> None:
        """A fresh container on the same files (bind-mounted folder, or copy mode's volume)."""
        if workspace.container is not None:
            self._hand_back(workspace)
            self._dispose(workspace, volume=False)
        self._start(workspace, phase=phase)

    def _hand_back(self, workspace: DockerWorkspace) -> None:
        """Give files the container's root created back to the host user, so they can be removed."""
        if os.getuid() == 0 or workspace.container is None or workspace.copy or workspace.native:
            return
        with contextlib.suppress(Exception):
            quick_exec(self._api, workspace.container.id, ["chown", "-R", f"{os.getuid()}:{os.getgid()}", ROOT], ROOT)

    def _dispose(self, workspace: DockerWorkspace, *, volume: bool) -> None:
        """Remove the workspace's container (then its volume) in the background. Synchronously while an
        exception propagates (Ctrl-C, a stopped worker): the process may be about to end."""
        container_id, name = workspace.container.id, (workspace.volume if volume else None)
        if workspace.keeper is not None:
            workspace.keeper.close()
        workspace.container, workspace.keeper = None, None

        def job(api: Any) -> None:
            remove_container(api, container_id)
            if name is not None:
                remove_volume(api, name)

        if sys.exc_info()[0] is not None:
            job(self._api)
        else:
            self._reaper.submit(job)

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        assert isinstance(workspace, DockerWorkspace)
        if sys.exc_info()[0] is not None:  # Ctrl-C, a stopped worker: no next trial will take the standby
            self._drop_standby()
        try:
            if workspace.container is not None:
                if keep and isinstance(workspace.files, ContainerFiles):
                    self._copy_out(workspace.files)
                self._hand_back(workspace)
                self._dispose(workspace, volume=True)
            elif workspace.volume is not None:
                self._reaper.submit(lambda api: remove_volume(api, str(workspace.volume)))
        finally:
            if isinstance(workspace.files, ContainerFiles):
                workspace.files.discard()
            if workspace in self._workspaces:
                self._workspaces.remove(workspace)
            self._remove_control(workspace)
            if keep:
                self._owned.release(workspace.host_path)  # kept for inspection: no sweep takes it
            else:
                self._owned.remove(workspace.host_path)
                remove_empty_parents(workspace.host_path.parent, self.workspace_root)

    def _remove_control(self, workspace: DockerWorkspace) -> None:
        if workspace.control is not None:
            self._owned.remove(workspace.control)
            remove_empty_parents(workspace.control.parent, self.workspace_root)

    def drain(self) -> None:
        """Wait until the containers and volumes handed to the background removal are gone; the standby
        container, if any, goes too (nothing of the session is left running)."""
        self._drop_standby()
        self._reaper.drain()

    def _drop_standby(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            self._discard(standby, synchronously=sys.exc_info()[0] is not None)

    def _copy_out(self, files: ContainerFiles) -> None:
        """Copy a kept workspace to the host. A failure must not lose the trial's record (the Runner writes
        it after this): the folder then holds the reason instead."""
        try:
            files.copy_out()
        except WorkspaceError as exc:
            files.host_path.mkdir(parents=True, exist_ok=True)
            (files.host_path / "COMET-COPY-FAILED.txt").write_text(f"{exc}\n", encoding="utf-8")

    def _remove_session_objects(self) -> None:
        with contextlib.suppress(Exception):
            sweep(self.client, session=self.session.id)

    def close(self) -> None:
        """Wait for the background removals, then remove every container and volume of this session
        (also ones a crash left untracked) and stale ones of dead sessions."""
        atexit.unregister(self._remove_session_objects)
        try:
            self._drop_standby()
            self._reaper.close()
            sweep(self.client, session=self.session.id)
            sweep(self.client)
        finally:
            self.networking.close()
            self._workspaces.clear()
            remove_empty_parents(self.workspace_root, self.workspace_root.parent)
            if self._stream_client is not None:
                self._stream_client.close()
            self.client.close()
