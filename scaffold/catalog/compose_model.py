"""The model of a compose file's services, as the docker backend runs them (read by :mod:`.compose_service`)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Final

__all__ = ["HOST_LOGS", "LOG_MOUNTS", "Build", "CopiedPath", "Dependency", "Healthcheck", "Service", "VolumeMount"]

LOG_MOUNTS: Final = {"verifier": "/logs/verifier", "agent": "/logs/agent", "artifacts": "/logs/artifacts"}
HOST_LOGS: Final = "/.comet-eval-trial-logs"
"""What ``HOST_*_LOGS_PATH`` stand for: the trial's folders on the host, which the backend provides by
itself at ``/logs`` (a volume binding one to its ``/logs`` path is therefore dropped)."""


@dataclass(frozen=True, slots=True)
class Build:
    """A service's build: folders relative to the environment folder (``.`` is the folder itself)."""

    context: str
    dockerfile: str = "Dockerfile"
    """Relative to the context."""
    args: tuple[tuple[str, str], ...] = ()

    @property
    def default(self) -> bool:
        """The main service's build as Harbor makes it: the environment folder's Dockerfile, no arguments."""
        return self.context == "." and posixpath.normpath(self.dockerfile) == "Dockerfile" and not self.args


@dataclass(frozen=True, slots=True)
class Healthcheck:
    """Docker's health check; a field left None keeps the image's (Docker's defaults when it has none)."""

    test: tuple[str, ...] | None = None
    """``("CMD", ...)``, ``("CMD-SHELL", line)`` or ``("NONE",)`` (disabled)."""
    interval: float | None = None
    timeout: float | None = None
    retries: int | None = None
    start_period: float | None = None


@dataclass(frozen=True, slots=True)
class VolumeMount:
    source: str | None
    """A top-level volume's name; None: an anonymous volume, removed with its container."""
    target: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class CopiedPath:
    """A read-only bind mount of the environment folder's *source*, copied to *target* before the start
    (an engine elsewhere cannot see this machine's folders, and read-only makes the copy equivalent)."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Dependency:
    service: str
    condition: str = "service_started"
    required: bool = True


@dataclass(frozen=True, slots=True)
class Service:
    """One service as the runner starts it (:mod:`.compose_service` says what each field does)."""

    name: str
    build: Build | None = None
    image: str | None = None
    entrypoint: tuple[str, ...] | None = None
    command: tuple[str, ...] | None = None
    environment: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None
    user: str | None = None
    hostname: str | None = None
    aliases: tuple[str, ...] = ()
    depends_on: tuple[Dependency, ...] = ()
    healthcheck: Healthcheck | None = None
    volumes: tuple[VolumeMount, ...] = ()
    copies: tuple[CopiedPath, ...] = ()
    tmpfs: tuple[tuple[str, str], ...] = ()
    shm_size: int | None = None
    cap_add: tuple[str, ...] = ()
    cap_drop: tuple[str, ...] = ()
    init: bool | None = None
    cpus: float | None = None
    memory: int | None = None
    pids: int | None = None
    ulimits: tuple[tuple[str, int, int], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    extra_hosts: tuple[tuple[str, str], ...] = ()
    read_only: bool = False
    restart: str = "no"
    platform: str | None = None
    tty: bool = False
    stdin_open: bool = False
