"""The ``docker`` backend: one image per task, one container per trial, commands through ``exec``.

The trial's files live in a fresh host folder (as with the local backend) bind-mounted at ``/workspace``,
so copying in and out never goes through the engine. The container only runs ``sleep infinity`` under
Docker's init; every command is an ``exec`` with its output streamed to host files and a time limit.

Decisions, each explained where it is implemented:

* agent CLIs are installed once on the host and mounted read-only (:func:`install_agent`);
* a timed-out command's whole process tree is killed inside the container by an environment marker
  (:meth:`DockerWorkspace.exec`);
* validation runs in a fresh container on the same folder, without network (:meth:`begin_validation`);
* containers carry labels naming their session; whatever a dead session left is swept (:func:`sweep`).

Only the Docker SDK talks to the engine (``docker.from_env()``: ``DOCKER_HOST`` is respected). The
engine must see the host's folders for bind mounts, so a remote ``DOCKER_HOST`` is not supported yet.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any

from scaffold.errors import WorkspaceError
from scaffold.images import (
    BASE_TAG,
    DEFAULT_BUILD_TIMEOUT_S,
    build_image,
    connect,
    file_lock,
    image_id,
    state_dir,
    task_image_tag,
)
from scaffold.procs import TERM_GRACE_S, ProcessResult, run_process, tail
from scaffold.tasks import Task
from scaffold.validation.runner import VALIDATION_DIR
from scaffold.workspaces.files import HostFiles, fresh_copy, remove_empty_parents

if TYPE_CHECKING:
    from scaffold.agents.install import InstallSpec

__all__ = ["AgentMount", "DockerBackend", "DockerWorkspace", "install_agent", "sweep"]

ROOT = "/workspace"
AGENTS_ROOT = "/opt/comet-agents"
LABEL = "comet-eval"
OWNER = {f"{LABEL}.owner": "comet-eval"}
EXEC_MARK = "COMET_EXEC_ID"
READER_GRACE_S = 5.0
AGENT_INSTALL_TIMEOUT_S = 900.0

# Kills every process whose environment holds EXEC_MARK=$1: SIGTERM, $2 seconds, then SIGKILL.
# A process group would miss children that called setsid (daemons, `nohup setsid ...`); the inherited
# environment marker follows them. The killer's own processes never carry the marker.
_KILL_SCRIPT = r"""
mark="$0=$1"
sweep() {
  hit=1
  for dir in /proc/[0-9]*; do
    if tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qxF "$mark"; then
      kill "-$1" "${dir#/proc/}" 2>/dev/null && hit=0
    fi
  done
  return $hit
}
if [ "$2" != 0 ] && sweep TERM; then sleep "$2"; fi
sweep KILL
exit 0
"""


# --- sessions and the sweep ----------------------------------------------------------------------------


def _process_start(pid: int) -> str:
    """The kernel's start time of *pid* (tells a live process from a later one with the same pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]


@dataclass(frozen=True, slots=True)
class _Session:
    id: str
    host: str
    pid: int
    started: str

    @classmethod
    def current(cls) -> _Session:
        pid = os.getpid()
        return cls(f"{pid}-{uuid.uuid4().hex[:12]}", socket.gethostname(), pid, _process_start(pid))

    def labels(self) -> dict[str, str]:
        return {
            f"{LABEL}.session": self.id,
            f"{LABEL}.host": self.host,
            f"{LABEL}.pid": str(self.pid),
            f"{LABEL}.pid-start": self.started,
        }


def _session_gone(labels: Mapping[str, str]) -> bool:
    """True when the labels name a process of this machine that no longer runs."""
    if labels.get(f"{LABEL}.host") != socket.gethostname():
        return False  # another machine's session: not ours to judge
    try:
        pid = int(labels.get(f"{LABEL}.pid", ""))
    except ValueError:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    started = labels.get(f"{LABEL}.pid-start", "")
    return bool(started) and _process_start(pid) not in ("", started)


def sweep(client: Any, *, session: str | None = None) -> int:
    """Remove our labelled containers: those of *session*, or (None) those whose session's process is gone.

    Returns how many were removed. Never raises for a container that disappears meanwhile.
    """
    label = f"{LABEL}.session={session}" if session else f"{LABEL}.owner=comet-eval"
    removed = 0
    for container in client.containers.list(all=True, filters={"label": label}, ignore_removed=True):
        if session is None and not _session_gone(container.labels or {}):
            continue
        if _remove(container):
            removed += 1
    return removed


def _remove(container: Any) -> bool:
    from docker.errors import APIError, NotFound

    try:
        container.remove(force=True, v=True)
    except NotFound:
        return False
    except APIError as exc:
        if "already in progress" in str(exc):
            return False
        raise WorkspaceError(f"cannot remove the container {container.name}: {exc}") from None
    return True


# --- agent CLIs on the host ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentMount:
    """An agent CLI installed on the host, and where a container sees it."""

    host: Path
    target: str
    bin_dirs: tuple[str, ...]
    pythonpath: tuple[str, ...] = ()


def agent_cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "comet-eval" / "agents"


def install_agent(spec: InstallSpec, *, cache_root: Path | None = None) -> AgentMount | None:
    """Install *spec* once per machine into ``~/.cache/comet-eval/agents/<kind>-<package>-<version>/``.

    Why a host folder mounted read-only, rather than ``RUN npm install -g`` in the task image: the mount
    installs once per machine instead of once per task image; task images stay agent-free and are shared
    by every agent; and no network is needed at image build time. Measured here: a build container on
    the default bridge resolves and reaches registry.npmjs.org, but the egress proxy re-signs TLS with a
    CA the Debian image does not trust, so an in-build ``npm install`` fails without machine-specific
    certificates baked into the image, whereas the host's npm is already configured for it.
    Returns None for ``kind == "none"`` (the executable is already in the image).
    """
    if spec.kind == "none" or not spec.package:
        return None
    version = spec.version or "latest"
    package = spec.package.lstrip("@").replace("/", "-")  # @scope/name -> scope-name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{spec.kind}-{package}-{version}")
    folder = (cache_root or agent_cache_root()) / name
    with file_lock(f"agent-{name}"):
        marker = folder / ".complete"
        if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != spec.key:
            _install_into(spec, folder, version)
    target = f"{AGENTS_ROOT}/{name}"
    if spec.kind == "npm":
        return AgentMount(folder, target, (f"{target}/node_modules/.bin",))
    return AgentMount(folder, target, (f"{target}/bin",), (target,))


def _install_into(spec: InstallSpec, folder: Path, version: str) -> None:
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if spec.kind == "npm":
        package = f"{spec.package}@{version}"
        argv = ["npm", "install", "--prefix", str(partial), "--no-save", "--no-audit", "--no-fund", package]
    else:
        package = f"{spec.package}=={version}" if spec.version else str(spec.package)
        argv = [sys.executable, "-m", "pip", "install", "--no-input", "--target", str(partial), package]
    logs = state_dir() / "agents"
    out, err = logs / f"{folder.name}.stdout.log", logs / f"{folder.name}.stderr.log"
    result = run_process(
        argv, cwd=partial, env=dict(os.environ), timeout=AGENT_INSTALL_TIMEOUT_S, stdout_path=out, stderr_path=err
    )
    if result.exit_code != 0:
        shutil.rmtree(partial, ignore_errors=True)
        why = f"timed out after {AGENT_INSTALL_TIMEOUT_S:g}s" if result.timed_out else f"exit code {result.exit_code}"
        raise WorkspaceError(
            f"installing the agent {package} ({' '.join(argv[:3])}) failed: {why}; {err}:\n{tail(err)}"
        )
    if spec.kind == "pip":
        _portable_shebangs(partial / "bin")
    (partial / ".complete").write_text(f"{spec.key}\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)


def _portable_shebangs(bin_dir: Path) -> None:
    """pip writes the host interpreter's path into console scripts; the container has ``python3``."""
    for script in bin_dir.glob("*") if bin_dir.is_dir() else ():
        data = script.read_bytes()
        if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
            script.write_bytes(b"#!/usr/bin/env python3\n" + data.split(b"\n", 1)[-1])


# --- the workspace -------------------------------------------------------------------------------------


class DockerWorkspace(HostFiles):
    """A host folder mounted at ``/workspace`` of the trial's container."""

    def __init__(self, backend: DockerBackend, task: Task, trial_key: str, path: Path, *, network: bool) -> None:
        super().__init__(path)
        self._backend = backend
        self.task = task
        self.trial_key = trial_key
        self.network = network
        self.phase = "agent"
        self.container: Any = None

    @property
    def root(self) -> str:
        return ROOT

    @property
    def python(self) -> str:
        return "python3"

    @property
    def container_id(self) -> str | None:
        return None if self.container is None else str(self.container.id)

    @property
    def host_address(self) -> str | None:
        """This machine's address as the agent's container sees it (the bridge gateway), to rewrite a
        loopback model endpoint; None without network. The endpoint must listen on that address too."""
        if self.container is None or not self.network or self.phase != "agent":
            return None
        self.container.reload()
        settings = self.container.attrs.get("NetworkSettings") or {}
        gateways = [n.get("Gateway") for n in (settings.get("Networks") or {}).values()]
        return next((g for g in [settings.get("Gateway"), *gateways] if g), None)

    def put(self, source: Path, dest: str) -> None:
        # The validation runner copies the validation folder in right before it runs the scripts: that is
        # the moment the agent is done, so the validation container takes over here.
        if PurePosixPath(dest).parts[:1] == (VALIDATION_DIR,) and self.phase == "agent":
            self.begin_validation()
        super().put(source, dest)

    def begin_validation(self) -> None:
        """Replace the agent's container by a fresh one on the same folder, with no network and no agent.

        A fresh container rather than the agent's: whatever the agent left running (servers, background
        jobs) is gone, the process table is clean, and validation never has network even when the agent
        had one. The files are the bind-mounted folder, so nothing is copied. Costs one container start.
        """
        self._backend._replace_container(self, phase="validation")

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        stdout_path: Path,
        stderr_path: Path,
    ) -> ProcessResult:
        """Run *argv* in the container; on timeout, or when it exits, end every process it started.

        Timeout: kill the command's process tree inside the container (by its environment marker),
        not the container: restarting would also do, but it costs a container start and the trial still
        needs the container (the oracle's solution dir is removed, validation may follow). Background
        processes of a command that exited are killed too, as the local backend does.
        """
        if self.container is None:
            raise WorkspaceError(f"the workspace {self.host_path} has no container (already destroyed?)")
        stdout_path.parent.mkdir(parents=True, exist_ok=True)
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        mark = uuid.uuid4().hex
        full_env = {**env, EXEC_MARK: mark}
        extra = self._backend._pythonpath if self.phase == "agent" else ()
        if extra:
            full_env["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), *extra])
        api, stream_api = self._backend._client.api, self._backend._streams()
        start = time.monotonic()
        with stdout_path.open("wb", buffering=0) as out, stderr_path.open("wb", buffering=0) as err:
            try:
                exec_id = api.exec_create(self.container.id, list(argv), environment=full_env, workdir=ROOT)["Id"]
                chunks = stream_api.exec_start(exec_id, stream=True, demux=True)
            except Exception as exc:
                raise WorkspaceError(f"cannot run {argv[0]!r} in the container of {self.host_path}: {exc}") from None
            reader = threading.Thread(target=_pump, args=(chunks, out, err), daemon=True)
            reader.start()
            timed_out = False
            try:
                deadline = start + timeout
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        timed_out = True
                        break
                    reader.join(min(remaining, 0.5))
                    # Ended, or exited while a background child still holds its output open.
                    if not reader.is_alive() or not api.exec_inspect(exec_id)["Running"]:
                        break
                self._kill(mark, TERM_GRACE_S if timed_out else 0)
                reader.join(READER_GRACE_S)
                code = None if timed_out else self._exit_code(exec_id)
            except BaseException as exc:  # Ctrl-C: end the tree now; the Runner then destroys the container
                with contextlib.suppress(Exception):
                    self._kill(mark, 0, replace=False)
                if isinstance(exc, Exception) and not isinstance(exc, WorkspaceError):  # e.g. container gone
                    raise WorkspaceError(f"running {argv[0]!r} in the container of {self.host_path}: {exc}") from None
                raise
            finally:
                _close_stream(chunks)
                reader.join(1.0)
        return ProcessResult(code, timed_out, time.monotonic() - start, stdout_path, stderr_path)

    def _kill(self, mark: str, grace: float, *, replace: bool = True) -> None:
        """End every process of the exec marked *mark*. When even that cannot run (a fork bomb at the
        pids limit leaves no room for one more process), replace the container: that always works."""
        api = self._backend._client.api
        try:
            kill = api.exec_create(self.container.id, ["sh", "-c", _KILL_SCRIPT, EXEC_MARK, mark, f"{grace:g}"])
            api.exec_start(kill["Id"])
            ok = self._exit_code(kill["Id"]) == 0
        except Exception:
            ok = False
        if not ok and replace:
            self._backend._replace_container(self, phase=self.phase)

    def _exit_code(self, exec_id: str) -> int | None:
        api = self._backend._client.api
        for _ in range(100):
            info = api.exec_inspect(exec_id)
            if not info["Running"]:
                code = info.get("ExitCode")
                return int(code) if code is not None else None
            time.sleep(0.02)
        return None


def _close_stream(chunks: Any) -> None:
    """Close an exec output stream (a ``docker.types.CancellableStream``) and its HTTP response.

    ``close()`` shuts the socket down, which also wakes a reader still blocked on it; the response
    holds a file object on that socket which must be closed too, or the socket is never released.
    """
    with contextlib.suppress(Exception):
        chunks.close()
    with contextlib.suppress(Exception):
        chunks._response.close()


def _pump(chunks: Any, out: IO[bytes], err: IO[bytes]) -> None:
    """Copy an exec's demultiplexed output into the two files until the stream ends or is closed."""
    with contextlib.suppress(Exception):  # the stream was shut, or the files closed after a timeout
        for stdout, stderr in chunks:
            if stdout:
                out.write(stdout)
            if stderr:
                err.write(stderr)


# --- the backend ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Image:
    tag: str
    path: str  # the image's PATH, to put agent bin folders in front of


class DockerBackend:
    """Workspaces in Docker containers. *network*: the agent's container gets the default bridge (to reach
    a model endpoint); otherwise, and always for validation, it has no network at all."""

    name = "docker"

    def __init__(
        self,
        workspace_root: Path,
        *,
        network: bool = False,
        agent_install: InstallSpec | None = None,
        base_image: str = BASE_TAG,
        build_timeout: float = DEFAULT_BUILD_TIMEOUT_S,
        agent_cache: Path | None = None,
    ) -> None:
        self._root = workspace_root
        self.network = network
        self._agent_install = agent_install
        self._agent_cache = agent_cache
        self.base_image = base_image
        self.build_timeout = build_timeout
        self._client = connect()
        self._stream_client: Any = None
        self.session = _Session.current()
        self._images: dict[str, _Image] = {}
        self._failed: dict[str, WorkspaceError] = {}
        self._agent: AgentMount | None = None
        self._agent_ready = False
        self._workspaces: list[DockerWorkspace] = []
        self._cpus = float(self._client.info().get("NCPU") or os.cpu_count() or 1)
        with contextlib.suppress(WorkspaceError):  # a container that resists removal must not stop the run
            sweep(self._client)
        atexit.register(self._remove_session_containers)

    @property
    def _pythonpath(self) -> tuple[str, ...]:
        return self._agent.pythonpath if self._agent else ()

    def _streams(self) -> Any:
        """The low-level client for exec output streams: no read timeout (a command may be silent)."""
        if self._stream_client is None:
            self._stream_client = connect(timeout=None).api
        return self._stream_client

    # -- images

    def prepare(self, task: Task) -> None:
        """Build (or reuse) the task's image and install the agent CLI on the host; once per session."""
        if task.name in self._failed:  # a broken build fails every trial at once, not after another build
            raise self._failed[task.name]
        if task.name not in self._images:
            try:
                self._images[task.name] = self._task_image(task)
            except WorkspaceError as exc:
                self._failed[task.name] = exc
                raise
        if not self._agent_ready and self._agent_install is not None:
            self._agent = install_agent(self._agent_install, cache_root=self._agent_cache)
            self._agent_ready = True

    def image_tag(self, task: Task) -> str:
        """``comet-eval/task-<name>:<hash>`` of the environment folder, base image id and agent key."""
        base = image_id(self._client, self.base_image)
        agent = self._agent_install.key if self._agent_install else "none"
        extra = {"base": base or f"missing:{self.base_image}", "agent": agent}
        return task_image_tag(task.name, task.environment_dir, self._dockerfile(task), extra)

    def _dockerfile(self, task: Task) -> Path:
        return task.root / task.spec.environment.dockerfile

    def _task_image(self, task: Task) -> _Image:
        tag = self.image_tag(task)
        safe = tag.replace("/", "_").replace(":", "_")
        with file_lock(f"image-{safe}"):
            if image_id(self._client, tag) is None:
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
                    )
                except WorkspaceError as exc:
                    hint = ""
                    if image_id(self._client, self.base_image) is None:
                        hint = (
                            f"\n(the base image {self.base_image} is missing: build it with `comet images build-base`)"
                        )
                    raise WorkspaceError(f"task {task.name}: {exc}{hint}") from None
        env = self._client.images.get(tag).attrs.get("Config", {}).get("Env") or []
        path = next((e.split("=", 1)[1] for e in env if e.startswith("PATH=")), "/usr/local/bin:/usr/bin:/bin")
        return _Image(tag, path)

    # -- containers

    def create(self, task: Task, trial_key: str, *, network: bool | None = None) -> DockerWorkspace:
        self.prepare(task)
        path = self._root / trial_key
        fresh_copy(task.environment_dir, path)
        workspace = DockerWorkspace(self, task, trial_key, path, network=self.network if network is None else network)
        try:
            workspace.container = self._start(workspace, phase="agent")
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        self._workspaces.append(workspace)
        return workspace

    def _replace_container(self, workspace: DockerWorkspace, *, phase: str) -> None:
        if workspace.container is not None:
            self._hand_back(workspace)
            _remove(workspace.container)
            workspace.container = None
        workspace.phase = phase
        workspace.container = self._start(workspace, phase=phase)

    def _start(self, workspace: DockerWorkspace, *, phase: str) -> Any:
        from docker.types import Mount

        image = self._images[workspace.task.name]
        limits = workspace.task.spec.environment
        agent = self._agent if phase == "agent" else None
        network = workspace.network and phase == "agent"
        mounts = [Mount(ROOT, str(workspace.host_path.absolute()), type="bind")]
        env = {"COMET_WORKSPACE": ROOT, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        if agent is not None:
            mounts.append(Mount(agent.target, str(agent.host), type="bind", read_only=True))
            env["PATH"] = ":".join([*agent.bin_dirs, image.path])
        experiment = workspace.trial_key.split("/", 1)[0]
        labels = {
            **OWNER,
            **self.session.labels(),
            f"{LABEL}.experiment": experiment,
            f"{LABEL}.trial": workspace.trial_key,
            f"{LABEL}.task": workspace.task.name,
            f"{LABEL}.phase": phase,
        }
        slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", workspace.trial_key).strip("-.")[:80]
        try:
            container = self._client.containers.create(
                image.tag,
                ["sleep", "infinity"],
                name=f"comet-{slug}-{phase}-{uuid.uuid4().hex[:6]}",
                labels=labels,
                working_dir=ROOT,
                environment=env,
                mounts=mounts,
                network_mode="bridge" if network else "none",
                nano_cpus=int(min(limits.cpus, self._cpus) * 1e9),
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",  # the same as the memory: no swap on top
                pids_limit=limits.pids_limit,
                init=True,  # reaps the orphans of killed commands
            )
        except Exception as exc:
            raise WorkspaceError(
                f"cannot create a container from {image.tag} for {workspace.trial_key}: {exc}"
            ) from None
        try:
            container.start()
        except BaseException as exc:
            _remove(container)
            if isinstance(exc, Exception):
                raise WorkspaceError(f"cannot start the container of {workspace.trial_key}: {exc}") from None
            raise
        return container

    def _hand_back(self, workspace: DockerWorkspace) -> None:
        """Give files the container's root created back to the host user, so they can be removed."""
        if os.getuid() == 0 or workspace.container is None:
            return
        with contextlib.suppress(Exception):
            owner = f"{os.getuid()}:{os.getgid()}"
            api = self._client.api
            api.exec_start(api.exec_create(workspace.container.id, ["chown", "-R", owner, ROOT])["Id"])

    def destroy(self, workspace: object, *, keep: bool) -> None:
        assert isinstance(workspace, DockerWorkspace)
        try:
            if workspace.container is not None:
                self._hand_back(workspace)
                _remove(workspace.container)
                workspace.container = None
        finally:
            if workspace in self._workspaces:
                self._workspaces.remove(workspace)
            if not keep:
                shutil.rmtree(workspace.host_path, ignore_errors=True)
                remove_empty_parents(workspace.host_path.parent, self._root)

    def _remove_session_containers(self) -> None:
        with contextlib.suppress(Exception):
            sweep(self._client, session=self.session.id)

    def close(self) -> None:
        """Remove every container of this session (also ones a crash left untracked) and stale ones."""
        atexit.unregister(self._remove_session_containers)
        try:
            sweep(self._client, session=self.session.id)
            sweep(self._client)
        finally:
            self._workspaces.clear()
            remove_empty_parents(self._root, self._root.parent)
            if self._stream_client is not None:
                self._stream_client.close()
            self._client.close()
