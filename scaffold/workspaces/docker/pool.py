"""A pool of Docker engines behind one backend: the engine a worker is bound to, and the next one when
that engine dies; reaching the pool's engines at the start of a session and in ``comet engines check``.

What the pool is and which worker uses which engine is :mod:`scaffold.workspaces.engines` (pure). Here:

* :func:`probe_all` asks every engine at once whether it answers (a few seconds at most for one that
  does not), so a session can leave out, and report, the engines unreachable at its start;
* :class:`PoolBackend` is the backend of one worker: a :class:`DockerBackend` on the worker's engine,
  made when first needed. When a step fails and the engine no longer answers a ping, the engine counts
  as dead for this worker: the trial that was running there is recorded as an error (excluded as
  ``container_failure``, naming the engine), and the next trial runs on the next live engine of the
  worker's order. What the dead engine still holds is swept by the first session that reaches it again;
* :func:`check_engine` is one line of ``comet engines check``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from scaffold.catalog.tasks import Task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.docker.backend import DockerBackend
from scaffold.workspaces.docker.base_image import BASE_TAG, RELEASES, base_tag
from scaffold.workspaces.docker.copy_mode import engine_sees
from scaffold.workspaces.docker.engine import connect
from scaffold.workspaces.docker.sessions import LABEL, OWNER, Session, remove_container, sweep
from scaffold.workspaces.docker.standby import UNKNOWN, Unknown
from scaffold.workspaces.engines import Engine

__all__ = ["EngineCheck", "EngineStatus", "PoolBackend", "check_engine", "probe", "probe_all"]

PROBE_TIMEOUT_S = 5.0
"""How long an engine may take to answer a ping before it counts as unreachable."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class EngineStatus:
    engine: Engine
    reachable: bool
    problem: str = ""
    version: str = ""


def probe(engine: Engine, timeout: float = PROBE_TIMEOUT_S) -> EngineStatus:
    """Whether *engine* answers, and its version; never raises."""
    try:
        client = connect(engine, timeout=timeout)
    except WorkspaceError as exc:
        return EngineStatus(engine, False, str(exc))
    try:
        version = str(client.version().get("Version") or "")
    except Exception as exc:  # it answered the ping and then not: as good as gone
        return EngineStatus(engine, False, f"the engine {engine.url} stopped answering: {exc}")
    finally:
        client.close()
    return EngineStatus(engine, True, version=version)


def probe_all(engines: Sequence[Engine], timeout: float = PROBE_TIMEOUT_S) -> list[EngineStatus]:
    """:func:`probe` of every engine, side by side, in the pool's order."""
    if not engines:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(engines)), thread_name_prefix="engine-probe") as pool:
        return list(pool.map(lambda e: probe(e, timeout), engines))


class PoolBackend:
    """The docker backend of one worker of a pool. *engines*: the live engines in this worker's order
    (:func:`scaffold.workspaces.engines.order`); *make* builds the DockerBackend of one engine. *say*
    reports an engine that died (to the terminal, through the session)."""

    name = "docker"

    def __init__(
        self,
        engines: Sequence[Engine],
        make: Callable[[Engine], DockerBackend],
        *,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if not engines:
            raise WorkspaceError("no engine of the pool is reachable")
        self._engines = list(engines)
        self._make = make
        self._say = say or (lambda message: None)
        self._current: DockerBackend | None = None
        self._made: list[DockerBackend] = []
        self._dead: dict[str, str] = {}  # engine URL -> why it counts as dead
        self._owners: dict[int, DockerBackend] = {}  # id(workspace) -> the backend that made it
        self._expected: str | Unknown | None = UNKNOWN

    @property
    def engine(self) -> str:
        return self._current.docker_engine.url if self._current is not None else self._engines[0].url

    def start_slots(self) -> tuple[str, int]:
        """The current engine's (connected on first use); 0 slots when no engine of the pool answers."""
        try:
            return self._backend().start_slots()
        except Exception:  # WorkspaceError, or the SDK's own while connecting: the trial finds out itself
            return (self.engine, 0)

    @property
    def dead(self) -> dict[str, str]:
        """The engines this worker lost during the session, with the reason."""
        return dict(self._dead)

    def _live(self) -> list[Engine]:
        return [e for e in self._engines if e.url not in self._dead]

    def _backend(self) -> DockerBackend:
        while self._current is None:
            live = self._live()
            if not live:
                raise WorkspaceError(
                    "every engine of the pool is unreachable: "
                    + "; ".join(f"{url}: {why}" for url, why in self._dead.items())
                )
            try:
                self._current = self._make(live[0])
            except WorkspaceError as exc:
                self._lose(live[0].url, str(exc))
                continue
            self._made.append(self._current)
        return self._current

    def _lose(self, url: str, why: str) -> None:
        self._dead[url] = why
        live = self._live()
        after = f"; the next trials run on {live[0].url}" if live else "; no engine of the pool is left"
        self._say(f"engine {url} is gone ({why}){after}")

    def _run(self, step: Callable[[DockerBackend], T]) -> T:
        """*step* on the current engine; when it fails because the engine is gone, on the next one."""
        while True:
            backend = self._backend()
            try:
                return step(backend)
            except Exception as exc:  # WorkspaceError, or the SDK's own when the connection broke
                status = probe(backend.docker_engine)
                if status.reachable:
                    raise  # the engine is there: the failure is the trial's (or the task's) own
                self._current = None
                self._lose(backend.docker_engine.url, status.problem or str(exc))
                with contextlib.suppress(Exception):
                    backend.close()

    def prepare(self, task: Task) -> None:
        self._run(lambda backend: backend.prepare(task))

    def expect(self, task: str | None) -> None:
        self._expected = task  # given to whichever engine makes the workspace

    def create(self, task: Task, trial_key: str) -> Workspace:
        hint, self._expected = self._expected, UNKNOWN  # a hint is for one trial

        def make(backend: DockerBackend) -> Workspace:
            backend.expect(hint)
            return backend.create(task, trial_key)

        workspace = self._run(make)
        assert self._current is not None
        self._owners[id(workspace)] = self._current
        return workspace

    def destroy(self, workspace: Workspace, *, keep: bool) -> None:
        backend = self._owners.pop(id(workspace), None) or self._backend()
        try:
            backend.destroy(workspace, keep=keep)
        except Exception:
            if backend.docker_engine.url not in self._dead and probe(backend.docker_engine).reachable:
                raise
            # The engine died under the trial: its record says so; its containers go when it is back.

    def close(self) -> None:
        problems = []
        for backend in self._made:
            try:
                backend.close()
            except Exception as exc:
                if backend.docker_engine.url not in self._dead:
                    problems.append(f"{backend.docker_engine.url}: {exc}")
        self._made.clear()
        self._current = None
        if problems:
            raise WorkspaceError("closing the pool's engines failed: " + "; ".join(problems))


# --- comet engines check -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineCheck:
    """What ``comet engines check`` finds on one engine."""

    engine: Engine
    reachable: bool
    problem: str = ""
    version: str = ""
    mode: str = ""
    """``bind`` (it sees this machine's folders), ``copy``, or empty when it could not be asked."""
    base_images: tuple[str, ...] = ()
    missing_base: tuple[str, ...] = ()
    task_images: int = 0
    round_trip_ms: float | None = None
    """One container from the base image: created, started, waited for and removed."""
    swept: int = 0
    """Containers and volumes of dead sessions removed from it (what a session that died there left)."""
    cpus: int = 0
    memory_gb: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.engine.url,
            "capacity": self.engine.capacity,
            "tls": self.engine.tls,
            "reachable": self.reachable,
            "problem": self.problem,
            "version": self.version,
            "mode": self.mode,
            "base_images": list(self.base_images),
            "missing_base_images": list(self.missing_base),
            "task_images": self.task_images,
            "round_trip_ms": self.round_trip_ms,
            "swept": self.swept,
            "cpus": self.cpus,
            "memory_gb": self.memory_gb,
        }


def check_engine(engine: Engine, workspace_root: Path, timeout: float = PROBE_TIMEOUT_S) -> EngineCheck:
    """Reach *engine* and ask it everything ``comet engines check`` shows; never raises."""
    try:
        client = connect(engine, timeout=timeout)
    except WorkspaceError as exc:
        return EngineCheck(engine, False, str(exc))
    try:
        return _check(client, engine, workspace_root)
    except Exception as exc:
        return EngineCheck(engine, False, f"the engine {engine.url} stopped answering: {exc}")
    finally:
        client.close()


def _check(client: Any, engine: Engine, workspace_root: Path) -> EngineCheck:
    client.api.timeout = 120  # answered the ping: now give it time for a container
    version = str(client.version().get("Version") or "")
    info = client.info()
    tags = {tag for image in client.images.list(name="comet-eval/base") for tag in image.tags}
    wanted = [base_tag(release) for release in RELEASES]
    present = tuple(t for t in wanted if t in tags)
    missing = tuple(t for t in wanted if t not in tags)
    task_images = sum(1 for image in client.images.list(filters={"label": f"{LABEL}.task"}))
    swept = sweep(client)
    mode, round_trip = "", None
    if BASE_TAG in tags:
        session = Session.current()
        labels = {**OWNER, **session.labels(), f"{LABEL}.phase": "probe"}
        probe_dir = workspace_root / f".comet-engine-probe-{session.id}"
        probe_dir.mkdir(parents=True, exist_ok=True)
        try:
            mode = "bind" if engine_sees(client.api, probe_dir.absolute(), BASE_TAG, labels) else "copy"
        finally:
            with contextlib.suppress(OSError):
                probe_dir.rmdir()
        round_trip = _round_trip_ms(client, labels)
    return EngineCheck(
        engine,
        True,
        version=version,
        mode=mode,
        base_images=present,
        missing_base=missing,
        task_images=task_images,
        round_trip_ms=round_trip,
        swept=swept,
        cpus=int(info.get("NCPU") or 0),
        memory_gb=round(float(info.get("MemTotal") or 0) / 2**30, 1),
    )


def _round_trip_ms(client: Any, labels: dict[str, str]) -> float:
    api = client.api
    start = time.perf_counter()
    created = api.create_container(
        BASE_TAG, ["true"], labels=labels, host_config=api.create_host_config(network_mode="none")
    )
    try:
        api.start(created["Id"])
        api.wait(created["Id"], timeout=60)
    finally:
        remove_container(api, created["Id"])
    return round((time.perf_counter() - start) * 1000, 1)
