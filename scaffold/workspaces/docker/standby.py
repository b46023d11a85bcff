"""The standby container: the next trial's container, created and started while the current trial runs.

Starting a container is most of what a docker trial adds to the agent's own time: ~210 ms of wall time
and ~200 ms of the engine's CPU on the 2-core machine with the agent's network (create, start with its
network, the keeper's first breath), against ~2 ms for an API call. A worker runs its trials one after
another, so each trial's container can be made during the trial before it, while that trial waits on its
model: the start leaves the trial's critical path.

How (:class:`Standbys`, one per :class:`scaffold.workspaces.docker.DockerBackend`):

* a second after a trial's container starts (:data:`STANDBY_DELAY_S`), the backend's background thread
  (the one that removes containers, with its own API client) creates and starts one more for the same
  task and network, on a folder of its own (bind mode: an empty host folder under ``.comet-standby``;
  copy mode: an empty volume);
* the next trial of the same task takes it: the folder is renamed to the trial's (the bind mount follows
  the folder, not its name), the environment's files are copied in, the keeper is attached; in copy
  mode the files go in with the first command, as always;
* a trial of another task (or network) gets a fresh container as before, and the standby is removed in
  the background; so is the last one, when the backend drains or closes;
* none is made when the runner says (``Backend.expect``, from pytest's next item) that no trial of the
  same task follows on this worker: at ``-n 16`` with 2 trials a worker, half the standbys went unused
  (16 containers of ~0.25 CPU s each on a 2-core machine that was already full).

What differs from a container made for the trial: its name (``comet-standby-<id>-agent-<hex>``) and its
``comet-eval.trial`` label (``standby-<id>``) do not name the trial; each trial's record names its engine.
Everything else (image, limits, mounts, network, environment, labels of the session) is the same, since it
is made from the same task by the same code. Costs: one container of each worker is made and not used at
the end of a session (or whenever the task changes). ``COMET_DOCKER_STANDBY=0`` turns it off.
"""

from __future__ import annotations

import enum
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker import compose
from scaffold.workspaces.docker.copy_mode import ContainerFiles
from scaffold.workspaces.docker.keeper import make_control
from scaffold.workspaces.docker.launch import Launcher, container_name, launch
from scaffold.workspaces.docker.sessions import Reaper, remove_container, remove_volume
from scaffold.workspaces.files import copy_tree, remove_empty_parents
from scaffold.workspaces.owners import OwnedFolders

if TYPE_CHECKING:
    from scaffold.catalog.tasks import Task
    from scaffold.workspaces.docker.workspace import DockerWorkspace, Launched

__all__ = [
    "STANDBY_DELAY_S",
    "STANDBY_FOLDER",
    "STANDBY_WAIT_S",
    "UNKNOWN",
    "Standby",
    "Standbys",
    "Unknown",
    "standby_from_env",
    "standby_key",
]

STANDBY_FOLDER: Final = ".comet-standby"
STANDBY_DELAY_S: Final = 1.0
"""How long after a trial's container starts its standby is made. Not at once: the agent CLI's own start
is the most CPU a trial needs (Claude Code: ~0.6 s of ~1.1 s), and a container start on top of it made
the agent phase longer than the start it saved (measured at -n 4 on 2 cores: median agent 6.35 s against
5.76 s). A second later the agent waits on its model. A trial shorter than that (an oracle's) finds its
standby not begun, cancels it and makes its own container, as without standby."""
STANDBY_WAIT_S: Final = 60.0
"""How long a trial waits for its standby still being made (normally ~0.2 s; seconds on a loaded engine)
before it makes its own container: an engine that takes longer is in trouble the trial will meet anyway."""


@dataclass(eq=False)
class Standby:
    """A container to be made (or being made, or made) for the next trial whose :func:`standby_key` is
    *key*: the background thread waits :data:`STANDBY_DELAY_S`, then makes it unless a trial came first."""

    key: tuple[object, ...]
    workspace: DockerWorkspace
    """Its own workspace: trial key ``standby-<id>``, its folder (bind mode) or volume (copy mode)."""
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    created: Launched | None = None
    """The container (and its services) once it runs; None while it is made, or when making it failed."""

    def begin(self) -> bool:
        """In the background thread, after the delay: True when the container is to be made now."""
        with self.lock:
            self.started = not self.cancelled.is_set()
            return self.started

    def take(self) -> bool:
        """For a trial: True when the container is (being) made, so worth waiting for; else it never will be."""
        with self.lock:
            if not self.started:
                self.cancelled.set()
            return self.started


class Unknown(enum.Enum):
    """What :meth:`DockerBackend.expect` was not told: the next trial's task (then taken to be the same)."""

    UNKNOWN = "unknown"


UNKNOWN: Final = Unknown.UNKNOWN


def standby_key(task: Task, network: bool) -> tuple[object, ...]:
    """What a standby must match to serve a trial: the task's image variant, its container limits and
    Harbor settings, and whether the agent has a network."""
    return (task.name, task.without_skills, task.format, repr(task.spec.environment), repr(task.harbor), network)


def standby_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """``COMET_DOCKER_STANDBY``: ``0`` (or ``false``, ``no``, ``off``) turns standby containers off."""
    value = (os.environ if environ is None else environ).get("COMET_DOCKER_STANDBY", "1")
    return value.strip().lower() not in ("0", "false", "no", "off")


class Standbys:
    """The standby of one backend: at most one at a time, made for the next trial of the task whose trial
    was just made, handed over to it or discarded. *enabled*: make any at all. *launcher* makes their
    containers, through *api* here and the background thread's own client in *reaper*; *owned* marks
    their folders under *workspace_root*; *make_workspace* makes a workspace of the backend, and
    *remove_control* removes a workspace's control folder."""

    def __init__(
        self,
        api: Any,
        *,
        enabled: bool,
        launcher: Launcher,
        reaper: Reaper,
        owned: OwnedFolders,
        workspace_root: Path,
        make_workspace: Callable[[Task, str, Path, bool], DockerWorkspace],
        remove_control: Callable[[DockerWorkspace], None],
    ) -> None:
        self.enabled = enabled
        """Start the next trial's container while a trial runs."""
        self._api = api
        self._launcher = launcher
        self._reaper = reaper
        self._owned = owned
        self._workspace_root = workspace_root
        self._make_workspace = make_workspace
        self._remove_control = remove_control
        self._standby: Standby | None = None
        self._next_task: str | Unknown | None = UNKNOWN  # expect(): the task of the trial after the next

    def expect(self, task: str | Unknown | None) -> None:
        """The task of the trial after the next one (None: no trial follows)."""
        self._next_task = task

    def follow(self, task: Task, network: bool) -> None:
        """After a trial of *task* got its workspace: a standby for the next, unless :meth:`expect` was
        told that another task (or none) comes next."""
        following, self._next_task = self._next_task, UNKNOWN  # a hint is for one trial
        if following is UNKNOWN or following == task.name:  # not known: the same task, as with --count
            self._stand_by(task, network)

    def _stand_by(self, task: Task, network: bool) -> None:
        """Start a container for the next trial of *task* in the background thread (see the module
        docstring). Never fails the trial: a standby that cannot be made is simply not there."""
        if not self.enabled or self._standby is not None:
            return
        ident = uuid.uuid4().hex[:12]
        spare = self._make_workspace(task, f"standby-{ident}", self._workspace_root / STANDBY_FOLDER / ident, network)
        try:
            if spare.copy and not spare.native:
                spare.volume = container_name(spare, "ws")  # made by the job, before the container
            elif not spare.native:
                self._owned.claim(spare.host_path)
                spare.host_path.mkdir(parents=True)
                spare.control = make_control(self._workspace_root)
                self._owned.claim(spare.control)
            spec = self._launcher.spec(spare, phase="agent")
        except (OSError, WorkspaceError):
            self._owned.remove(spare.host_path)
            self._remove_control(spare)
            return
        standby = Standby(standby_key(task, network), spare)
        labels = self._launcher.labels(spare, "workspace")

        def job(api: Any) -> None:
            try:
                standby.cancelled.wait(STANDBY_DELAY_S)
                if not standby.begin():
                    return
                if spare.volume is not None:
                    api.create_volume(spare.volume, labels=labels)
                standby.created = launch(api, spec)
            finally:
                standby.done.set()

        self._standby = standby
        self._reaper.submit(job)

    def hand_over(self, task: Task, trial_key: str, path: Path, network: bool) -> DockerWorkspace | None:
        """The trial's workspace on the standby container, when there is one for this task; None: make one."""
        standby, self._standby = self._standby, None
        if standby is None:
            return None
        fits = standby.key == standby_key(task, network)
        if not fits or not standby.take() or not standby.done.wait(STANDBY_WAIT_S) or not standby.created:
            self._discard(standby)
            return None
        if not self._running(standby.created.id):
            # Made before its container (or its whole engine) went away: the trial makes its own, which
            # fails where the engine is gone, and then an engine pool moves the worker to a live engine.
            self._discard(standby)
            return None
        spare = standby.workspace
        workspace = self._make_workspace(task, trial_key, path, network)
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
                copy_tree(task.environment_dir, path)
                workspace.control, spare.control = spare.control, None
            self._launcher.attach(workspace, standby.created, "agent")
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

    def drop(self) -> None:
        """Discard the standby, if any: no trial will take it (the session ends, or is interrupted)."""
        standby, self._standby = self._standby, None
        if standby is not None:
            self._discard(standby, synchronously=sys.exc_info()[0] is not None)

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
                remove_container(api, standby.created.id)
                if standby.created.services is not None:
                    compose.remove(api, standby.created.services)
            if spare.volume is not None:
                remove_volume(api, spare.volume)
            self._owned.remove(spare.host_path)
            remove_empty_parents(spare.host_path.parent, self._workspace_root)
            self._remove_control(spare)

        if synchronously:
            job(self._api)
        else:
            self._reaper.submit(job)
