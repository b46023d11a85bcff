"""Failure injection, seen by the real SDKs: retried errors, permanent errors, delays; all logged."""

from __future__ import annotations

from pathlib import Path

from scaffold.traceserver import Failure, TraceServer
from tests.scaffold.traceserver.sdk import run_langfuse_trial, run_langsmith_suite


def test_a_500_on_scores_is_retried_by_langfuse_and_recorded(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langfuse.scores", status=500, times=1)]) as server:
        run_langfuse_trial(server.url, tmp_path)
        decoded, requests = server.decoded()["langfuse"], server.requests()
    scores = [e for e in requests if e["route"] == "langfuse.scores"]
    assert [e["status"] for e in scores] == [500, 202]
    assert scores[0]["failure"]["status"] == 500
    assert scores[1]["failure"] is None
    # The failed attempt changed nothing: each score is there once.
    assert sorted(s["name"] for s in decoded["scores"]) == ["comet.checks_pass_rate", "comet.passed"]
    assert len(decoded["spans"]) == 3


def test_a_permanent_error_on_scores_loses_only_the_scores(tmp_path: Path) -> None:
    # 401 is not retried by the SDK: it logs the error and drops the batch; spans are unaffected.
    with TraceServer(failures=[Failure("/api/public/scores", status=401)]) as server:
        printed, stderr = run_langfuse_trial(server.url, tmp_path)
        decoded, requests = server.decoded()["langfuse"], server.requests()
    assert printed["auth"] is True
    assert [e["status"] for e in requests if e["route"] == "langfuse.scores"] == [401]
    assert "401" in stderr or "unauthorized" in stderr.lower(), stderr
    assert decoded["scores"] == []
    assert {s["name"] for s in decoded["spans"]} >= {"comet.eval.run"}


def test_an_auth_failure_is_what_auth_check_reports(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langfuse.projects", status=401)]) as server:
        printed, _ = run_langfuse_trial(server.url, tmp_path)
        requests = server.requests()
    assert printed["auth"] == "UnauthorizedError"
    assert requests[0]["route"] == "langfuse.projects"
    assert requests[0]["status"] == 401


def test_a_delay_holds_the_answer_and_is_logged(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langfuse.*", delay=0.2, times=1)]) as server:
        printed, _ = run_langfuse_trial(server.url, tmp_path)
        requests = server.requests()
    assert printed["auth"] is True
    delayed = [e for e in requests if e["failure"] is not None]
    assert len(delayed) == 1
    assert delayed[0]["failure"]["delay"] == 0.2
    assert delayed[0]["status"] == 200  # a delay alone answers normally


def test_a_500_on_runs_is_retried_by_langsmith_and_recorded(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langsmith.runs", status=500, times=1)]) as server:
        run_langsmith_suite(server.url, tmp_path)
        decoded, requests = server.decoded()["langsmith"], server.requests()
    runs = [e for e in requests if e["route"] == "langsmith.runs"]
    assert runs[0]["status"] == 500
    assert all(e["status"] == 202 for e in runs[1:]) and len(runs) >= 2
    assert len(decoded["runs"]) == 2
    assert all(run["outputs"] is not None for run in decoded["runs"])
