"""The Docker engine as the docker backend reaches it: the connection, and state shared on this machine.

Only the Docker SDK talks to the engine (``docker.from_env()``: ``DOCKER_HOST`` and the TLS variables are
respected). Builds and installs shared by every process of every session on this machine take a file
lock under :func:`state_dir`, so pytest-xdist workers do each once.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scaffold.errors import WorkspaceError

__all__ = ["connect", "file_lock", "image_id", "safe_name", "state_dir"]


def connect(*, timeout: float | None = 120.0) -> Any:
    """A ``docker.DockerClient`` from the environment (``DOCKER_HOST``, ``DOCKER_TLS_VERIFY``...), pinged.

    *timeout* is per socket read; ``None`` for clients that wait on long, silent streams.
    """
    import docker

    host = os.environ.get("DOCKER_HOST")
    where = f"DOCKER_HOST={host}" if host else "the default socket unix:///var/run/docker.sock (DOCKER_HOST is unset)"
    problem = ""
    client = None
    # The SDK leaves the socket of a failed connection open: collect it here, quietly, not in the caller.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = docker.from_env(timeout=timeout)
            client.ping()
        except Exception as exc:  # DockerException, requests' ConnectionError, OSError: all mean "not there"
            problem = str(exc) or type(exc).__name__
            if client is not None:
                client.close()
        if problem:
            gc.collect()
    if problem:
        raise WorkspaceError(
            f"cannot reach the Docker engine at {where}: {problem}. Start dockerd, or point DOCKER_HOST at a "
            "running engine (e.g. DOCKER_HOST=unix:///run/comet-docker.sock), or use --backend local"
        )
    return client


def state_dir() -> Path:
    """Shared by every process of every session on this machine: ``<tempdir>/comet-eval``."""
    return Path(tempfile.gettempdir()) / "comet-eval"


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


@contextlib.contextmanager
def file_lock(name: str, *, directory: Path | None = None) -> Iterator[Path]:
    """Hold an exclusive ``flock`` on ``<directory>/<name>.lock`` (other processes wait)."""
    folder = directory or state_dir() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{safe_name(name)}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def image_id(client: Any, tag: str) -> str | None:
    """The id of the local image *tag*, or None when there is none."""
    from docker.errors import ImageNotFound

    try:
        return str(client.images.get(tag).id)
    except ImageNotFound:
        return None
