"""The value shapes of a compose file (the Compose specification's), each read into plain Python values.

Every reader takes a YAML value as loaded and returns what the runner needs, or raises :class:`FieldError`
with what the field allows; the caller names the field. Pure.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Final

__all__ = [
    "FieldError",
    "absolute",
    "argv",
    "cpus",
    "duration",
    "mapping",
    "pairs",
    "scalar",
    "size",
    "strings",
    "text",
    "volume_entry",
]

_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_SECONDS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*$", re.IGNORECASE)
_BYTES: Final = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class FieldError(ValueError):
    """A value of the wrong shape: the message says what the field takes."""


def scalar(value: object) -> str:
    """A string, number or boolean as Compose writes it into a string (``true``, ``5``, ``0.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise FieldError("expected a string, a number or a boolean")


def strings(value: object) -> tuple[str, ...]:
    """One string, or a list of strings (numbers allowed, as Compose's ``expose: [5000]``)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        return tuple(str(v) for v in value)
    raise FieldError("expected a string or a list of strings")


def argv(value: object) -> tuple[str, ...] | None:
    """A command line: a list (exec form), or a string split as a shell splits words (no shell runs it,
    as in Compose); None for ``null`` (the image's own)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise FieldError(f"cannot be split into words: {exc}") from None
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return tuple(str(v) for v in value)
    raise FieldError("expected a command: a string or a list of strings")


def pairs(value: object, *, separators: str = "=") -> list[tuple[str, str | None]]:
    """A mapping (``{A: 1, B: null}``) or a list of ``A=1`` / ``B`` entries, in order: (name, value or None
    for a name given without a value). *separators*: what may part a list entry's name from its value."""
    if isinstance(value, Mapping):
        out: list[tuple[str, str | None]] = []
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise FieldError(f"expected names as keys (got {key!r})")
            out.append((key, None if item is None else scalar(item)))
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            if not isinstance(item, str) or not item:
                raise FieldError(f"expected NAME{separators[0]}VALUE strings (got {item!r})")
            cut = min((i for i in (item.find(s) for s in separators) if i > 0), default=-1)
            out.append((item, None) if cut < 0 else (item[:cut], item[cut + 1 :]))
        return out
    raise FieldError(f"expected a mapping or a list of NAME{separators[0]}VALUE strings")


def duration(value: object) -> float:
    """Seconds of a Compose duration (``1m30s``, ``500ms``, ``2s``; a bare number is seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sum(float(n) * _SECONDS[u] for n, u in parts)
    raise FieldError("expected a duration such as 2s, 1m30s or 500ms")


def size(value: object) -> int:
    """Bytes of a Compose size (``64m``, ``1g``, ``512mb``, a bare number of bytes); binary units."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and (match := _SIZE.match(value)):
        number = math.ceil(float(match.group(1)) * _BYTES[match.group(2).lower()])
        if number > 0:
            return number
    raise FieldError("expected a size such as 512m, 2g or a number of bytes")


def cpus(value: object) -> float:
    """A number of CPUs (``0.5``, ``"2"``), greater than 0."""
    try:
        number = float(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else math.nan
    except ValueError:
        number = math.nan
    if math.isfinite(number) and number > 0:
        return number
    raise FieldError("expected a number of CPUs greater than 0")


def volume_entry(entry: object) -> tuple[str, str | None, str, bool, str]:
    """``(kind, source, target, read_only, tmpfs options)`` of a volume entry, short or long syntax;
    kind is ``bind``, ``volume`` or ``tmpfs``."""
    if isinstance(entry, str):
        parts = entry.split(":")
        if len(parts) == 1:
            return "volume", None, absolute(parts[0]), False, ""
        if len(parts) > 3:
            raise FieldError("expected SOURCE:TARGET[:MODE]")
        source, target = parts[0], absolute(parts[1])
        modes = set(parts[2].split(",")) if len(parts) == 3 else set()
        if modes - {"ro", "rw", "z", "Z", "cached", "delegated", "consistent", "nocopy"}:
            raise FieldError(f"unknown mode {parts[2]!r}; use ro or rw")
        kind = "bind" if source.startswith(("/", ".", "~")) else "volume"
        return kind, source, target, "ro" in modes, ""
    body = mapping(entry)
    kind = str(body.get("type", "volume"))
    if kind not in ("bind", "volume", "tmpfs"):
        raise FieldError(f"type {kind!r} is not supported; use bind, volume or tmpfs")
    unknown = set(map(str, body)) - {"type", "source", "target", "read_only", "bind", "volume", "tmpfs", "consistency"}
    if unknown:
        raise FieldError(f"not supported: {', '.join(sorted(unknown))}")
    target = absolute(body.get("target"))
    if kind == "tmpfs":
        tmpfs = mapping(body.get("tmpfs") or {})
        return "tmpfs", None, target, False, f"size={size(tmpfs['size'])}" if "size" in tmpfs else ""
    given = body.get("source")
    if given is not None and not isinstance(given, str):
        raise FieldError("source: expected a string")
    if kind == "bind" and not given:
        raise FieldError("a bind mount needs a source")
    return kind, given or None, target, body.get("read_only") is True, ""


def mapping(value: object) -> Mapping[str, object]:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    raise FieldError("expected a mapping")


def text(value: object, message: str) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise FieldError(message)


def absolute(value: object) -> str:
    if isinstance(value, str) and value.startswith("/") and ".." not in PurePosixPath(value).parts:
        return posixpath.normpath(value)
    raise FieldError("expected an absolute path in the container (without '..')")
