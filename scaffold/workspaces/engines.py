"""An engine pool: the Docker engines of a session, each with a capacity, and which worker uses which.

A pool is given as ``--docker-host URL[*CAPACITY]`` (repeatable), as ``COMET_DOCKER_HOSTS`` (the same
entries, separated by commas or white space), or as a pool file (``--docker-pool FILE``, else
``COMET_DOCKER_POOL``), a TOML file with one ``[[engines]]`` table per engine::

    [[engines]]
    url = "tcp://build-1.example.internal:2376"
    capacity = 8
    tls_verify = true
    cert_path = "certs/build-1"      # ca.pem, cert.pem, key.pem; relative to the file

The flags and the file add up; the environment variable is read only when neither is given. URLs are
what the Docker SDK takes: ``unix://`` (an engine on this machine), ``tcp://`` (plain, or TLS) and
``ssh://user@host`` (the system's ``ssh`` client). TLS follows the Docker conventions, per host: it is on
when ``DOCKER_TLS_VERIFY`` or ``DOCKER_CERT_PATH`` is set, verifying the engine's certificate when
``DOCKER_TLS_VERIFY`` is, with the certificates of ``$DOCKER_CERT_PATH/<host>/`` when that folder exists,
else of ``$DOCKER_CERT_PATH`` (else ``~/.docker``).

**Binding.** Each engine offers *capacity* slots; the slots are interleaved (the first slot of every
engine, then the second of every engine that has one, ...), and pytest-xdist worker ``gwN`` takes slot
``N`` (modulo the number of slots). So ``-n`` equal to the pool's capacity fills it, a smaller ``-n``
spreads over the engines first, and the same pool and worker always give the same engine. When the
engine a worker is bound to dies, the worker moves to the next engine of its order (:func:`order`).

Pure: parsing and arithmetic. Reaching the engines is :mod:`scaffold.workspaces.docker.pool`'s.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from scaffold.errors import SelectionError

__all__ = [
    "DEFAULT_SOCKET",
    "POOL_FILE_ENV",
    "POOL_HOSTS_ENV",
    "Engine",
    "default_engine",
    "environment_for",
    "load_pool_file",
    "on_this_machine",
    "order",
    "parse_engine",
    "resolve_pool",
    "slots",
    "total_capacity",
    "worker_index",
]


def on_this_machine(url: str) -> bool:
    """Whether the engine at *url* runs on this machine (a unix socket): what it binds are this machine's
    folders, its gateway is this machine, its containers' processes use this machine's cores. A TCP or
    ssh engine counts as elsewhere, even at 127.0.0.1: nothing tells that it shares this machine's file
    system and network."""
    return url.startswith("unix://")


POOL_HOSTS_ENV: Final = "COMET_DOCKER_HOSTS"
POOL_FILE_ENV: Final = "COMET_DOCKER_POOL"
DEFAULT_SOCKET: Final = "unix:///var/run/docker.sock"
_SCHEMES: Final = ("unix", "tcp", "ssh")
_MAX_CAPACITY: Final = 1024


@dataclass(frozen=True, slots=True)
class Engine:
    """One Docker engine: where it is, how many trials it runs at once, and how to reach it."""

    url: str
    capacity: int = 1
    tls: bool = False
    tls_verify: bool = False
    cert_path: Path | None = None
    """The folder with ``ca.pem``, ``cert.pem`` and ``key.pem`` (TLS only)."""
    from_environment: bool = False
    """The engine of ``DOCKER_HOST`` and the TLS variables when no pool is given: reached as the Docker
    SDK reaches it from the environment, and its locks keep their single-engine names."""

    @property
    def key(self) -> str:
        """A file-name-safe key of the engine, for locks of work done once per engine; empty for the
        environment's engine (the names every session used before pools existed)."""
        if self.from_environment:
            return ""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", self.url).strip("_")

    @property
    def local(self) -> bool:
        """Whether the engine runs on this machine (:func:`on_this_machine`)."""
        return on_this_machine(self.url)

    def describe(self) -> str:
        return f"{self.url}*{self.capacity}"


def default_engine(environ: Mapping[str, str]) -> Engine:
    """The engine a session without a pool uses: ``DOCKER_HOST`` (else the default socket)."""
    url = environ.get("DOCKER_HOST") or DEFAULT_SOCKET
    tls, verify, certs = _tls_from(environ, urlsplit(url).hostname or "")
    return Engine(url, 1, tls, verify, certs, from_environment=True)


def parse_engine(text: str, environ: Mapping[str, str], *, where: str = "--docker-host") -> Engine:
    """``URL[*CAPACITY]`` (capacity 1 when not given), TLS from the environment's conventions."""
    raw = text.strip()
    url, star, capacity_text = raw.rpartition("*") if "*" in raw else (raw, "", "")
    capacity = 1
    if star:
        if not capacity_text.isdigit() or not 1 <= int(capacity_text) <= _MAX_CAPACITY:
            raise SelectionError(
                f"{where} {raw!r}: the capacity after '*' must be a whole number from 1 to {_MAX_CAPACITY}"
            )
        capacity = int(capacity_text)
    url = _check_url(url.strip(), where)
    tls, verify, certs = False, False, None
    if url.startswith("tcp://"):
        tls, verify, certs = _tls_from(environ, urlsplit(url).hostname or "")
    return Engine(url, capacity, tls, verify, certs)


def _check_url(url: str, where: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise SelectionError(
            f"{where} {url!r}: use a unix://, tcp:// or ssh:// URL (e.g. tcp://10.0.0.5:2376*4, "
            "ssh://ci@build-1, unix:///run/docker.sock)"
        )
    if parts.scheme == "unix":
        if not parts.path:
            raise SelectionError(f"{where} {url!r}: a unix:// URL names a socket, e.g. unix:///run/docker.sock")
        return url
    if not parts.hostname:
        raise SelectionError(f"{where} {url!r}: the URL names no host")
    if parts.scheme == "tcp":
        try:
            port = parts.port
        except ValueError:
            raise SelectionError(f"{where} {url!r}: the port is not a number") from None
        if port is None:
            raise SelectionError(f"{where} {url!r}: a tcp:// URL needs its port (2375 plain, 2376 with TLS)")
    return url.rstrip("/")


def _tls_from(environ: Mapping[str, str], host: str) -> tuple[bool, bool, Path | None]:
    """(tls, verify, certificates folder) by the Docker conventions, with a folder per host."""
    cert_root = environ.get("DOCKER_CERT_PATH") or None
    verify_value = environ.get("DOCKER_TLS_VERIFY")
    verify = verify_value is not None and verify_value != ""
    if not (cert_root or verify):
        return False, False, None
    base = Path(cert_root).expanduser() if cert_root else Path.home() / ".docker"
    per_host = base / host if host else None
    return True, verify, per_host if per_host is not None and per_host.is_dir() else base


def load_pool_file(path: Path, environ: Mapping[str, str]) -> list[Engine]:
    """The engines of a pool file (see the module docstring)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SelectionError(f"pool file {path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SelectionError(f"pool file {path}: not valid TOML: {exc}") from None
    entries = data.get("engines")
    if not isinstance(entries, list) or not entries:
        raise SelectionError(f'pool file {path}: needs one or more [[engines]] tables with url = "..."')
    engines = []
    for number, entry in enumerate(entries, 1):
        where = f"pool file {path}, engine {number}:"
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise SelectionError(f'{where} needs url = "..."')
        unknown = sorted(set(entry) - {"url", "capacity", "tls", "tls_verify", "cert_path"})
        if unknown:
            known = "url, capacity, tls, tls_verify, cert_path"
            raise SelectionError(f"{where} unknown key(s) {', '.join(unknown)}; known: {known}")
        capacity = entry.get("capacity", 1)
        if isinstance(capacity, bool) or not isinstance(capacity, int) or not 1 <= capacity <= _MAX_CAPACITY:
            raise SelectionError(f"{where} capacity must be a whole number from 1 to {_MAX_CAPACITY}")
        engine = parse_engine(entry["url"], environ, where=where)
        explicit = {k: entry[k] for k in ("tls", "tls_verify") if k in entry}
        for key, value in explicit.items():
            if not isinstance(value, bool):
                raise SelectionError(f"{where} {key} must be true or false")
        tls, verify, certs = engine.tls, engine.tls_verify, engine.cert_path
        if "cert_path" in entry:
            if not isinstance(entry["cert_path"], str):
                raise SelectionError(f"{where} cert_path must be a folder's path")
            certs = (path.parent / Path(entry["cert_path"]).expanduser()).absolute()
            tls = True
        verify = bool(explicit.get("tls_verify", verify))
        tls = bool(explicit.get("tls", tls or verify))
        if tls and not engine.url.startswith("tcp://"):
            raise SelectionError(f"{where} TLS applies to tcp:// engines only")
        if tls and certs is None:
            certs = Path.home() / ".docker"
        engines.append(Engine(engine.url, capacity, tls, verify, certs if tls else None))
    return engines


def resolve_pool(hosts: Sequence[str], pool_file: Path | None, environ: Mapping[str, str]) -> tuple[Engine, ...]:
    """The session's pool: the ``--docker-host`` entries and the pool file's engines; when neither is
    given, ``COMET_DOCKER_HOSTS`` (then ``COMET_DOCKER_POOL``). Empty: no pool (the environment's engine)."""
    engines = [parse_engine(text, environ) for text in hosts]
    file = pool_file
    if file is not None:
        engines += load_pool_file(file, environ)
    if not engines:
        listed = environ.get(POOL_HOSTS_ENV, "").replace(",", " ").split()
        engines = [parse_engine(text, environ, where=POOL_HOSTS_ENV) for text in listed]
        if not engines and environ.get(POOL_FILE_ENV):
            engines = load_pool_file(Path(environ[POOL_FILE_ENV]), environ)
    seen: set[str] = set()
    for engine in engines:
        if engine.url in seen:
            raise SelectionError(f"the engine {engine.url} is in the pool twice: give it once, with its whole capacity")
        seen.add(engine.url)
    return tuple(engines)


def slots(engines: Sequence[Engine]) -> list[Engine]:
    """Every engine's slots, interleaved: round ``r`` has one slot of each engine whose capacity exceeds ``r``."""
    widest = max((e.capacity for e in engines), default=0)
    return [e for r in range(widest) for e in engines if e.capacity > r]


def worker_index(worker: str) -> int:
    """pytest-xdist's ``gwN`` -> N; anything else (one process, ``main``) -> 0."""
    match = re.fullmatch(r"gw(\d+)", worker)
    return int(match.group(1)) if match else 0


def order(engines: Sequence[Engine], worker: str) -> list[Engine]:
    """The engines *worker* uses, best first: its slot's engine, then the others in the order their
    slots follow it (where it goes when its engine dies)."""
    ring = slots(engines)
    if not ring:
        return []
    start = worker_index(worker) % len(ring)
    out: list[Engine] = []
    for engine in ring[start:] + ring[:start]:
        if engine not in out:
            out.append(engine)
    return out


def total_capacity(engines: Sequence[Engine]) -> int:
    return sum(e.capacity for e in engines)


def environment_for(engine: Engine) -> dict[str, str]:
    """The ``DOCKER_*`` variables that reach *engine* (for the ``docker`` CLI and child processes)."""
    env = {"DOCKER_HOST": engine.url}
    if engine.tls:
        env["DOCKER_CERT_PATH"] = str(engine.cert_path or "")
        if engine.tls_verify:
            env["DOCKER_TLS_VERIFY"] = "1"
    return env
