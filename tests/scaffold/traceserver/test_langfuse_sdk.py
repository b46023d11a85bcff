"""The real langfuse SDK (5.2.0) against the trace server: auth check, nested spans, scores, no secrets."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from scaffold.traceserver import REDACTED, TraceServer
from tests.scaffold.traceserver.sdk import LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY, PLANTED, run_langfuse_trial


def _tree(node: dict[str, Any]) -> Any:
    return (node["name"], node["type"], [_tree(child) for child in node["children"]])


def test_a_reported_trial_arrives_decoded(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    decoded_file = tmp_path / "decoded.json"
    with TraceServer(log_path=log, decoded_path=decoded_file) as server:
        printed, stderr = run_langfuse_trial(server.url, tmp_path)
        decoded = server.decoded()["langfuse"]
        requests = server.requests()

    assert printed["auth"] is True
    assert "validation error" not in stderr.lower(), stderr  # the answers fit the SDK's models

    by_name = {span["name"]: span for span in decoded["spans"]}
    assert set(by_name) == {"comet.eval.run", "agent.turn/1", "agent.tool_call/Bash/1"}
    run = by_name["comet.eval.run"]
    assert run["trace_id"] == printed["trace_id"]
    assert run["span_id"] == printed["run_id"]
    assert run["parent_span_id"] is None
    assert run["type"] == "span"
    assert run["input"] == {"task": "hello", "treatment": "baseline", "experiment_id": "exp1"}
    assert run["output"] == {"passed": True, "checks_passed": 3, "checks_failed": 1}
    assert run["metadata"] == {"experiment_id": "exp1"}
    assert run["scope"]["name"] == "langfuse-sdk"
    assert run["resource"]["langfuse.environment"] == "ci"
    assert by_name["agent.turn/1"]["parent_span_id"] == run["span_id"]
    assert by_name["agent.tool_call/Bash/1"]["type"] == "tool"

    [trace] = decoded["traces"]
    assert trace["trace_id"] == printed["trace_id"]
    assert [_tree(root) for root in trace["roots"]] == [
        ("comet.eval.run", "span", [("agent.turn/1", "span", [("agent.tool_call/Bash/1", "tool", [])])])
    ]

    scores = {score["name"]: score for score in decoded["scores"]}
    assert set(scores) == {"comet.passed", "comet.checks_pass_rate"}
    assert scores["comet.passed"]["value"] == 1.0
    assert scores["comet.passed"]["dataType"] == "BOOLEAN"
    assert scores["comet.checks_pass_rate"]["value"] == 0.75
    assert scores["comet.checks_pass_rate"]["dataType"] == "NUMERIC"
    assert {s["traceId"] for s in scores.values()} == {printed["trace_id"]}
    assert {s["observationId"] for s in scores.values()} == {printed["run_id"]}
    assert {s["via"] for s in scores.values()} == {"scores"}

    routes = [entry["route"] for entry in requests]
    assert routes[0] == "langfuse.projects"
    assert {"langfuse.otel", "langfuse.scores"} <= set(routes)
    assert all(entry["status"] < 300 for entry in requests), requests
    otel = next(entry for entry in requests if entry["route"] == "langfuse.otel")
    assert otel["headers"]["content-type"] == "application/x-protobuf"
    assert otel["headers"]["authorization"] == REDACTED
    assert otel["headers"]["x-langfuse-public-key"] == REDACTED
    assert otel["body"] == {"otlp_spans": 3}

    # Nothing secret anywhere: the log file, the decoded dump written at stop, the in-memory views.
    written = log.read_text() + decoded_file.read_text() + json.dumps(requests) + json.dumps(decoded)
    basic = base64.b64encode(f"{LANGFUSE_PUBLIC_KEY}:{LANGFUSE_SECRET_KEY}".encode()).decode()
    for secret in (*PLANTED, basic):
        assert secret not in written
    assert json.loads(decoded_file.read_text())["langfuse"]["scores"] == decoded["scores"]
