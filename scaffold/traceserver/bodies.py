"""Request bodies in (inflated, parsed) and answers out, shared by the LangSmith and Langfuse sides."""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["BodyError", "Handled", "inflate", "json_body", "not_found", "now_iso"]


class BodyError(ValueError):
    """A request body the server cannot read; *status* is what to answer (400, 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Handled:
    """One answer: *body* is JSON (None: empty) or raw bytes sent as *content_type*.

    *summary* is what the request log keeps of the request body.
    """

    status: int
    body: Any = None
    summary: Any = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def not_found(message: str, *, langfuse: bool = False) -> Handled:
    """A 404 in the service's own error shape (LangSmith ``detail``, Langfuse ``message``/``error``)."""
    body = {"message": message, "error": "LangfuseNotFoundError"} if langfuse else {"detail": message}
    return Handled(404, body)


def inflate(raw: bytes, encoding: str) -> bytes:
    """*raw* decoded per its Content-Encoding: gzip and deflate (Langfuse's OTLP exporter), zstd (LangSmith)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    try:
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise BodyError(400, f"cannot inflate the {encoding} request body: {exc}") from exc
    if encoding == "zstd":
        try:
            # LangSmith's SDK depends on zstandard; without it this server cannot have offered zstd.
            import zstandard
        except ImportError:
            raise BodyError(415, "zstd request bodies need the zstandard package") from None
        try:
            # Streamed frames carry no content size, so decompress as a stream rather than one-shot.
            return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        except zstandard.ZstdError as exc:
            raise BodyError(400, f"cannot inflate the zstd request body: {exc}") from exc
    raise BodyError(415, f"unsupported content-encoding {encoding!r}")


def json_body(data: bytes) -> Any:
    """The body as JSON; None when empty."""
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BodyError(400, f"the request body is not JSON: {exc}") from exc
