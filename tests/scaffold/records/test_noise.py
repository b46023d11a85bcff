"""Noise classification (scaffold.records.noise): every category and reason, structured signals before text,
the evidence stored; the real CLIs' API-failure streams; records and summary.md carrying the verdict."""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from scaffold.agents.streams import parser_for
from scaffold.agents.streams.events import merge_turns
from scaffold.agents.streams.failures import failure
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.modelserver import ScriptedModelServer, ScriptError, parse_script
from scaffold.records import NoiseVerdict, TrialRecord
from scaffold.records.files import upgrade
from scaffold.records.noise import (
    EXCLUDED_REASONS,
    FLAGGED_REASONS,
    RETRYABLE_REASONS,
    TASK_ERROR_REASONS,
    UNCLASSIFIED,
    classify,
    retryable,
)
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.html import render_html
from scaffold.reports.summary import render_summary
from scaffold.trajectory import ApiFailure, TokenUsage, Trajectory
from tests.support.factories import REPO
from tests.support.records import record_of

STREAMS = REPO / "tests" / "data" / "streams"
TOKENS = TokenUsage(10, 5)


def rec(traj: Trajectory | None = None, *, verdict: str = "passed", budget: float = 600, **fields: Any) -> TrialRecord:
    """A record to classify (its noise is what the runner builds it with: not classified yet)."""
    return record_of(
        {
            "experiment_id": "e",
            "case_id": fields.pop("case_id", "t-CONTROL-r1"),
            "task": "t",
            "treatment": fields.pop("treatment", "CONTROL"),
            "trial": 1,
            "config": {"timeouts": {"agent_s": budget, "validation_s": 60}},
            "config_hash": "h",
            "verdict": verdict,
            "trajectory": traj.summary() if traj is not None else None,
            "noise": msgspec.to_builtins(UNCLASSIFIED),
            "streams": (),
            **fields,
        }
    )


def traj(**fields: Any) -> Trajectory:
    return Trajectory(**{"agent": "claude-code", "tokens": TOKENS, "exit_code": 0, **fields})


def fail(kind_status: int | None, message: str, *, final: bool = True, code: str | None = None) -> ApiFailure:
    return failure("test", message, status=kind_status, code=code, final=final)


def check(category: str, reason: str, verdict: NoiseVerdict, source: str = "structured") -> None:
    assert (verdict.category, verdict.reason, verdict.source) == (category, reason, source), verdict


# --- excluded, structured ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "reason"),
    [
        ("WorkspaceError", "container_failure"),
        ("DockerException", "container_failure"),
        ("APIError", "container_failure"),
        ("TimeoutError", "runner_timeout"),
        ("TimeoutExpired", "runner_timeout"),
    ],
)
def test_typed_record_errors_are_excluded(error_type: str, reason: str) -> None:
    error = {"type": error_type, "message": "boom"}
    verdict = classify(rec(None, verdict="error", errors=(error,)))
    check("excluded", reason, verdict)
    assert verdict.evidence["error"] == error


@pytest.mark.parametrize(
    ("failure_entry", "reason"),
    [
        (fail(429, "Request rejected (429)"), "rate_limited"),
        (fail(None, "x", code="rate_limit"), "rate_limited"),
        (fail(401, "Failed to authenticate"), "auth_failed"),
        (fail(403, "forbidden"), "auth_failed"),
        (fail(504, "gateway"), "api_timeout"),
        (fail(None, "Request timed out"), "api_timeout"),
        (fail(None, "Unable to connect to API"), "network_failed"),
        (fail(500, "high demand"), "api_error"),
    ],
)
def test_final_api_failures_are_excluded(failure_entry: dict[str, Any], reason: str) -> None:
    t = traj(failures=(failure_entry,), errors=("API error",), tokens=TokenUsage())
    verdict = classify(rec(t, verdict="failed"))
    check("excluded", reason, verdict)
    assert verdict.evidence["failure"] == msgspec.to_builtins(failure_entry)


def test_retries_then_killed_is_excluded_by_the_failure_retried() -> None:
    retry = fail(None, "Reconnecting... waiting for network (Connection failed: error sending request)", final=False)
    t = traj(failures=(retry,), completed=False, timed_out=True, duration_s=600.0, exit_code=-9)
    verdict = classify(rec(t, verdict="failed"))
    check("excluded", "network_failed", verdict)
    assert verdict.evidence["recovered"] is False


def test_timeout_short_of_the_task_budget_is_runner_timeout() -> None:
    t = traj(timed_out=True, completed=False, duration_s=30.0, exit_code=-9)
    verdict = classify(rec(t, verdict="failed", budget=600))
    check("excluded", "runner_timeout", verdict)
    assert verdict.evidence == {"agent_budget_s": 600, "agent_duration_s": 30.0}


def test_agent_using_up_the_task_budget_is_a_real_result() -> None:
    t = traj(timed_out=True, completed=False, duration_s=600.2, exit_code=-9)
    verdict = classify(rec(t, verdict="failed", budget=600))
    check("included", "agent_exceeded_task_budget", verdict)
    assert verdict.evidence["agent_duration_s"] == 600.2


@pytest.mark.parametrize("code", [126, 127, 137, -9])
def test_exit_codes_the_agent_cannot_cause_are_container_failures(code: int) -> None:
    verdict = classify(rec(traj(exit_code=code, completed=False), verdict="failed"))
    check("excluded", "container_failure", verdict)
    assert verdict.evidence["exit_code"] == code


# --- excluded, text fallback ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("exited with code 1: Error: 429 Too Many Requests", "rate_limited"),
        ("exited with code 1: 401 Unauthorized: invalid x-api-key", "auth_failed"),
        ("exited with code 1: connect ECONNREFUSED 10.0.0.1:443", "network_failed"),
        (
            "exited with code 1: An unexpected critical error occurred:NetworkAttemptError: Network attempt failed"
            " at dns",  # qodercli 1.1.52 without a route to its service
            "network_failed",
        ),
        ("exited with code 1: APITimeoutError: Request timed out.", "api_timeout"),
        ("exited with code 125: Cannot connect to the Docker daemon at unix:///x", "container_failure"),
    ],
)
def test_text_fallback_excludes_unfinished_runs(message: str, reason: str) -> None:
    t = traj(errors=(message,), completed=False, exit_code=1)
    verdict = classify(rec(t, verdict="failed"))
    check("excluded", reason, verdict, "text")
    assert verdict.evidence["where"] == "trajectory.errors[0]"
    assert verdict.evidence["pattern"] == reason and verdict.evidence["text"] in message


def test_text_fallback_reads_record_errors_when_there_is_no_trajectory() -> None:
    error = {"type": "AgentError", "message": "npm install failed: getaddrinfo ENOTFOUND registry.npmjs.org"}
    verdict = classify(rec(None, verdict="error", errors=(error,)))
    check("excluded", "network_failed", verdict, "text")
    assert verdict.evidence["where"] == "errors[0]"


def test_an_error_code_inside_another_word_is_no_network_failure() -> None:
    # "ModuleNotFoundError" holds "enotfound": a script's own failure, not the network's.
    t = traj(errors=("Traceback ...\nModuleNotFoundError: No module named 'zrx7'",), completed=True)
    check("included", "", classify(rec(t, verdict="failed")))


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ({"type": "SkillLeakError", "message": "the image holds /root/.claude/skills/x/SKILL.md"}, "skill_leak"),
        ({"type": "VerifierError", "message": "the verifier wrote no reward"}, "missing_reward"),
        # A WorkspaceError too, but a step of the task's Dockerfile failed: the task's error, not the engine's.
        (
            {"type": "ImageBuildError", "message": "building the image x failed at `RUN exit 3`: ... code: 3"},
            "build_failed",
        ),
    ],
)
def test_harbor_harness_errors_are_excluded_with_their_reason(error: dict[str, str], reason: str) -> None:
    verdict = classify(rec(None, verdict="error", errors=(error,)))
    check("excluded", reason, verdict)
    assert verdict.evidence["error"]["type"] == error["type"]


def test_structured_signal_wins_over_text() -> None:
    t = traj(failures=(fail(401, "Failed to authenticate"),), errors=("ECONNREFUSED rate limit exceeded",))
    check("excluded", "auth_failed", classify(rec(t, verdict="failed")))


# --- flagged ------------------------------------------------------------------------------------------


def test_completed_run_with_recovered_failures_is_flagged() -> None:
    retry = fail(429, "retry 1/2: rate_limit", final=False)
    verdict = classify(rec(traj(failures=(retry,))))
    check("flagged", "outer_failure_mentioned", verdict)
    assert verdict.evidence["recovered_failures"] == [msgspec.to_builtins(retry)]


def test_completed_run_mentioning_an_outer_failure_is_flagged_by_text() -> None:
    t = traj(final_text="Done, although the first attempt hit 429 Too Many Requests.")
    verdict = classify(rec(t))
    check("flagged", "outer_failure_mentioned", verdict, "text")
    assert verdict.evidence["pattern"] == "rate_limited"


def test_untyped_harness_error_is_a_suspected_harness_trigger() -> None:
    error = {"type": "AgentError", "message": "unexpected: KeyError('x')"}
    verdict = classify(rec(traj(), verdict="error", errors=(error,)))
    check("flagged", "suspected_harness_trigger", verdict)


def test_permission_denials_are_a_suspected_harness_trigger() -> None:
    verdict = classify(rec(traj(permission_denials=("Write",)), verdict="failed"))
    check("flagged", "suspected_harness_trigger", verdict)
    assert verdict.evidence["permission_denials"] == ["Write"]


@pytest.mark.parametrize(
    "reason",
    [
        "timed out after 120s",
        "exited with code 1: ModuleNotFoundError: No module named 'yaml'",
        "reported no checks",
        "not valid JSON: Expecting value",
    ],
)
def test_broken_validation_script_is_a_validator_assumption(reason: str) -> None:
    broken = {"name": "test_x.py", "status": "failed", "source": "script:test_x.py", "reason": reason}
    verdict = classify(rec(traj(), verdict="failed", checks=(broken,)))
    check("flagged", "validator_assumption", verdict)
    assert verdict.evidence["checks"] == [broken]


def test_failed_assertion_in_a_validation_script_is_a_real_failure() -> None:
    failed = {
        "name": "test_x.py",
        "status": "failed",
        "source": "script:test_x.py",
        "reason": "exited with code 1: AssertionError: median wrong",
    }
    check("included", "", classify(rec(traj(), verdict="failed", checks=(failed,))))


@pytest.mark.parametrize(
    ("record", "missing"),
    [
        (rec(traj(malformed_lines=2)), "malformed_lines"),
        (rec(traj(tokens=None)), "tokens"),
        (rec(None), "trajectory"),
    ],
)
def test_partial_observability(record: TrialRecord, missing: str) -> None:
    verdict = classify(record)
    check("flagged", "partial_observability", verdict)
    assert missing in json.dumps(verdict.evidence)


def test_custom_agent_without_telemetry_is_not_flagged() -> None:
    check("included", "", classify(rec(traj(agent="my-agent", tokens=None))))


def test_clean_runs_are_included_pass_or_fail() -> None:
    check("included", "", classify(rec(traj())))
    check("included", "", classify(rec(traj(final_text="I could not fix it."), verdict="failed")))


def test_every_reason_is_reachable() -> None:
    # The parametrized cases above cover each; this pins the vocabulary reports rely on.
    assert set(EXCLUDED_REASONS) == {
        "rate_limited",
        "api_timeout",
        "runner_timeout",
        "container_failure",
        "auth_failed",
        "network_failed",
        "api_error",
        "skill_leak",
        "missing_reward",
        "build_failed",
    }
    assert {"skill_leak", "missing_reward", "build_failed"} == TASK_ERROR_REASONS
    assert not TASK_ERROR_REASONS & RETRYABLE_REASONS  # the same image, key or verifier fails again
    assert len(FLAGGED_REASONS) == 4


# --- the real CLIs' streams ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "agent", "kind", "status"),
    [
        ("claude-http-429.jsonl", "claude-code", "rate_limited", 429),
        ("claude-http-401.jsonl", "claude-code", "auth_failed", 401),
        ("claude-http-500.jsonl", "claude-code", "api_error", 500),
        ("claude-connection-refused.jsonl", "claude-code", "network_failed", None),
        ("codex-http-429.jsonl", "codex", "rate_limited", 429),
        ("codex-http-401.jsonl", "codex", "auth_failed", 401),
        ("codex-http-500.jsonl", "codex", "api_error", None),  # Codex hides the 500 behind "high demand"
    ],
)
def test_real_failure_streams_give_typed_failures(fixture: str, agent: str, kind: str, status: int | None) -> None:
    with (STREAMS / fixture).open() as fh:
        t = parser_for(agent)(fh)
    final = [f for f in t.failures if f.final]
    assert len(final) == 1 and final[0].kind == kind and final[0].status == status, t.failures
    assert t.errors, "errors stay as they were"
    verdict = classify(rec(replace(t, exit_code=1), verdict="failed"))
    check("excluded", kind, verdict)


def test_real_recovered_429_is_flagged_not_excluded() -> None:
    with (STREAMS / "claude-http-429-recovered.jsonl").open() as fh:
        t = parser_for("claude-code")(fh)
    assert [(f.kind, f.status, f.source, f.final) for f in t.failures] == [
        ("rate_limited", 429, "system/api_retry", False)
    ]
    assert t.final_text == "hi after a retry" and not t.errors
    check("flagged", "outer_failure_mentioned", classify(rec(t)))


def test_real_codex_waiting_for_the_network_until_killed() -> None:
    with (STREAMS / "codex-connection-refused.jsonl").open() as fh:
        t = parser_for("codex")(fh)
    assert {f.kind for f in t.failures} == {"network_failed"} and not any(f.final for f in t.failures)
    t = replace(t, timed_out=True, completed=False, duration_s=120.0, exit_code=-9)
    check("excluded", "network_failed", classify(rec(t, verdict="failed", budget=120)))


def test_failures_survive_the_record_round_trip_and_merging() -> None:
    f = fail(429, "Request rejected (429)")
    t = traj(failures=(f,))
    assert msgspec.convert(json.loads(json.dumps(t.summary())), Trajectory).failures == (f,)
    assert merge_turns([t, traj(failures=(f,))]).failures == (f, f)
    old = {k: v for k, v in traj().summary().items() if k != "failures"}
    assert msgspec.convert(old, Trajectory).failures == ()


# --- records and summary.md ---------------------------------------------------------------------------


def test_old_records_without_noise_still_load_and_are_classified_in_the_summary() -> None:
    excluded = rec(traj(failures=(fail(429, "429"),)), verdict="failed", treatment="SKILL", case_id="t-SKILL-r1")
    data = excluded.to_dict()
    del data["noise"]
    old = upgrade(data)
    assert old.noise == classify(excluded) and old.noise.category == "excluded"
    stored = replace(rec(traj()), noise=classify(rec(traj())))
    assert upgrade(json.loads(json.dumps(stored.to_dict()))).noise.category == "included"
    text = render_summary(build_analysis([stored, old]), "e")
    assert "## Data quality" in text
    assert "| CONTROL | 1 | 0 | 0 | 0 |" in text
    assert "| SKILL | 0 | 0 | 1 | 0 |" in text
    assert "| t-SKILL-r1 | excluded | rate_limited | structured | {" in text
    assert '"status": 429' in text


def test_a_task_image_that_cannot_be_built_is_counted_apart_from_noise_in_every_report() -> None:
    build = {"type": "ImageBuildError", "message": "task t: building the image x failed at `RUN exit 3`"}
    broken = [rec(None, verdict="error", errors=(build,), treatment="SKILL", case_id=f"t-SKILL-r{n}") for n in (1, 2)]
    noisy = rec(traj(failures=(fail(429, "429"),)), verdict="failed", treatment="SKILL", case_id="t-SKILL-r3")
    clean = rec(traj())
    records = [replace(r, noise=classify(r)) for r in (*broken, noisy, clean)]
    assert [r.noise.reason for r in records] == ["build_failed", "build_failed", "rate_limited", ""]
    analysis = build_analysis(records)
    counts = analysis.report("SKILL").counts
    assert (counts.excluded, counts.noise, counts.task_errors) == (3, 1, 2)
    assert counts.task_error_reasons == {"build_failed": 2} and counts.noise_reasons == {"rate_limited": 1}
    assert counts.analysis_trials == 0  # never in the analysis set
    summary = render_summary(analysis, "e")
    assert "| treatment | included | flagged | excluded as noise | harness or task errors |" in summary
    assert "| SKILL | 0 | 0 | 1 | 2 (build_failed 2) |" in summary
    comparison = render_comparison(analysis)
    assert "| SKILL | 3 | 0 | 0 | 1 | rate_limited 1 | build_failed 2 | 100% |" in comparison
    html = render_html(analysis)
    quality = html[html.index('<section id="quality"') : html.index('<section id="failures"')]
    assert '<td class="n">1</td><td class="n">2</td>' in quality  # excluded as noise, harness or task errors


# --- the scripted model server's error responses --------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request) as resp:
            return resp.status, None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


MESSAGES = {"model": "m", "tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "tools": [{"type": "function", "name": "shell"}], "input": "hi"}


def test_scripted_errors_in_each_providers_format(tmp_path: Path) -> None:
    script = {"responses": [{"error": {"status": 429, "type": "rate_limit_error", "message": "slow down"}}]}
    with ScriptedModelServer(script, log_path=tmp_path / "log.jsonl") as server:
        assert _post(server.url + "/v1/messages", MESSAGES) == (
            429,
            {
                "type": "error",
                "error": {"type": "rate_limit_error", "message": "slow down", "code": "rate_limit_error"},
            },
        )
        assert _post(server.url + "/v1/responses", {**RESPONSES, "stream": True}) == (
            429,
            {
                "error": {
                    "message": "slow down",
                    "type": "rate_limit_error",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
        )
        # Without `times` the outage persists: every retry fails the same way.
        assert _post(server.url + "/v1/messages", MESSAGES)[0] == 429
        logged = server.requests
    assert [e["status"] for e in logged] == [429, 429, 429]
    assert logged[0]["answer"]["error"]["status"] == 429 and logged[2]["answer"]["error_call"] == 2


def test_scripted_error_for_n_calls_then_the_response(tmp_path: Path) -> None:
    script = {
        "responses": [
            {"error": {"status": 401, "type": "authentication_error", "times": 2}, "text": "recovered"},
        ]
    }
    with ScriptedModelServer(script) as server:
        statuses = [_post(server.url + "/v1/messages", MESSAGES)[0] for _ in range(3)]
        assert statuses == [401, 401, 200]
        assert [_post(server.url + "/v1/responses", RESPONSES)[0] for _ in range(3)] == [401, 401, 200]
        assert server.requests[2]["answer"]["text"] == "recovered"


@pytest.mark.parametrize(
    "error",
    [{"status": 200}, {"status": 429, "times": 0}, {"status": "429"}],
)
def test_invalid_scripted_errors_are_refused(error: dict[str, Any]) -> None:
    with pytest.raises(ScriptError, match="error"):
        parse_script({"responses": [{"error": error}]})


# --- end to end: a real CLI meets a scripted API failure ------------------------------------------------

# Claude Code retries about ten times with backoff by default; its own setting bounds that so the test
# is fast. Codex gives up on a 429 at once and on a 401 after five quick reconnects.
FAST_RETRIES = {"claude-code": {"CLAUDE_CODE_MAX_RETRIES": "0"}, "codex": {}}


@pytest.mark.agent_cli
@pytest.mark.parametrize(
    ("agent", "status", "kind", "reason"),
    [
        ("claude-code", 429, "rate_limit_error", "rate_limited"),
        ("claude-code", 401, "authentication_error", "auth_failed"),
        ("codex", 429, "rate_limit_error", "rate_limited"),
        ("codex", 401, "authentication_error", "auth_failed"),
    ],
)
def test_real_cli_api_failure_is_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, status: int, kind: str, reason: str
) -> None:
    from scaffold.agents import create_agent
    from scaffold.experiment.cases import Case
    from tests.support.agents import require_cli, scripted_cli_env
    from tests.support.factories import make_runner

    cli = {"claude-code": "claude", "codex": "codex"}[agent]
    monkeypatch.setenv("PATH", require_cli(cli) + os.pathsep + os.environ["PATH"])
    script = {"responses": [{"error": {"status": status, "type": kind, "message": f"scripted {status}"}}]}
    with ScriptedModelServer(script) as server:
        env = scripted_cli_env(tmp_path / "user-home", server.url)
        runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path)
        runner.agent = create_agent(agent, env)
        spec = runner.agent.spec
        runner.agent.spec = dataclasses.replace(spec, fixed_env={**spec.fixed_env, **FAST_RETRIES[agent]})
        try:
            record = runner.run(Case("generic-skill-smoke", "CONTROL", 1)).record
        finally:
            runner.backend.close()
    assert record.noise.category == "excluded", record.noise
    assert record.noise.reason == reason and record.noise.source == "structured"
    assert record.noise.evidence["failure"]["status"] == status
    stored = json.loads(next(tmp_path.rglob("record.json")).read_text())
    assert stored["noise"] == json.loads(json.dumps(msgspec.to_builtins(record.noise)))
    assert any(e["status"] == status for e in server.requests)


@pytest.mark.parametrize(
    ("reason", "evidence", "expected"),
    [
        ("rate_limited", {}, True),
        ("api_timeout", {}, True),
        ("network_failed", {}, True),
        ("container_failure", {"exit_code": 127}, True),
        ("runner_timeout", {}, True),
        ("api_error", {"failure": {"kind": "api_error", "status": 529}}, True),
        ("api_error", {"failure": {"kind": "api_error", "status": None}}, True),
        # The API refused the request itself (a bad request, an unknown model): it refuses it again.
        ("api_error", {"failure": {"kind": "api_error", "status": 400}}, False),
        ("auth_failed", {}, False),
        ("skill_leak", {}, False),
        ("missing_reward", {}, False),
        ("build_failed", {}, False),
    ],
)
def test_only_noise_a_new_attempt_may_not_meet_is_retried(
    reason: str, evidence: dict[str, Any], expected: bool
) -> None:
    assert retryable(NoiseVerdict("excluded", reason, "structured", evidence)) is expected
    assert not retryable(NoiseVerdict("flagged", reason, "structured", evidence))
    assert RETRYABLE_REASONS.issubset(EXCLUDED_REASONS)
