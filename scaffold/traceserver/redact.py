"""Credentials out of everything the trace server keeps: headers, and any string that repeats one.

The SDKs send credentials only in headers, but a client may echo them elsewhere (metadata copied from
the environment, an error text), so the values learned from the headers are scrubbed everywhere.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "redact_headers", "scrub", "secrets_in"]

REDACTED = "[redacted]"
_SECRET_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "x-langfuse-public-key",  # not a secret on its own, but half of the Basic credential
}
_SHORTEST = 8  # shorter values ("x", "test") would scrub ordinary text; real keys are far longer


def _is_secret(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_HEADERS or any(w in low for w in ("secret", "token", "password", "api-key", "apikey"))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers with the value of every credential-bearing one replaced by ``[redacted]``."""
    return {name: REDACTED if _is_secret(name) else value for name, value in headers.items()}


def secrets_in(headers: Mapping[str, str]) -> set[str]:
    """The credential values in *headers*: raw values, and a Basic token's decoded user and password."""
    found: set[str] = set()
    for name, value in headers.items():
        if not _is_secret(name):
            continue
        found.add(value.strip())
        scheme, _, token = value.strip().partition(" ")
        if not token:
            continue
        found.add(token.strip())
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                continue
            found.update({user, password})
    return {s for s in found if len(s) >= _SHORTEST}


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """*value* (JSON-like) with every occurrence of a secret in its strings and keys replaced."""
    ordered = sorted(set(secrets), key=len, reverse=True)  # longest first: a token before its parts
    if not ordered:
        return value

    def text(s: str) -> str:
        for secret in ordered:
            if secret in s:
                s = s.replace(secret, REDACTED)
        return s

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, Mapping):
            return {text(str(k)): walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)
