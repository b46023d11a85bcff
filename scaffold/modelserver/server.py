"""The HTTP side of the scripted model server: routes, request log, background thread.

Standard library only (``http.server.ThreadingHTTPServer``), HTTP/1.1 with keep-alive; streamed
answers go out as chunked ``text/event-stream``, one chunk per event.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scaffold.modelserver import anthropic, openai
from scaffold.modelserver.script import Answer, Script, load_script, parse_script, plan_answer
from scaffold.util.httpserve import LocalServer, TrackedHandler, TrackedHTTPServer

__all__ = ["REDACTED", "ScriptedModelServer", "redact_headers"]

REDACTED = "[redacted]"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "x-goog-api-key"}
DEFAULT_MODEL = "comet-scripted"


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers with the value of every credential-bearing one replaced by ``[redacted]``."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        secret = low in _SECRET_HEADERS or any(w in low for w in ("secret", "token", "password"))
        out[name] = REDACTED if secret else value
    return out


@dataclass
class _Reply:
    status: int
    body: Any = None
    events: list[tuple[str, dict[str, Any]]] | None = None
    answer: Answer | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, kind: str, message: str) -> _Reply:
    return _Reply(status, anthropic.error_body(kind, message))


class ScriptedModelServer(LocalServer):
    """Answers Anthropic Messages and OpenAI Responses requests from a :class:`Script`.

    ``with ScriptedModelServer(script) as server:`` starts it on a background thread; ``server.url``
    is its base URL and ``server.requests`` every request so far (also appended, one JSON line each,
    to *log_path* when given). *script* is a Script, a mapping of script data, or a YAML file path.
    """

    kind = "scripted model server"

    def __init__(
        self,
        script: Script | Mapping[str, Any] | Path | str,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: Path | str | None = None,
    ) -> None:
        if isinstance(script, Script):
            self.script = script
        elif isinstance(script, Mapping):
            self.script = parse_script(script)
        else:
            self.script = load_script(script)
        self.host = host
        self.port = port
        self.log_path = Path(log_path) if log_path is not None else None
        self._requests: list[dict[str, Any]] = []
        # Calls answered with a scripted error so far, per (route, conversation, turn): bounds ``times``.
        self._errors_sent: dict[tuple[str, int | None, int | None], int] = {}
        self._lock = threading.Lock()

    # --- the request log -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of the request log so far."""
        with self._lock:
            return list(self._requests)

    # --- requests ----------------------------------------------------------------------------------

    def _respond(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> _Reply:
        """Answer one request and log it; the HTTP handler only writes what this returns."""
        body: Any = None
        reply: _Reply
        try:
            body = _decode_body(raw, headers.get("content-encoding", ""))
        except _BodyError as exc:
            reply = _error(exc.status, "invalid_request_error", str(exc))
            body = raw.decode("utf-8", "replace")
        else:
            try:
                reply = self._route(method, urlsplit(target).path, headers, body)
            except Exception as exc:  # a request this server cannot read: answer 500, keep serving
                reply = _error(500, "api_error", f"scripted model server failed: {type(exc).__name__}: {exc}")
        entry = {
            "method": method,
            "path": target,
            "headers": redact_headers(headers),
            "body": body,
            "status": reply.status,
            "answer": reply.answer.describe() if reply.answer else None,
        }
        self._log(entry)
        return reply

    def _log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            entry = {"seq": len(self._requests), **entry}
            self._requests.append(entry)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")

    def _route(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> _Reply:
        path = path.rstrip("/") or "/"
        if path == "/" and method in ("GET", "HEAD"):
            return _Reply(200, {"ok": True, "server": "comet-eval scripted model server"})
        if path == "/v1/models" and method == "GET":
            return _Reply(200, openai.models_body([self.script.model or DEFAULT_MODEL]))
        posts = {"/v1/messages", "/v1/messages/count_tokens", "/v1/responses"}
        if path not in posts or method != "POST":
            return _error(404, "not_found_error", f"no route for {method} {path}")
        if not isinstance(body, dict):
            return _error(400, "invalid_request_error", "the request body must be a JSON object")
        model = str(body.get("model") or self.script.model or DEFAULT_MODEL)
        if path == "/v1/messages/count_tokens":
            return _Reply(200, anthropic.count_tokens(body))
        if path == "/v1/messages":
            answer = self._wait(plan_answer(self.script, anthropic.request_view(body, headers)))
            if (failure := self._scripted_error(path, answer)) is not None:
                return failure
            if body.get("stream"):
                return _Reply(200, events=anthropic.stream_events(answer, model), answer=answer)
            return _Reply(200, anthropic.message_body(answer, model), answer=answer)
        answer = self._wait(plan_answer(self.script, openai.request_view(body, headers)))
        if (failure := self._scripted_error(path, answer)) is not None:
            return failure
        custom = openai.custom_tools(body)
        now = int(time.time())
        if body.get("stream"):
            events = openai.stream_events(answer, model, created_at=now, custom=custom)
            return _Reply(200, events=[(e["type"], e) for e in events], answer=answer)
        return _Reply(200, openai.response_body(answer, model, created_at=now, custom=custom), answer=answer)

    def _wait(self, answer: Answer) -> Answer:
        """*answer*, after the script's latency when it answers a model call (side requests: at once)."""
        if self.script.latency and answer.kind != "side":
            time.sleep(self.script.latency)
        return answer

    def _scripted_error(self, path: str, answer: Answer) -> _Reply | None:
        """The scripted HTTP error for this call, in the route's provider format; None to answer normally."""
        error = answer.error
        if error is None:
            return None
        key = (path, answer.conversation, answer.turn)
        with self._lock:
            sent = self._errors_sent.get(key, 0)
            if error.times is not None and sent >= error.times:
                return None
            self._errors_sent[key] = sent + 1
        if path == "/v1/messages":
            body = anthropic.error_body(error.type, error.message)
        else:
            body = openai.error_body(error.type, error.message, error.status)
        notes = {**answer.notes, "error": error.model_dump(), "error_call": sent + 1}
        # Requests are logged with the answer; a failed call logs what was sent instead of the response.
        return _Reply(error.status, body, answer=replace(answer, notes=notes, text="", calls=()))


class _BodyError(ValueError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _decode_body(raw: bytes, encoding: str) -> Any:
    """The request body as JSON (None when empty); gzip/deflate bodies are inflated first."""
    encoding = encoding.strip().lower()
    try:
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise _BodyError(400, f"cannot inflate the {encoding} request body: {exc}") from exc
    if encoding not in ("", "identity", "gzip", "deflate"):
        raise _BodyError(415, f"unsupported content-encoding {encoding!r}")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BodyError(400, f"the request body is not JSON: {exc}") from exc


class _Handler(TrackedHandler):
    server_version = "comet-scripted-model-server"
    server: TrackedHTTPServer

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        raw = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.server.owner._respond(self.command, self.path, headers, raw)
        try:
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_json(self, reply: _Reply) -> None:
        data = json.dumps(reply.body, ensure_ascii=False).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.extra_headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _send_events(self, reply: _Reply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, data in reply.events or ():
            frame = f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
            self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


ScriptedModelServer.handler = _Handler
