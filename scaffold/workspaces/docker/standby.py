"""The standby container: the next trial's container, created and started while the current trial runs.

Starting a container is most of what a docker trial adds to the agent's own time: ~210 ms of wall time
and ~200 ms of the engine's CPU on the 2-core machine with the agent's network (create, start with its
network, the keeper's first breath), against ~2 ms for an API call. A worker runs its trials one after
another, so each trial's container can be made during the trial before it, while that trial waits on its
model: the start leaves the trial's critical path.

How (:class:`scaffold.workspaces.docker.DockerBackend`):

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
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from scaffold.catalog.tasks import Task
    from scaffold.workspaces.docker.workspace import DockerWorkspace

__all__ = [
    "STANDBY_DELAY_S",
    "STANDBY_FOLDER",
    "STANDBY_WAIT_S",
    "UNKNOWN",
    "Standby",
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
    created: Mapping[str, str] | None = None
    """The container's id and name once it runs; None while it is made, or when making it failed."""

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
