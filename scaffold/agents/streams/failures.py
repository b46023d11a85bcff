"""Typed API failures read from agent streams (the structured signal noise classification trusts first).

A failure is a typed value (scaffold.trajectory.ApiFailure) stored in trial records as::

    {"kind": "rate_limited", "status": 429, "source": "system/api_retry", "message": "...", "final": false}

``kind`` is one of :data:`FAILURE_KINDS`; ``status`` is the HTTP status when the stream says it (else
None); ``final`` is true when the CLI gave up (the run ended on it), false for a retry it announced,
which may have recovered. Shapes observed from the real CLIs against scripted HTTP errors are in
tests/data/streams/{claude,codex}-http-*.jsonl and *-connection-refused.jsonl.
"""

from __future__ import annotations

import re
from typing import Any, Final

from scaffold.trajectory import ApiFailure

__all__ = ["FAILURE_KINDS", "failure", "kind_of", "status_in"]

FAILURE_KINDS: Final = ("rate_limited", "auth_failed", "api_timeout", "network_failed", "api_error")

# Claude Code's own error codes (the ``error`` field of api_retry and of its synthetic message).
_CLAUDE_CODES: Final = {
    "rate_limit": "rate_limited",
    "authentication_failed": "auth_failed",
    "billing_error": "auth_failed",
    "timeout": "api_timeout",
}
_STATUS_KINDS: Final = {
    429: "rate_limited",
    401: "auth_failed",
    403: "auth_failed",
    408: "api_timeout",
    504: "api_timeout",
}
# Only the CLIs' own fixed wordings (see module docstring): a model's prose never reaches these fields.
_MESSAGE_KINDS: Final = (
    (
        re.compile(r"(?i)unable to connect|connection (?:failed|refused|reset|error)|error sending request"),
        "network_failed",
    ),
    (re.compile(r"(?i)timed? ?out|timeout"), "api_timeout"),
    (re.compile(r"(?i)rate.?limit|too many requests"), "rate_limited"),
    (re.compile(r"(?i)unauthori[sz]ed|failed to authenticate|invalid api key|authentication"), "auth_failed"),
)
_STATUS: Final = re.compile(
    r"(?:status:?|API Error:|\()\s*([45]\d\d)\b|\b([45]\d\d) (?:Too Many|Unauthorized|Forbidden|Internal)"
)


def status_in(message: str) -> int | None:
    """The HTTP status a CLI's error message names (``API Error: 500``, ``status 401 Unauthorized``)."""
    m = _STATUS.search(message)
    return int(m.group(1) or m.group(2)) if m else None


def kind_of(status: int | None, code: str | None, message: str) -> str:
    """The failure kind: from the HTTP status, else the CLI's error code, else its fixed wording."""
    if status in _STATUS_KINDS:
        return _STATUS_KINDS[status]
    if code in _CLAUDE_CODES:
        return _CLAUDE_CODES[code]
    if status is None:
        for pattern, kind in _MESSAGE_KINDS:
            if pattern.search(message):
                return kind
    return "api_error"


def failure(source: str, message: str, *, status: Any = None, code: Any = None, final: bool) -> ApiFailure:
    """One failure; *status* is kept only when it is an HTTP error status."""
    known = status if isinstance(status, int) and 400 <= status <= 599 else status_in(message)
    return ApiFailure(kind_of(known, str(code) if code else None, message), known, source, message[:300], final)
