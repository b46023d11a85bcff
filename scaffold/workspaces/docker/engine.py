"""The Docker engine as the docker backend reaches it: the connection, and state shared on this machine.

Only the Docker SDK talks to the engine: an engine of a pool (:class:`~scaffold.workspaces.engines.Engine`:
its URL and TLS settings), else the environment's (``DOCKER_HOST`` and the TLS variables, as
``docker.from_env()`` reads them). Builds and installs shared by every process of every session on this
machine take a file lock under :func:`state_dir`, so pytest-xdist workers do each once; work done once
per engine (images, volumes) takes a lock named after the engine (:func:`engine_lock`).
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
from urllib.parse import urlsplit

from scaffold.errors import WorkspaceError
from scaffold.workspaces.engines import Engine

__all__ = ["client_kwargs", "connect", "engine_lock", "file_lock", "image_id", "own_trust", "safe_name", "state_dir"]


def client_kwargs(engine: Engine | None) -> dict[str, Any]:
    """The Docker SDK's client arguments for *engine* (``base_url``, ``tls``, ``use_ssh_client``); the
    environment's when None or the environment's engine."""
    from docker.utils import kwargs_from_env

    if engine is None or engine.from_environment:
        return dict(kwargs_from_env())
    out: dict[str, Any] = {"base_url": engine.url}
    if engine.url.startswith("ssh://"):
        out["use_ssh_client"] = True  # the system's ssh (its config, agent and known hosts), not paramiko
    if engine.tls:
        from docker.constants import MINIMUM_DOCKER_API_VERSION
        from docker.tls import TLSConfig

        # Not "auto": the SDK would ask the engine's API version before own_trust() could fix the
        # session's CA; own_trust() asks it afterwards.
        out["version"] = MINIMUM_DOCKER_API_VERSION
        certs = engine.cert_path or Path.home() / ".docker"
        out["tls"] = TLSConfig(
            client_cert=(str(certs / "cert.pem"), str(certs / "key.pem")),
            ca_cert=str(certs / "ca.pem"),
            verify=engine.tls_verify,
        )
    return out


def connect(engine: Engine | None = None, *, timeout: float | None = 120.0) -> Any:
    """A ``docker.DockerClient`` for *engine* (None: the environment's: ``DOCKER_HOST``,
    ``DOCKER_TLS_VERIFY``...), pinged.

    *timeout* is per socket read; ``None`` for clients that wait on long, silent streams.
    """
    import docker

    host = os.environ.get("DOCKER_HOST")
    where = f"DOCKER_HOST={host}" if host else "the default socket unix:///var/run/docker.sock (DOCKER_HOST is unset)"
    if engine is not None and not engine.from_environment:
        refused = _refused(engine, timeout)
        if refused:
            raise WorkspaceError(f"cannot reach the Docker engine {engine.url}: {refused}")
    problem = ""
    client = None
    # The SDK leaves the socket of a failed connection open: collect it here, quietly, not in the caller.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = docker.DockerClient(timeout=timeout, **client_kwargs(engine))
            own_trust(client.api, engine)
            client.ping()
        except Exception as exc:  # DockerException, requests' ConnectionError, OSError: all mean "not there"
            problem = str(exc) or type(exc).__name__
            if client is not None:
                client.close()
        if problem:
            gc.collect()
    if problem and engine is not None and not engine.from_environment:
        raise WorkspaceError(f"cannot reach the Docker engine {engine.url}: {problem}{_proxy_hint(engine)}")
    if problem:
        raise WorkspaceError(
            f"cannot reach the Docker engine at {where}: {problem}. Start dockerd, or point DOCKER_HOST at a "
            "running engine (e.g. DOCKER_HOST=unix:///run/comet-docker.sock), or use --backend local"
        )
    return client


def _refused(engine: Engine, timeout: float | None) -> str:
    """Why nothing listens at *engine*'s address (empty when something does), asked with a socket of our
    own: the SDK leaks the socket of a refused connection, which probes of many engines at once (in
    threads, where silencing its ResourceWarning is not safe) must not."""
    import socket

    parts = urlsplit(engine.url)
    try:
        if parts.scheme == "unix":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(parts.path)
        elif parts.scheme == "tcp":
            with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=timeout):
                pass
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return ""


def own_trust(api: Any, engine: Engine | None) -> Any:
    """Make a TLS engine's CA the one that verifies it. requests lets ``REQUESTS_CA_BUNDLE`` (set on
    machines behind a TLS-inspecting proxy) replace a session's own CA on every request, so the engine's
    certificate would be checked against the wrong bundle and refused: the session stops reading the
    environment, and keeps its HTTP proxy only when the environment has one the engine's host does not
    bypass (what reading the environment gave)."""
    if engine is None or not engine.tls or not getattr(api, "trust_env", False):
        return api
    from urllib.request import getproxies, proxy_bypass

    api.trust_env = False
    if not proxy_bypass(urlsplit(engine.url).hostname or ""):
        api.proxies.update({k: v for k, v in getproxies().items() if k in ("http", "https")})
    api._version = api._retrieve_server_version()  # what version="auto" would have asked, now verified
    return api


def _proxy_hint(engine: Engine) -> str:
    """Why a tcp:// engine may answer with a proxy's error: the SDK sends its requests through the
    environment's HTTP proxy unless NO_PROXY names the engine's host (as the docker CLI does)."""
    if not engine.url.startswith("tcp://"):
        return ""
    proxy = next((n for n in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy") if os.environ.get(n)), None)
    if proxy is None:
        return ""
    from urllib.request import proxy_bypass

    host = urlsplit(engine.url).hostname or ""
    if proxy_bypass(host):
        return ""
    return f" (requests to it go through the proxy of ${proxy}: add {host} to NO_PROXY if it is reached directly)"


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


def engine_lock(engine: Engine | None, name: str) -> contextlib.AbstractContextManager[Path]:
    """:func:`file_lock` for work done once per engine (an image built or loaded there, a volume filled):
    two engines do it side by side, two workers on one engine do it once."""
    key = engine.key if engine is not None else ""
    return file_lock(f"{key}-{name}" if key else name)


def image_id(client: Any, tag: str) -> str | None:
    """The id of the local image *tag*, or None when there is none."""
    from docker.errors import ImageNotFound

    try:
        return str(client.images.get(tag).id)
    except ImageNotFound:
        return None
