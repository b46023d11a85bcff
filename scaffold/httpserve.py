"""The HTTP plumbing the harness's local servers share: the scripted model server and the trace server.

A threaded server whose ``stop()`` does not wait for keep-alive connections (it shuts them down), and a
handler that answers promptly (TCP_NODELAY), says nothing on stderr and reads plain and chunked bodies.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["TrackedHTTPServer", "TrackedHandler"]


class TrackedHTTPServer(ThreadingHTTPServer):
    """Keeps its open connections, so :meth:`close_connections` can end keep-alive ones at stop."""

    daemon_threads = True
    block_on_close = False  # keep-alive connections must not hold up stop()

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, family: int) -> None:
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
