"""A trace server: the LangSmith and Langfuse ingestion APIs their official SDKs call, recorded offline.

Neither service can run here, so the tracing suites' tests point the real SDKs (langsmith 0.15.1,
langfuse 5.2.0) at this server instead: it answers every endpoint they call with the JSON their models
expect, keeps a request log with credentials redacted, decodes what arrived, and can be told to fail.

Python API::

    from scaffold.traceserver import Failure, TraceServer

    with TraceServer(failures=[Failure("langfuse.scores", status=500, times=1)]) as server:
        ...  # LANGSMITH_ENDPOINT=server.url / Langfuse(base_url=server.url)
        server.requests()   # the request log so far: list of entries (below)
        server.decoded()    # what arrived, decoded (below)
        server.fail(Failure("*", delay=2.0))   # more failures while running
        server.clear_failures()
        server.write_decoded(path)   # decoded() as JSON, written atomically

``TraceServer(host="127.0.0.1", port=0, *, multipart=True, zstd=False, failures=(), log_path=None,
decoded_path=None)``: *multipart* is what ``GET /info`` offers LangSmith
(``batch_ingest_config.use_multipart_endpoint``: ``POST /runs/multipart``, else ``POST /runs/batch``);
*zstd* lets LangSmith compress multipart bodies (``instance_flags.zstd_compression_enabled``);
*log_path* gets one JSON line per request as it is answered; *decoded_path* gets ``decoded()`` as JSON
at ``stop()``. ``server.url`` is ``http://HOST:PORT`` once started.

``Failure(route, status=None, delay=0.0, times=None)``: requests whose route matches *route* wait
*delay* seconds, then are answered with *status* (when given) and an error body instead of the normal
answer; only the first *times* matching requests (None: all). A failed request is logged
(``"failure"`` in its entry) and changes nothing in ``decoded()``. *route* is a route name (below), an
fnmatch pattern of route names (``"langfuse.*"``, ``"*"``) or a path prefix (``"/api/public/scores"``).
``parse_failure("langfuse.scores=500x2")`` / ``parse_delay("*=1.5")`` read the command line's forms.

Route names: ``langsmith.info``, ``langsmith.datasets``, ``langsmith.sessions``, ``langsmith.examples``,
``langsmith.runs`` (multipart, batch and single runs), ``langsmith.feedback``; ``langfuse.projects``,
``langfuse.otel``, ``langfuse.scores``, ``langfuse.ingestion``, ``langfuse.other`` (media, prompts,
...); ``health`` (``GET /``); ``unknown`` (404). ``GET /_comet/decoded`` and ``GET /_comet/requests``
serve the two views as JSON to other processes (never logged, never failed).

Request log entry (``requests()``, and one JSON line each in *log_path*)::

    {"seq": 0, "time": 1764640000.1, "method": "POST", "path": "/api/public/scores", "route": "langfuse.scores",
     "status": 202, "headers": {... credentials "[redacted]" ...}, "body": <summary>,
     "failure": null | {"delay": 0.0, "status": 500, "failures": [{"route", "status", "delay", "times"}]}}

``path`` keeps the query string; header names are lowercase.

Body summary: JSON bodies as sent; multipart bodies ``{"parts": [{"name", "content_type", "bytes"}]}``;
OTLP bodies ``{"otlp_spans": N}``; anything else ``{"content_type", "bytes"}``. Every credential the
server was sent (``x-api-key``, Basic user and password, bearer tokens) is replaced by ``[redacted]``
anywhere in the log and in the decoded view, not only in the headers (values of 8 characters or more:
a placeholder key like ``x`` is redacted in the headers only).

Decoded view (``decoded()``; lists in arrival order)::

    {"langsmith": {
        "datasets": [{"id", "name", "description", "data_type", "metadata", "created_at", ...}],
        "sessions": [{"id", "name", "reference_dataset_id", "description", "metadata", "start_time",
                      "end_time", ...}],                        # experiments (projects)
        "examples": [{"id", "dataset_id", "inputs", "outputs", "metadata", ...}],
        "runs": [{"id", "name", "run_type", "trace_id", "parent_run_id", "dotted_order", "session_name",
                  "session_id", "reference_example_id", "inputs", "outputs", "error", "extra", "events",
                  "tags", "start_time", "end_time", ...}],      # post and patches merged by id
        "feedback": [{"id", "run_id", "trace_id", "key", "score", "value", "comment", "session_id", ...}]},
     "langfuse": {
        "spans": [{"trace_id", "span_id", "parent_span_id" (None for a root), "name", "kind",
                   "start_time_unix_nano", "end_time_unix_nano", "status", "scope",
                   "attributes": {raw OTLP attributes},
                   "resource": {resource attributes},
                   "type", "input", "output", "metadata"}],    # from langfuse.observation.*, JSON-parsed
        "scores": [{"id", "traceId", "observationId", "name", "value", "dataType", "comment", "metadata",
                    "environment", ..., "via": "scores" | "ingestion"}],  # v5 and v4 endpoints alike
        "events": [{"id", "type", "timestamp", "body"}],  # other v4 ingestion events
        "media": [{"mediaId", "contentType", "sha256Hash", ...}],   # upload-URL requests (answered "uploaded")
        "traces": [{"trace_id", "roots": [span + {"children": [span + {"children": ...}, ...]}]}]}}

Span and trace ids are lowercase hex; ``input``/``output``/``metadata`` values are JSON-parsed when the
attribute holds JSON, else the string. Records are keyed by their ids: a retried upload (after an
injected 500, say) is recorded once. Scores keep the SDK's camelCase fields as sent (v5 sends ``value``
as a float, ``True`` as ``1.0``). What the SDKs do, seen through this server: the LangSmith pytest
plugin puts ``log_inputs``/``log_reference_outputs`` on the *example* and the test function's
arguments in the run's ``inputs``; ``log_outputs`` are the run's ``outputs``; feedback scores are
rounded to 4 decimals by the SDK; feedback may come as ``POST /feedback`` or as multipart parts.
"""

from __future__ import annotations

from scaffold.traceserver.failures import Failure, parse_delay, parse_failure
from scaffold.traceserver.server import REDACTED, TraceServer

__all__ = ["REDACTED", "Failure", "TraceServer", "parse_delay", "parse_failure"]
