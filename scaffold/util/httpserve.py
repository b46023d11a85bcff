"""The HTTP plumbing the harness's local servers share: the scripted model server and the trace server.

A threaded server whose ``stop()`` does not wait for keep-alive connections (it shuts them down), a
handler that answers promptly (TCP_NODELAY), says nothing on stderr and reads plain and chunked bodies,
and :class:`LocalServer`, the life cycle both servers have: bind, serve on a thread or in the foreground,
stop, ``with``.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from scaffold.errors import CometError

__all__ = ["LocalServer", "TrackedHTTPServer", "TrackedHandler", "in_foreground"]


class TrackedHTTPServer(ThreadingHTTPServer):
    """Keeps its open connections, so :meth:`close_connections` can end keep-alive ones at stop."""

    daemon_threads = True
    block_on_close = False  # keep-alive connections must not hold up stop()

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, family: int, owner: Any = None
    ) -> None:
        self.owner = owner
        """The server object whose requests the handler answers (a LocalServer)."""
        self.address_family = family
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def close_connections(self) -> None:
        with self.connections_lock:
            conns, self.connections = list(self.connections), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class TrackedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # idle keep-alive connections are dropped after this
    server: TrackedHTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle + delayed ACK cost ~40 ms each.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is the record."""

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""


class LocalServer:
    """The life cycle of a server of this machine: ``start()`` serves on a daemon thread, ``serve_forever``
    in this thread, ``stop()`` ends keep-alive connections and releases the port; ``with`` starts and
    stops. Subclasses name themselves (:attr:`kind`, for errors and the thread), give their handler, set
    ``host``, ``port`` and ``log_path``, and may act once closed (:meth:`_closed`)."""

    kind: ClassVar[str]
    handler: ClassVar[type[BaseHTTPRequestHandler]]
    host: str
    port: int
    log_path: Path | None
    _httpd: TrackedHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` once bound (``start`` or ``serve_forever``)."""
        if self._httpd is None:
            raise CometError(f"the {self.kind} is not started: use start() or a with block")
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def start(self) -> Self:
        """Bind and serve on a daemon thread; returns self."""
        httpd = self._bind()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=self.kind.replace(" ", "-"), daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self, ready: Callable[[str], None] | None = None) -> None:
        """Bind and serve in this thread until interrupted; *ready* gets the URL once bound."""
        httpd = self._bind()
        if ready is not None:
            ready(self.url)
        try:
            httpd.serve_forever(poll_interval=0.2)
        finally:
            self._close()

    def stop(self) -> None:
        """Stop serving, close open connections and release the port (then :meth:`_closed`)."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _closed(self) -> None:
        """Called once the port is released (nothing by default)."""

    def _bind(self) -> TrackedHTTPServer:
        if self._httpd is not None:
            raise CometError(f"the {self.kind} is already started")
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        httpd = TrackedHTTPServer((self.host, self.port), self.handler, family=family, owner=self)
        self._httpd = httpd
        return httpd

    def _close(self) -> None:
        httpd, self._httpd, self._thread = self._httpd, None, None
        if httpd is not None:
            httpd.close_connections()
            httpd.server_close()
            self._closed()


def in_foreground(serve: Callable[[], None], host: str, port: int) -> int:
    """Run a server command's *serve* (set up, then serve until interrupted): its exit status, 0 when
    interrupted (Ctrl-C), 2 with one ``error:`` line on stderr for a bad option or file (a CometError)
    or an address it cannot listen on."""
    try:
        serve()
    except CometError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0
