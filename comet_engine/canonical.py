"""Canonical JSON, digests and deep freezing: the same value gives the same bytes and hash everywhere."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["canonical_json", "digest", "freeze", "short_id", "thaw"]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, no NaN: the form that is hashed and compared."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of *value*."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def short_id(*parts: object) -> str:
    """The first 16 hex characters of ``sha256("p1:p2:...")`` (the original Comet engine's action-id scheme)."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:16]


def freeze(value: Any) -> Any:
    """A read-only deep copy of a JSON value: objects become mapping proxies, arrays tuples.

    Raises ``TypeError``/``ValueError`` for anything that is not plain JSON (the caller names the field).
    """
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, got {key!r}")
            out[key] = freeze(item)
        return MappingProxyType(out)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("NaN and infinity are not JSON")
        return value
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def thaw(value: Any) -> Any:
    """A plain, mutable JSON copy of a (possibly frozen) value."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value
