"""The HTTP side of the trace server: dispatch, failure injection, request log, background thread.

Standard library only (``http.server.ThreadingHTTPServer``), HTTP/1.1 with keep-alive. One lock
guards the recorded state, so the SDKs' parallel uploads (LangSmith's tracing threads, Langfuse's span
and score consumers) are recorded whole; injected delays are served outside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scaffold.traceserver.bodies import BodyError, Handled, inflate
from scaffold.traceserver.failures import Failure, FailurePlan, Injected
from scaffold.traceserver.langfuse import LangfuseState
from scaffold.traceserver.langsmith import LangSmithState
from scaffold.traceserver.redact import REDACTED, redact_headers, scrub, secrets_in
from scaffold.traceserver.routes import route_of
from scaffold.util.httpserve import LocalServer, TrackedHandler, TrackedHTTPServer

__all__ = ["REDACTED", "TraceServer"]


class TraceServer(LocalServer):
    """Records what the LangSmith and Langfuse SDKs send; see :mod:`scaffold.traceserver` for the views.

    ``with TraceServer() as server:`` serves on a background thread at ``server.url``.
    """

    kind = "trace server"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        multipart: bool = True,
        zstd: bool = False,
        failures: Iterable[Failure] = (),
        log_path: Path | str | None = None,
        decoded_path: Path | str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.log_path = Path(log_path) if log_path is not None else None
        self.decoded_path = Path(decoded_path) if decoded_path is not None else None
        self._failures = FailurePlan(failures)
        self._langsmith = LangSmithState(multipart=multipart, zstd=zstd)
        self._langfuse = LangfuseState()
        self._requests: list[dict[str, Any]] = []
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    # --- the views ---------------------------------------------------------------------------------

    def requests(self) -> list[dict[str, Any]]:
        """The request log so far (credentials redacted), oldest first."""
        with self._lock:
            return [dict(entry) for entry in self._requests]

    def decoded(self) -> dict[str, Any]:
        """What arrived, decoded: ``{"langsmith": {...}, "langfuse": {...}}`` (credentials scrubbed)."""
        with self._lock:
            view = {"langsmith": self._langsmith.decoded(), "langfuse": self._langfuse.decoded()}
            secrets = set(self._secrets)
        # The views are fresh copies at the top level only: a JSON round trip detaches them fully.
        copied = json.loads(json.dumps(view, default=str))
        return scrub(copied, secrets)  # type: ignore[no-any-return]

    def write_decoded(self, path: Path | str) -> Path:
        """Write ``decoded()`` as JSON to *path* (atomically: a reader never sees half a file)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(self.decoded(), indent=2, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    # --- failures ----------------------------------------------------------------------------------

    def fail(self, *failures: Failure) -> None:
        """Add failures while running; they count requests from now on."""
        for failure in failures:
            self._failures.add(failure)

    def clear_failures(self) -> None:
        self._failures.clear()

    # --- lifecycle (scaffold.util.httpserve.LocalServer) -------------------------------------------------

    def _closed(self) -> None:
        if self.decoded_path is not None:
            self.write_decoded(self.decoded_path)

    # --- requests ----------------------------------------------------------------------------------

    def _respond(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Handled:
        """Answer one request and log it; the HTTP handler only writes what this returns."""
        split = urlsplit(target)
        path = split.path.rstrip("/") or "/"
        route = route_of(path)
        if route == "inspect":
            return self._inspect(method, path)
        injected = self._failures.take(route, path)
        if injected is not None and injected.delay > 0:
            time.sleep(injected.delay)  # outside the lock: other requests go on meanwhile
        with self._lock:
            self._secrets |= secrets_in(headers)
            handled = self._answer(method, path, parse_qs(split.query), headers, raw, route, injected)
            entry = {
                "seq": len(self._requests),
                "time": time.time(),
                "method": method,
                "path": target,
                "route": route,
                "status": handled.status,
                "headers": redact_headers(headers),
                "body": handled.summary,
                "failure": injected.describe() if injected is not None else None,
            }
            entry = scrub(entry, self._secrets)
            self._requests.append(entry)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        return handled

    def _answer(
        self,
        method: str,
        path: str,
        query: Mapping[str, list[str]],
        headers: Mapping[str, str],
        raw: bytes,
        route: str,
        injected: Injected | None,
    ) -> Handled:
        content_type = headers.get("content-type", "")
        langfuse = route.startswith("langfuse.")
        if injected is not None and injected.status is not None:
            # An injected failure changes nothing: the request is logged, not recorded.
            return _failure_answer(injected.status, raw, content_type, langfuse=langfuse)
        try:
            data = inflate(raw, headers.get("content-encoding", ""))
            if route == "health":
                return Handled(200, {"ok": True, "server": "comet-eval trace server"})
            if langfuse:
                return self._langfuse.handle(method, path, query, content_type, data)
            if route.startswith("langsmith."):
                return self._langsmith.handle(method, path, query, content_type, data)
            return Handled(404, {"detail": f"no route for {method} {path}"}, _summary(data, content_type))
        except BodyError as exc:
            body = {"message": str(exc)} if langfuse else {"detail": str(exc)}
            return Handled(exc.status, body, _summary(raw, content_type))
        except Exception as exc:  # a request this server cannot read: answer 500, keep serving
            message = f"trace server failed: {type(exc).__name__}: {exc}"
            return Handled(500, {"message": message} if langfuse else {"detail": message}, _summary(raw, content_type))

    def _inspect(self, method: str, path: str) -> Handled:
        if method != "GET":
            return Handled(405, {"detail": "the /_comet/ views are read-only"})
        if path == "/_comet/decoded":
            return Handled(200, self.decoded())
        if path == "/_comet/requests":
            return Handled(200, self.requests())
        return Handled(404, {"detail": f"no view {path}"})


def _summary(data: bytes, content_type: str) -> Any:
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        with contextlib.suppress(UnicodeDecodeError, json.JSONDecodeError):
            return json.loads(data) if data.strip() else None
    return {"content_type": content_type, "bytes": len(data)} if data else None


def _failure_answer(status: int, raw: bytes, content_type: str, *, langfuse: bool) -> Handled:
    message = f"injected failure: HTTP {status}"
    body = {"message": message, "error": "InjectedFailure"} if langfuse else {"detail": message}
    # Without Retry-After, LangSmith's client waits 30 s before retrying a 429.
    headers = {"retry-after": "0"} if status == 429 else {}
    return Handled(status, body, {"content_type": content_type, "bytes": len(raw)}, headers=headers)


class _Handler(TrackedHandler):
    server_version = "comet-trace-server"
    server: TrackedHTTPServer

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        raw = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        handled = self.server.owner._respond(self.command, self.path, headers, raw)
        if isinstance(handled.body, bytes):
            data, content_type = handled.body, handled.content_type
        elif handled.body is None:
            data, content_type = b"", handled.content_type
        else:
            data, content_type = json.dumps(handled.body, ensure_ascii=False, default=str).encode(), "application/json"
        try:
            self.send_response(handled.status)
            if handled.status != 204:
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
            for name, value in handled.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD" and handled.status != 204:
                self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


TraceServer.handler = _Handler
