"""The trace server over real HTTP: routes, conflicts, multipart and ingestion decoding, redaction,
failure plans, and the ``comet trace-server`` command."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from scaffold.errors import CometError
from scaffold.traceserver import REDACTED, Failure, TraceServer, parse_delay, parse_failure
from scaffold.traceserver.multipart import parse_multipart
from scaffold.traceserver.redact import scrub, secrets_in
from scaffold.traceserver.routes import route_of
from tests.support.factories import REPO

KEY = "lsv2_pt_secret_value_42"


def call(url: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    data = body if isinstance(body, bytes) else (None if body is None else json.dumps(body).encode())
    sent = {"content-type": "application/json", **(headers or {})}
    conn.request(method, path, body=data, headers=sent)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, (json.loads(raw) if raw else None)


def langsmith(url: str, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    return call(url, method, path, body, {"x-api-key": KEY, **headers})


# --- LangSmith ---------------------------------------------------------------------------------------


def test_info_offers_multipart_or_batch() -> None:
    for multipart in (True, False):
        with TraceServer(multipart=multipart) as server:
            status, info = langsmith(server.url, "GET", "/info")
        assert status == 200
        assert info["batch_ingest_config"]["use_multipart_endpoint"] is multipart
        assert info["instance_flags"]["zstd_compression_enabled"] is False


def test_datasets_sessions_and_examples_conflict_and_are_found() -> None:
    with TraceServer() as server:
        url = server.url
        assert langsmith(url, "GET", "/datasets?limit=1&name=suite") == (200, [])
        status, dataset = langsmith(url, "POST", "/datasets", {"name": "suite", "data_type": "kv"})
        assert status == 200 and dataset["tenant_id"] and dataset["created_at"]
        assert langsmith(url, "POST", "/datasets", {"name": "suite"})[0] == 409
        assert langsmith(url, "GET", "/datasets?limit=1&name=suite")[1] == [dataset]

        session = {"name": "exp:1", "id": "0f7e6a52-0000-4000-8000-000000000001", "reference_dataset_id": dataset["id"]}
        status, made = langsmith(url, "POST", "/sessions", session)
        assert status == 200 and made["id"] == session["id"] and made["tenant_id"]
        assert langsmith(url, "POST", "/sessions", session)[0] == 409
        assert langsmith(url, "GET", "/sessions?name=exp%3A1")[1] == [made]
        status, patched = langsmith(url, "PATCH", f"/sessions/{made['id']}", {"name": None, "end_time": "2026-01-01"})
        assert status == 200 and patched["name"] == "exp:1" and patched["end_time"] == "2026-01-01"

        example_id = "0f7e6a52-0000-4000-8000-0000000000e1"
        assert langsmith(url, "GET", f"/examples/{example_id}")[0] == 404
        example = {"id": example_id, "dataset_id": dataset["id"], "inputs": {"task": "t"}, "outputs": {"x": 1}}
        assert langsmith(url, "POST", "/examples", example)[0] == 200
        assert langsmith(url, "POST", "/examples", example)[0] == 409
        status, found = langsmith(url, "GET", f"/examples/{example_id}")
        assert status == 200 and found["inputs"] == {"task": "t"} and found["modified_at"]
        assert langsmith(url, "PATCH", f"/examples/{example_id}", {"outputs": {"x": 2}})[0] == 200
        assert langsmith(url, "GET", f"/datasets/{dataset['id']}")[1]["example_count"] == 1
        decoded = server.decoded()["langsmith"]
    assert [e["outputs"] for e in decoded["examples"]] == [{"x": 2}]
    assert [s["name"] for s in decoded["sessions"]] == ["exp:1"]


def _multipart(boundary: str, parts: list[tuple[str, Any]]) -> bytes:
    out = b""
    for name, value in parts:
        data = value if isinstance(value, bytes) else json.dumps(value).encode()
        kind = "application/octet-stream" if isinstance(value, bytes) else "application/json"
        out += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n'
                f"Content-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n"
            ).encode()
            + data
            + b"\r\n"
        )
    return out + f"--{boundary}--\r\n".encode()


def test_multipart_posts_patches_and_feedback_merge_by_run() -> None:
    run, child = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    first = _multipart(
        "b0undary",
        [
            (
                f"post.{run}",
                {"id": run, "name": "case", "run_type": "chain", "trace_id": run, "dotted_order": "1Z" + run},
            ),
            (f"post.{run}.inputs", {"task": "t"}),
            (f"post.{child}", {"id": child, "name": "turn", "trace_id": run, "parent_run_id": run}),
            (f"attachment.{run}.image", b"\x89PNG..."),
        ],
    )
    second = _multipart(
        "other",
        [
            (f"patch.{run}", {"id": run, "end_time": "2026-01-01T00:00:01", "name": None}),
            (f"patch.{run}.outputs", {"passed": True}),
            (f"patch.{run}.error", "AssertionError('assert False')"),
            ("feedback.f1", {"id": "f1", "run_id": run, "key": "pass", "score": 1}),
        ],
    )
    with TraceServer() as server:
        for boundary, body in (("b0undary", first), ("other", gzip.compress(second))):
            encoding = {"content-encoding": "gzip"} if boundary == "other" else {}
            status, _ = langsmith(
                server.url,
                "POST",
                "/runs/multipart",
                body,
                **{"content-type": f"multipart/form-data; boundary={boundary}"},
                **encoding,
            )
            assert status == 202
        decoded, requests = server.decoded()["langsmith"], server.requests()
    runs = {r["id"]: r for r in decoded["runs"]}
    assert runs[run]["name"] == "case"  # a patch's null never erases
    assert runs[run]["inputs"] == {"task": "t"} and runs[run]["outputs"] == {"passed": True}
    assert runs[run]["end_time"] == "2026-01-01T00:00:01"
    assert runs[run]["error"] == "AssertionError('assert False')"
    assert runs[run]["attachments"] == [{"name": "image", "content_type": "application/octet-stream", "bytes": 7}]
    assert runs[child]["parent_run_id"] == run
    assert [(f["key"], f["score"]) for f in decoded["feedback"]] == [("pass", 1)]
    assert [p["name"] for p in requests[1]["body"]["parts"]] == [
        f"patch.{run}",
        f"patch.{run}.outputs",
        f"patch.{run}.error",
        "feedback.f1",
    ]


def test_a_bad_body_is_answered_and_changes_nothing() -> None:
    run = "33333333-3333-4333-8333-333333333333"
    good = _multipart("b", [(f"post.{run}", {"id": run, "name": "x"})]).removesuffix(b"--b--\r\n")
    body = good + b"--b\r\nContent-Disposition: form-data\r\n\r\n{}\r\n--b--\r\n"  # a part without a name
    with TraceServer() as server:
        status, answer = langsmith(
            server.url, "POST", "/runs/multipart", body, **{"content-type": "multipart/form-data; boundary=b"}
        )
        assert status == 400 and "detail" in answer
        assert langsmith(server.url, "POST", "/runs/batch", b"{not json")[0] == 400
        assert server.decoded()["langsmith"]["runs"] == []
        assert langsmith(server.url, "GET", "/info")[0] == 200  # still serving


def test_parse_multipart_keeps_binary_data_and_names() -> None:
    body = _multipart("xyz", [("a", {"k": 1}), ("attachment.r.f", b"\r\n--not-the-boundary\r\n")])
    parts = parse_multipart(body, "xyz")
    assert [(p.name, p.data) for p in parts] == [("a", b'{"k": 1}'), ("attachment.r.f", b"\r\n--not-the-boundary\r\n")]


# --- Langfuse ----------------------------------------------------------------------------------------


def test_v4_ingestion_scores_and_events() -> None:
    batch = {
        "batch": [
            {
                "id": "e1",
                "type": "score-create",
                "timestamp": "t",
                "body": {"id": "s1", "traceId": "tr", "name": "comet.passed", "value": 1, "dataType": "BOOLEAN"},
            },
            {"id": "e2", "type": "trace-create", "timestamp": "t", "body": {"id": "tr", "name": "run"}},
            {"id": "e3", "type": "score-create"},
        ],
        "metadata": {"sdk_name": "python"},
    }
    auth = "Basic " + base64.b64encode(b"pk-lf-x1:sk-lf-y2").decode()
    with TraceServer() as server:
        status, answer = call(server.url, "POST", "/api/public/ingestion", batch, {"authorization": auth})
        decoded = server.decoded()["langfuse"]
    assert status == 207
    assert answer["successes"] == [{"id": "e1", "status": 201}, {"id": "e2", "status": 201}]
    assert [e["id"] for e in answer["errors"]] == ["e3"]
    assert [(s["name"], s["value"], s["via"]) for s in decoded["scores"]] == [("comet.passed", 1, "ingestion")]
    assert [e["type"] for e in decoded["events"]] == ["trace-create"]


def test_langfuse_side_routes_answer_in_the_sdk_shapes() -> None:
    with TraceServer() as server:
        status, projects = call(server.url, "GET", "/api/public/projects")
        assert status == 200 and projects["data"][0]["organization"]["id"]
        status, scores = call(server.url, "POST", "/api/public/scores", [{"name": "n", "value": 0.5, "traceId": "t"}])
        assert (status, scores) == (202, {"message": "Accepted"})
        status, media = call(
            server.url, "POST", "/api/public/media", {"sha256Hash": "abc/def+ghi=", "contentType": "image/png"}
        )
        assert status == 200 and media["uploadUrl"] is None
        status, missing = call(server.url, "GET", "/api/public/v2/prompts/nope")
        assert status == 404 and missing["message"]
        assert (
            call(
                server.url,
                "POST",
                "/api/public/otel/v1/traces",
                b"\xff\xff",
                {"content-type": "application/x-protobuf"},
            )[0]
            == 400
        )
        assert call(server.url, "GET", "/nowhere")[0] == 404
        routes = [e["route"] for e in server.requests()]
    assert routes == [
        "langfuse.projects",
        "langfuse.scores",
        "langfuse.other",
        "langfuse.other",
        "langfuse.otel",
        "unknown",
    ]


# --- redaction, views, failures ------------------------------------------------------------------------


def test_credentials_are_redacted_in_headers_and_scrubbed_everywhere(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with TraceServer(log_path=log) as server:
        # A client that echoes its key into a body (metadata copied from the environment, say).
        langsmith(server.url, "POST", "/feedback", {"key": "pass", "run_id": "r", "comment": f"key={KEY}"})
        decoded, requests = server.decoded(), server.requests()
    assert requests[0]["headers"]["x-api-key"] == REDACTED
    assert decoded["langsmith"]["feedback"][0]["comment"] == f"key={REDACTED}"
    assert KEY not in log.read_text() + json.dumps(requests) + json.dumps(decoded)


def test_secrets_in_reads_basic_and_bearer_credentials() -> None:
    basic = base64.b64encode(b"pk-lf-public:sk-lf-secret").decode()
    found = secrets_in({"authorization": f"Basic {basic}", "x-api-key": "abcd1234", "content-type": "x"})
    assert {"pk-lf-public", "sk-lf-secret", basic, "abcd1234"} <= found
    assert "x" not in found
    assert secrets_in({"authorization": "Bearer tok-12345"}) >= {"tok-12345"}
    assert scrub({"a": ["pk-lf-public!", {"sk-lf-secret": 1}]}, found) == {"a": [f"{REDACTED}!", {REDACTED: 1}]}


def test_the_inspect_views_are_served_and_not_logged() -> None:
    with TraceServer() as server:
        call(server.url, "POST", "/api/public/scores", [{"name": "n", "value": 1, "traceId": "t"}])
        status, decoded = call(server.url, "GET", "/_comet/decoded")
        assert status == 200 and decoded["langfuse"]["scores"][0]["name"] == "n"
        status, requests = call(server.url, "GET", "/_comet/requests")
        assert status == 200 and [e["route"] for e in requests] == ["langfuse.scores"]
        assert len(server.requests()) == 1


def test_failures_match_routes_patterns_and_paths_and_count() -> None:
    with TraceServer(failures=[Failure("langsmith.*", status=503, times=2)]) as server:
        statuses = [langsmith(server.url, "GET", "/info")[0] for _ in range(3)]
        assert statuses == [503, 503, 200]
        server.fail(Failure("/api/public/scores", status=429))
        status, body = call(server.url, "POST", "/api/public/scores", [{"name": "n", "value": 1}])
        assert status == 429 and body["message"].startswith("injected failure")
        assert call(server.url, "GET", "/api/public/projects")[0] == 200  # other paths unaffected
        server.clear_failures()
        assert call(server.url, "POST", "/api/public/scores", [{"name": "n", "value": 1}])[0] == 202
        log = server.requests()
    assert [e["failure"]["status"] if e["failure"] else None for e in log] == [503, 503, None, 429, None, None]
    assert route_of("/api/v1/runs/multipart") == "langsmith.runs"
    assert route_of("/api/public/otel/v1/traces") == "langfuse.otel"


def test_failure_specs_parse_or_say_why() -> None:
    assert parse_failure("langfuse.scores=500x2") == Failure("langfuse.scores", status=500, times=2)
    assert parse_failure("*=401") == Failure("*", status=401)
    assert parse_delay("/runs=1.5x1") == Failure("/runs", delay=1.5, times=1)
    for bad in ("langfuse.scores", "=500", "x=abc", "x=500x", "x=99"):
        with pytest.raises(CometError):
            parse_failure(bad)
    with pytest.raises(CometError, match="number of seconds"):
        parse_delay("x=soon")


def test_the_command_serves_until_sigterm_and_writes_the_decoded_view(tmp_path: Path) -> None:
    log, decoded = tmp_path / "log.jsonl", tmp_path / "decoded.json"
    cmd = [
        sys.executable,
        "-m",
        "scaffold.cli.main",
        "trace-server",
        "--port",
        "0",
        "--log",
        str(log),
        "--decoded",
        str(decoded),
        "--fail",
        "langfuse.scores=503x1",
        "--no-multipart",
    ]
    with subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            assert langsmith(url, "GET", "/info")[1]["batch_ingest_config"]["use_multipart_endpoint"] is False
            score = [{"id": "s1", "name": "comet.passed", "value": 1, "traceId": "t"}]
            assert call(url, "POST", "/api/public/scores", score)[0] == 503
            assert call(url, "POST", "/api/public/scores", score)[0] == 202
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
    assert json.loads(decoded.read_text())["langfuse"]["scores"][0]["id"] == "s1"
    assert [json.loads(line)["status"] for line in log.read_text().splitlines()] == [200, 503, 202]


def test_the_command_rejects_a_bad_failure_spec() -> None:
    cmd = [sys.executable, "-m", "scaffold.cli.main", "trace-server", "--fail", "langfuse.scores"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "ROUTE=VALUE" in done.stderr
