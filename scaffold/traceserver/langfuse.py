"""Langfuse's public API as the langfuse SDK (v5, and v4's ingestion) calls it, recorded in memory.

Spans arrive as OTLP/HTTP protobuf (``ExportTraceServiceRequest``) and are decoded with
``opentelemetry-proto``, which the langfuse SDK brings along (imported when the first spans arrive,
so the server runs without it for LangSmith alone). Scores arrive as a JSON array (v5,
``POST /api/public/scores``) or as ``score-create`` events of an ingestion batch (v4); both land in one
list, marked with the endpoint they came by.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from scaffold.traceserver.bodies import BodyError, Handled, json_body, not_found, now_iso

__all__ = ["PROJECT", "LangfuseState", "nest_traces"]

PROJECT = {
    "id": "comet-trace-server-project",
    "name": "comet-trace-server",
    "organization": {"id": "comet-trace-server-org", "name": "comet-trace-server"},
    "metadata": {},
    "retentionDays": None,
}
_OBSERVATION = "langfuse.observation."
_METADATA = "langfuse.observation.metadata."
_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _parsed(value: Any) -> Any:
    """An attribute's value, JSON-parsed when it holds JSON (Langfuse serialises input/output/metadata)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as plain Python."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return bytes(value.bytes_value).hex()
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _any_value(pair.value) for pair in pairs}


def _event(event: Any) -> dict[str, Any]:
    return {"name": event.name, "time_unix_nano": event.time_unix_nano, "attributes": _attributes(event.attributes)}


def decode_otlp(data: bytes) -> list[dict[str, Any]]:
    """The spans of a protobuf ``ExportTraceServiceRequest`` (what Langfuse's OTLP/HTTP exporter sends)."""
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise BodyError(415, "decoding OTLP spans needs opentelemetry-proto (installed with langfuse)") from None
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except Exception as exc:  # google.protobuf's DecodeError, without importing protobuf's untyped modules
        raise BodyError(400, f"not a protobuf OTLP ExportTraceServiceRequest: {exc}") from exc
    spans: list[dict[str, Any]] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = {"name": scope_spans.scope.name, "version": scope_spans.scope.version}
            for span in scope_spans.spans:
                attributes = _attributes(span.attributes)
                spans.append(
                    {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex() or None,
                        "name": span.name,
                        "kind": _KINDS.get(span.kind, str(span.kind)),
                        "start_time_unix_nano": span.start_time_unix_nano,
                        "end_time_unix_nano": span.end_time_unix_nano,
                        "status": {
                            "code": _STATUS.get(span.status.code, str(span.status.code)),
                            "message": span.status.message,
                        },
                        "scope": scope,
                        "attributes": attributes,
                        "resource": resource,
                        "events": [
                            {
                                "name": e.name,
                                "time_unix_nano": e.time_unix_nano,
                                "attributes": _attributes(e.attributes),
                            }
                            for e in span.events
                        ],
                        "type": attributes.get(_OBSERVATION + "type"),
                        "input": _parsed(attributes.get(_OBSERVATION + "input")),
                        "output": _parsed(attributes.get(_OBSERVATION + "output")),
                        "metadata": {
                            key.removeprefix(_METADATA): _parsed(value)
                            for key, value in attributes.items()
                            if key.startswith(_METADATA)
                        },
                    }
                )
    return spans


def nest_traces(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Spans grouped by trace (first seen first), each trace's spans nested under their parents.

    A span whose parent never arrived is a root of its trace, so nothing is dropped.
    """
    order: list[str] = []
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        if span["trace_id"] not in by_trace:
            order.append(span["trace_id"])
        by_trace.setdefault(span["trace_id"], []).append(span)
    traces = []
    for trace_id in order:
        nodes = {s["span_id"]: {**s, "children": []} for s in by_trace[trace_id]}
        roots = []
        for node in nodes.values():
            parent = nodes.get(node["parent_span_id"] or "")
            if parent is not None and parent is not node:
                parent["children"].append(node)
            else:
                roots.append(node)
        for node in nodes.values():
            node["children"].sort(key=lambda n: n["start_time_unix_nano"])
        traces.append({"trace_id": trace_id, "roots": roots})
    return traces


class LangfuseState:
    """Spans, scores and other ingestion events as the SDK sent them."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.scores: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.media: list[dict[str, Any]] = []

    def decoded(self) -> dict[str, Any]:
        # A span exported again (a retry after an error answer) is the same span: the last copy wins.
        unique = list({(s["trace_id"], s["span_id"]): s for s in self.spans}.values())
        return {
            "spans": [dict(s) for s in unique],
            "scores": [dict(s) for s in self.scores.values()],
            "events": [dict(e) for e in self.events.values()],
            "media": [dict(m) for m in self.media],
            "traces": nest_traces(unique),
        }

    def handle(self, method: str, path: str, query: Mapping[str, list[str]], content_type: str, data: bytes) -> Handled:
        """Answer one request under ``/api/public/`` (its body already inflated)."""
        rest = path.removeprefix("/api/public/").strip("/")
        if rest.startswith("otel/") and rest.endswith("/traces") and method == "POST":
            spans = decode_otlp(data)
            self.spans.extend(spans)
            # OTLP/HTTP's answer is an ExportTraceServiceResponse: an empty message is zero bytes.
            return Handled(200, b"", {"otlp_spans": len(spans)}, content_type="application/x-protobuf")
        body = json_body(data)
        if rest == "projects" and method == "GET":
            return Handled(200, {"data": [PROJECT]}, body)
        if rest == "scores" and method == "POST":
            return Handled(202, self._scores(body), body)
        if rest == "scores" and method == "GET":
            scores = list(self.scores.values())
            meta = {"page": 1, "limit": len(scores), "totalItems": len(scores), "totalPages": 1}
            return Handled(200, {"data": scores, "meta": meta}, body)
        if rest == "ingestion" and method == "POST":
            return Handled(207, self._ingestion(body), body)
        if rest == "media" and method == "POST" and isinstance(body, dict):
            # uploadUrl null means "already uploaded": the SDK skips the upload to object storage.
            media_id = str(body.get("sha256Hash") or uuid.uuid4()).replace("+", "-").replace("/", "_")[:22]
            self.media.append({"mediaId": media_id, **body})
            return Handled(200, {"mediaId": media_id, "uploadUrl": None}, body)
        if rest.startswith("media/") and method == "PATCH":
            return Handled(204, None, body)
        return Handled(404, not_found(f"no route for {method} /api/public/{rest}", langfuse=True).body, body)

    def _scores(self, body: Any) -> dict[str, Any]:
        items = body if isinstance(body, list) else [body]
        if not all(isinstance(item, dict) and item.get("name") for item in items):
            raise BodyError(400, "POST /api/public/scores takes a JSON array of scores, each with a name")
        for item in items:
            self._add_score(item, "scores")
        return {"message": "Accepted"}

    def _add_score(self, score: dict[str, Any], via: str) -> None:
        score_id = str(score.get("id") or uuid.uuid4())
        self.scores[score_id] = {**score, "id": score_id, "via": via}

    def _ingestion(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("batch"), list):
            raise BodyError(400, 'POST /api/public/ingestion takes {"batch": [...]}')
        successes: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for event in body["batch"]:
            if not isinstance(event, dict) or not isinstance(event.get("body"), dict):
                errors.append(
                    {
                        "id": str(event.get("id")) if isinstance(event, dict) else "",
                        "status": 400,
                        "message": "an ingestion event needs a body",
                    }
                )
                continue
            event_id = str(event.get("id") or uuid.uuid4())
            if event.get("type") == "score-create":
                self._add_score(event["body"], "ingestion")
            else:
                self.events[event_id] = {"timestamp": now_iso(), **event, "id": event_id}
            successes.append({"id": event_id, "status": 201})
        return {"successes": successes, "errors": errors}
