"""Route names of the trace server: what failures match, what the request log shows."""

from __future__ import annotations

__all__ = ["ROUTES", "route_of"]

ROUTES = (
    "health",
    "inspect",
    "langsmith.info",
    "langsmith.datasets",
    "langsmith.sessions",
    "langsmith.examples",
    "langsmith.runs",
    "langsmith.feedback",
    "langfuse.projects",
    "langfuse.otel",
    "langfuse.scores",
    "langfuse.ingestion",
    "langfuse.other",
    "unknown",
)
INSPECT_PREFIX = "/_comet/"  # the server's own read-only views (decoded, requests): never logged or failed

_LANGSMITH = {
    "info": "langsmith.info",
    "datasets": "langsmith.datasets",
    "sessions": "langsmith.sessions",
    "examples": "langsmith.examples",
    "runs": "langsmith.runs",
    "feedback": "langsmith.feedback",
}


def route_of(path: str) -> str:
    """The route name of a request path (query string removed)."""
    path = path.rstrip("/") or "/"
    if path.startswith(INSPECT_PREFIX):
        return "inspect"
    if path in ("/", "/health", "/ok"):
        return "health"
    if path.startswith("/api/public/"):
        rest = path.removeprefix("/api/public/")
        if rest == "projects":
            return "langfuse.projects"
        if rest.startswith("otel/"):
            return "langfuse.otel"
        if rest == "scores" or rest.startswith("scores/"):
            return "langfuse.scores"
        if rest == "ingestion":
            return "langfuse.ingestion"
        return "langfuse.other"
    # LangSmith's base URL may carry an /api/v1 prefix (the hosted UI's form): accept both.
    segments = path.removeprefix("/api/v1").strip("/").split("/")
    first = segments[0]
    if first in _LANGSMITH:
        return _LANGSMITH[first]
    return "unknown"
