"""``multipart/form-data`` bodies (RFC 7578), as LangSmith's ``POST /runs/multipart`` sends them."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MultipartError", "Part", "boundary_of", "parse_multipart"]

_PARAM = re.compile(r';\s*([A-Za-z0-9_*-]+)=(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))')


class MultipartError(ValueError):
    """A body that is not the multipart/form-data it claims to be."""


@dataclass(frozen=True)
class Part:
    name: str
    content_type: str
    data: bytes
    filename: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


def _params(value: str) -> dict[str, str]:
    return {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3)) for m in _PARAM.finditer(value)}


def boundary_of(content_type: str) -> str:
    """The boundary of a ``multipart/form-data; boundary=...`` content type."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind != "multipart/form-data":
        raise MultipartError(f"expected multipart/form-data, got {kind or 'no content type'}")
    boundary = _params(content_type).get("boundary")
    if not boundary:
        raise MultipartError("multipart/form-data without a boundary")
    return boundary


def parse_multipart(body: bytes, boundary: str) -> list[Part]:
    """The parts of *body*, in order."""
    delimiter = b"--" + boundary.encode()
    chunks = body.split(delimiter)
    if len(chunks) < 2:
        raise MultipartError("the body holds no part delimited by its boundary")
    parts: list[Part] = []
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):  # the closing delimiter
            break
        chunk = chunk.removeprefix(b"\r\n").removeprefix(b"\n")
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            head, sep, data = chunk.partition(b"\n\n")
        if not sep:
            raise MultipartError("a part without a blank line after its headers")
        # The CRLF before the next delimiter belongs to the delimiter, not the data.
        data = data.removesuffix(b"\r\n") if data.endswith(b"\r\n") else data.removesuffix(b"\n")
        headers: list[tuple[str, str]] = []
        for line in head.decode("utf-8", "replace").splitlines():
            name, colon, value = line.partition(":")
            if colon:
                headers.append((name.strip().lower(), value.strip()))
        found = dict(headers)
        disposition = found.get("content-disposition", "")
        params = _params(disposition)
        if "name" not in params:
            raise MultipartError("a part without a name in its Content-Disposition")
        parts.append(
            Part(
                name=params["name"],
                content_type=found.get("content-type", "text/plain"),
                data=data,
                filename=params.get("filename"),
                headers=tuple(headers),
            )
        )
    return parts
