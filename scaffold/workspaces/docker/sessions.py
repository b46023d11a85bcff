"""The docker backend's bookkeeping: labels naming a session, removal off the trial's critical path, and
sweeps of whatever a session (this one, or a dead one) left in the engine.

Every container, per-trial volume and per-trial network carries the session's labels, so cleanup never
depends on this process's memory: ``close()`` and an ``atexit`` hook sweep the session, and every new
session sweeps the sessions whose process is gone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scaffold.errors import WorkspaceError
from scaffold.util.background import Background
from scaffold.workspaces.owners import Owner

__all__ = ["LABEL", "OWNER", "Reaper", "Session", "remove_container", "remove_network", "remove_volume", "sweep"]

LABEL = "comet-eval"
OWNER = {f"{LABEL}.owner": "comet-eval"}


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    host: str
    pid: int
    started: str

    @classmethod
    def current(cls) -> Session:
        owner = Owner.current()
        return cls(f"{owner.pid}-{uuid.uuid4().hex[:12]}", owner.host, owner.pid, owner.started)

    def labels(self) -> dict[str, str]:
        return {
            f"{LABEL}.session": self.id,
            f"{LABEL}.host": self.host,
            f"{LABEL}.pid": str(self.pid),
            f"{LABEL}.pid-start": self.started,
        }


def _session_gone(labels: Mapping[str, str]) -> bool:
    """True when the labels name a process of this machine that no longer runs: reaped (no such pid, or
    the pid now belongs to a later process) or dead but not yet reaped (a zombie).

    A zombie counts as gone: it runs no code and will never remove anything. A SIGKILLed pytest-xdist
    worker stays a zombie until the controller tears its workers down, after every other worker's
    end-of-session sweep, so treating it as alive leaked its containers.
    """
    try:
        pid = int(labels.get(f"{LABEL}.pid", ""))
    except ValueError:
        return labels.get(f"{LABEL}.host") == Owner.current().host  # ours, but unreadable: nobody owns it
    return Owner(pid, labels.get(f"{LABEL}.pid-start", ""), labels.get(f"{LABEL}.host", "")).gone()


def sweep(client: Any, *, session: str | None = None) -> int:
    """Remove our labelled containers, then networks (a compose task's per-trial one) and volumes: those
    of *session*, or (None) those whose session's process is gone. Shared volumes (the agent CLI's, in
    copy mode) and the shared host-only network carry no session and stay.

    Returns how many were removed. Never raises for an object that disappears meanwhile.
    """
    label = f"{LABEL}.session={session}" if session else f"{LABEL}.session"
    removed = 0
    for container in client.containers.list(all=True, filters={"label": label}, ignore_removed=True):
        if session is None and not _session_gone(container.labels or {}):
            continue
        if remove_container(client.api, container.id):
            removed += 1
    for network in client.api.networks(filters={"label": label}):
        if session is None and not _session_gone(network.get("Labels") or {}):
            continue
        if remove_network(client.api, network["Id"]):
            removed += 1
    for volume in client.volumes.list(filters={"label": label}):
        if session is None and not _session_gone(volume.attrs.get("Labels") or {}):
            continue
        if remove_volume(client.api, volume.name):
            removed += 1
    return removed


def remove_container(api: Any, container_id: str) -> bool:
    """Force-remove a container (and its anonymous volumes); False when it was already gone."""
    from docker.errors import APIError, NotFound

    try:
        api.remove_container(container_id, force=True, v=True)
    except NotFound:
        return False
    except APIError as exc:
        if "already in progress" in str(exc):
            return False
        raise WorkspaceError(f"cannot remove the container {container_id[:12]}: {exc}") from None
    return True


def remove_volume(api: Any, name: str) -> bool:
    """Remove a volume; False when it is gone or still in use (a container being removed holds it: the
    session sweep at close takes it then)."""
    from docker.errors import APIError, NotFound

    try:
        api.remove_volume(name, force=True)
    except NotFound:
        return False
    except APIError as exc:
        if exc.status_code == 409 or "in use" in str(exc):
            return False
        raise WorkspaceError(f"cannot remove the volume {name}: {exc}") from None
    return True


def remove_network(api: Any, name: str) -> bool:
    """Remove a network; False when it is gone. Its containers must be gone first (the engine refuses to
    remove a network in use, and says so: an error then)."""
    from docker.errors import NotFound

    try:
        api.remove_network(name)
    except NotFound:
        return False
    except Exception as exc:
        raise WorkspaceError(f"cannot remove the network {name}: {exc}") from None
    return True


Job = Callable[[Any], object]


class Reaper:
    """Removes containers and volumes in a background thread, so a trial never waits for a removal.

    Removal of a running container costs ~50-60 ms of engine time; the next trial starts meanwhile.
    Cleanup stays guaranteed: :meth:`drain` (called by the backend's ``close()``) waits for every job,
    the backend removes synchronously while an exception propagates (Ctrl-C: the process may be about
    to end), and the labels let the session sweep (``close()``, ``atexit``) or the next session's sweep
    take whatever is left. The thread has its own API client: requests sessions are not thread-safe.
    """

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._api: Any = None  # the thread's own
        self._jobs = Background("comet-docker-reaper", finish=self._disconnect)

    @property
    def errors(self) -> list[str]:
        return self._jobs.errors

    def submit(self, job: Job) -> None:
        self._jobs.submit(lambda: job(self._thread_api()))

    def drain(self) -> None:
        """Return once every submitted job has run (the thread keeps running)."""
        self._jobs.drain()

    def close(self) -> None:
        """Run the remaining jobs, then end the thread."""
        self._jobs.close()

    def _thread_api(self) -> Any:
        if self._api is None:
            self._api = self._connect()
        return self._api

    def _disconnect(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            api.close()
