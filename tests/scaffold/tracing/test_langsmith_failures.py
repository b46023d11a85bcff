"""What a failed LangSmith call leaves for the terminal summary and tracing.json: what failed, the kind of
failure, and the exception's class and message (the class alone says nothing), never the API key or the
part of it the SDK's connection errors show. Real SDK errors, from our Client against the trace server."""

from __future__ import annotations

import contextlib
import socket

from scaffold.agents.credentials import Redactor
from scaffold.traceserver import Failure, TraceServer
from scaffold.tracing.langsmith_report import Failures, make_client

KEY = "lsv2_pt_planted0c0ffee0langsmith0key0do0not0leak"


def failed_dataset(endpoint: str) -> list[str]:
    """The failures our Client notes when creating a dataset at *endpoint* fails."""
    failures = Failures(redactor=Redactor([KEY]))
    client = make_client(endpoint, KEY, failures)
    with contextlib.suppress(Exception):  # noted by the client; the caller decides what to do (here: nothing)
        client.create_dataset("comet-eval-selftest")
    return [item for item in failures.items if item.startswith("POST /datasets")]


def test_a_refused_request_says_the_class_and_the_message() -> None:
    with TraceServer(failures=[Failure("*", status=400)]) as server:
        (item,) = failed_dataset(server.url)
    assert item.startswith("POST /datasets: LangSmithError: Failed to POST /datasets in LangSmith API."), item
    assert "400 Client Error" in item and "injected failure: HTTP 400" in item
    assert KEY not in item


def test_a_connection_failure_shows_no_part_of_the_key() -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    (item,) = failed_dataset(f"http://127.0.0.1:{port}")
    assert item.startswith("POST /datasets: connection failed or timed out: LangSmithConnectionError: "), item
    assert "Connection error caused failure to POST /datasets" in item and "\n" not in item
    # The SDK words it "API Key: lsv2_*****...ak": the key's first and last characters.
    assert "[redacted]" in item and "lsv2_*" not in item and "*ak" not in item


def test_a_message_is_kept_short_and_the_key_replaced() -> None:
    failures = Failures(redactor=Redactor([KEY]))
    failures.add("log", "trial results", RuntimeError(f"bad key {KEY} " + "x" * 2000))
    (item,) = failures.items
    assert item.startswith("log trial results: RuntimeError: bad key [redacted] xxx") and len(item) < 600
