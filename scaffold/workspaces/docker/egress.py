"""An HTTP proxy that lets an agent's container reach its model endpoint and nothing else.

An agent whose provider is elsewhere needs the network, but the trial should not: a container on
Docker's default bridge can reach the whole internet (and the machine's own network). Instead the
container sits on the internal host-only network, which reaches only this machine, with
``HTTPS_PROXY``/``HTTP_PROXY`` pointing here; this proxy, listening on that network's gateway address,
opens connections only to the ``host:port`` pairs it was given (the provider's endpoint) and refuses
everything else with 403, keeping each refusal as evidence.

Two request forms, as proxies receive them: ``CONNECT host:port`` (HTTPS; the proxy only relays bytes,
TLS stays end to end) and absolute-form ``GET http://host:port/...`` (plain HTTP). Names are matched as
the client wrote them and resolved here, so the container needs no DNS. Every connection carries one
request target: plain HTTP requests are forwarded with ``Connection: close``, so a client cannot reuse
an allowed connection to reach another host.

The module imports the standard library only, so the same code serves as the **relay** of a remote
engine (scaffold.workspaces.docker.relay): its source runs there, ``python3 -c SOURCE PORT HOST:PORT...``,
in a container of the engine's base image, printing each refusal as one JSON line on its output.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["EgressProxy", "Refusal"]

_HEAD_LIMIT = 64 * 1024
_CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Refusal:
    target: str
    reason: str


class EgressProxy:
    """A threaded allow-list proxy. ``start()`` binds *host* (port 0 picks a free one)."""

    def __init__(
        self,
        allowed: Iterable[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_refusal: Callable[[Refusal], None] | None = None,
    ) -> None:
        self.allowed = frozenset(_endpoint(a) for a in allowed)
        self._on_refusal = on_refusal
        self._bind = (host, port)
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.refusals: list[Refusal] = []
        self.relayed: list[str] = []

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise _error("the egress proxy is not running")
        host, port = self._server.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self) -> EgressProxy:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(self._bind)
        except OSError as exc:
            server.close()
            raise _error(
                f"cannot start the egress proxy on {self._bind[0]}:{self._bind[1]}: {exc.strerror}; the address "
                "must be on this machine (the Docker network's gateway)"
            ) from None
        server.listen(64)
        self._server = server
        self._thread = threading.Thread(target=self._accept, name="comet-egress-proxy", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> EgressProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving

    def _accept(self) -> None:
        server = self._server
        while server is not None:
            try:
                client, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            client.settimeout(_CONNECT_TIMEOUT_S)
            try:
                head, rest = _read_head(client)
            except (OSError, ValueError):
                return
            lines = head.split(b"\r\n")
            try:
                method, target, version = lines[0].decode("latin-1").split(" ", 2)
            except ValueError:
                _reply(client, 400, "Bad Request", "not an HTTP request")
                return
            if method.upper() == "CONNECT":
                endpoint, upstream_head = target.lower(), b""
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    _reply(client, 400, "Bad Request", "a proxy request needs an absolute http:// URL")
                    return
                endpoint = f"{parts.hostname.lower()}:{parts.port or 80}"
                path = parts.path or "/"
                if parts.query:
                    path += "?" + parts.query
                headers = [
                    line
                    for line in lines[1:]
                    if line and not line.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))
                ]
                upstream_head = b"\r\n".join(
                    [f"{method} {path} {version}".encode("latin-1"), *headers, b"Connection: close", b"", b""]
                )
            if endpoint not in self.allowed:
                self._refuse(client, endpoint, "not the model endpoint")
                return
            host, _, port = endpoint.rpartition(":")
            try:
                upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_TIMEOUT_S)
            except (OSError, ValueError) as exc:
                self._refuse(client, endpoint, f"cannot connect: {exc}", status=(502, "Bad Gateway"))
                return
            with upstream:
                with self._lock:
                    self.relayed.append(endpoint)
                if upstream_head:
                    upstream.sendall(upstream_head + rest)
                else:
                    client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    if rest:
                        upstream.sendall(rest)
                _relay(client, upstream)

    def _refuse(
        self, client: socket.socket, endpoint: str, reason: str, status: tuple[int, str] = (403, "Forbidden")
    ) -> None:
        refusal = Refusal(endpoint, reason)
        with self._lock:
            self.refusals.append(refusal)
        if self._on_refusal is not None:
            self._on_refusal(refusal)
        _reply(client, status[0], status[1], f"comet-eval egress proxy: {endpoint} refused: {reason}")


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ValueError("connection closed before the request head ended")
        data += chunk
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _reply(sock: socket.socket, status: int, phrase: str, text: str) -> None:
    body = (text + "\n").encode()
    with contextlib.suppress(OSError):
        sock.sendall(
            f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both directions are done (a long model stream may be silent for
    minutes: no timeout once the tunnel is up)."""
    a.settimeout(None)
    b.settimeout(None)

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()


def _endpoint(target: str) -> str:
    try:
        from scaffold.workspaces.base import endpoint_of
    except ImportError:  # the relay, in a container: its endpoints were normalised by the harness
        return target.lower()
    return endpoint_of(target)


def _error(message: str) -> Exception:
    try:
        from scaffold.errors import WorkspaceError
    except ImportError:  # the relay, in a container: the message goes to its output
        return RuntimeError(message)
    return WorkspaceError(message)


def _relay_main(argv: list[str]) -> None:
    """The relay's entry point: listen on every address at port ``argv[0]``, let ``argv[1:]`` through."""
    port, allowed = int(argv[0]), argv[1:]

    def report(refusal: Refusal) -> None:
        print(json.dumps({"refused": refusal.target, "reason": refusal.reason}), flush=True)

    EgressProxy(allowed, host="0.0.0.0", port=port, on_refusal=report).start()
    print(json.dumps({"listening": port, "allowed": sorted(allowed)}), flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    _relay_main(sys.argv[1:])
