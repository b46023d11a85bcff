"""The LangSmith suite (langsmith/) run for real: pytest in a subprocess on the built-in tasks with the oracle,
the langsmith 0.15.1 SDK and its pytest plugin talking to ``comet trace-server``; what arrived is read back
from the server's decoded view, and every file the run wrote is scanned for the planted API key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.experiment import RECORD_FILE
from scaffold.records.files import read_record
from scaffold.traceserver import Failure, TraceServer
from tests.support.factories import REPO, TaskFactory

PLANTED = "lsv2_pt_planted0c0ffee0langsmith0key0do0not0leak"
SUITE = "comet-eval-selftest"


def run_suite(
    tmp_path: Path, server: TraceServer | None, *args: str, key: str | None = PLANTED
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "PYTEST_XDIST", "PYTEST_ADDOPTS", "PYTEST_CURRENT"))
    }
    env["COMET_EVAL_HOME"] = str(tmp_path / "home")  # no user .env of this machine
    env["LANGSMITH_TEST_SUITE"] = SUITE
    if key is not None:
        env["LANGSMITH_API_KEY"] = key
    if server is not None:
        env["LANGSMITH_ENDPOINT"] = server.url
    command = [
        sys.executable,
        "-m",
        "pytest",
        "langsmith/tests",
        "-p",
        "no:cacheprovider",
        f"--logs-dir={tmp_path / 'logs'}",
        f"--workspace-root={tmp_path / 'ws'}",
        "--experiment-id=ls-selftest",
        *args,
    ]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


def experiment(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "experiments" / "ls-selftest"


def records(tmp_path: Path) -> list[Any]:
    return sorted(
        (read_record(p) for p in (experiment(tmp_path) / "trials").glob(f"*/{RECORD_FILE}")),
        key=lambda r: r.trial,
    )


def assert_no_secret(tmp_path: Path, server: TraceServer, result: subprocess.CompletedProcess[str]) -> None:
    assert PLANTED not in result.stdout + result.stderr
    assert PLANTED not in json.dumps(server.requests(), default=str)
    assert PLANTED not in json.dumps(server.decoded(), default=str)
    scanned = 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert PLANTED.encode() not in path.read_bytes(), path
            scanned += 1
    assert scanned > 0


def got_session_name(server: TraceServer) -> str:
    return str(server.decoded()["langsmith"]["sessions"][0]["name"])


def check_reported(tmp_path: Path, server: TraceServer, trials: int) -> dict[str, Any]:
    """The decoded view against the records: one dataset, one experiment, one example for the case, one
    run per trial with its inputs and outputs, every feedback key with the record's score."""
    got = server.decoded()["langsmith"]
    assert [d["name"] for d in got["datasets"]] == [SUITE]
    dataset = got["datasets"][0]
    assert len(got["sessions"]) == 1
    session = got["sessions"][0]
    assert session["name"].startswith("ls-selftest:")
    assert session["reference_dataset_id"] == dataset["id"]
    assert len(got["examples"]) == 1  # repetitions of a case share its example
    example = got["examples"][0]
    assert example["dataset_id"] == dataset["id"]
    assert example["inputs"] == {"task": "fix-median", "treatment": "CONTROL", "difficulty": "easy"}
    assert example["outputs"]["expected_artifacts"] == ["stats.py"]
    assert set(example["outputs"]) == {"expected_artifacts", "required_skills", "rubric_criteria"}
    written = records(tmp_path)
    assert len(written) == trials
    runs = sorted(got["runs"], key=lambda r: r["outputs"]["trial"])
    assert len(runs) == trials
    for run, record in zip(runs, written, strict=True):
        assert run["session_id"] == session["id"] or run["session_name"] == session["name"]
        assert run["reference_example_id"] == example["id"]
        assert run["inputs"] == example["inputs"]
        outputs = run["outputs"]
        assert outputs["verdict"] == record.verdict == "passed"
        assert outputs["trial"] == record.trial
        assert outputs["checks_passed"] == sum(c.status == "passed" for c in record.checks) > 0
        assert outputs["checks_failed"] == 0
        assert outputs["experiment_id"] == "ls-selftest"
        scores = {f["key"]: f["score"] for f in got["feedback"] if f["run_id"] == run["id"]}
        expected = {f"rubric.{d.name}": d.score for d in record.dimensions if d.score is not None}
        assert expected  # the generic rubric scored something
        assert scores == {"pass": 1, "checks_pass_rate": 1.0, **expected}
    return got


def test_trials_reach_langsmith_as_one_example_per_case_and_one_run_per_trial(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(tmp_path, server, "--task=fix-median", "--count=2")
        assert result.returncode == 0, result.stdout + result.stderr
        check_reported(tmp_path, server, trials=2)
        assert "LangSmith: 2 trial(s) reported" in result.stdout
        status = json.loads((experiment(tmp_path) / "tracing.json").read_text())
        assert status["status"] == "ok" and status["trials"] == 2
        assert status["dataset"] == SUITE and status["experiment"] == got_session_name(server)
        assert (experiment(tmp_path) / "summary.md").is_file()
        assert_no_secret(tmp_path, server, result)
        api_keys = {r["headers"].get("x-api-key") for r in server.requests()}
        assert api_keys == {"[redacted]"}  # every request carried the key (and the log hides it)


@pytest.mark.slow
def test_xdist_workers_share_one_experiment(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(tmp_path, server, "--task=fix-median", "--count=2", "-n", "2")
        assert result.returncode == 0, result.stdout + result.stderr
        got = check_reported(tmp_path, server, trials=2)
        assert {f["session_id"] for f in got["feedback"]} == {got["sessions"][0]["id"]}
        assert "LangSmith: 2 trial(s) reported" in result.stdout


def test_a_failed_baseline_trial_is_xfail_for_pytest_and_pass_0_for_langsmith(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(tmp_path, server, "--task=fix-median", "--agent=nop")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 xfailed" in result.stdout
        got = server.decoded()["langsmith"]
        (run,) = got["runs"]
        assert run["outputs"]["verdict"] == "failed"
        scores = {f["key"]: f["score"] for f in got["feedback"]}
        assert scores["pass"] == 0
        assert scores["checks_pass_rate"] < 1.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("route", "status", "kind"),
    [("*", 500, "server error (5xx)"), ("langsmith.runs", 500, "server error (5xx)"), ("*", 401, "(401)")],
)
def test_a_failing_service_loses_no_trial_and_exits_6(tmp_path: Path, route: str, status: int, kind: str) -> None:
    with TraceServer(failures=[Failure(route, status=status)]) as server:
        result = run_suite(tmp_path, server, "--task=fix-median")
        assert_no_secret(tmp_path, server, result)
    assert result.returncode == 6, result.stdout + result.stderr
    assert "LangSmith reporting FAILED" in result.stdout
    assert kind in result.stdout
    assert "1 passed" in result.stdout  # the test says the trial's verdict, not the service's
    (record,) = records(tmp_path)
    assert record.verdict == "passed"
    assert len((experiment(tmp_path) / "results.jsonl").read_text().splitlines()) == 1
    assert (experiment(tmp_path) / "summary.md").is_file()
    status = json.loads((experiment(tmp_path) / "tracing.json").read_text())
    assert status["status"] == "failed"
    assert status["problems"] and all(kind in f for f in status["problems"])


def test_a_gate_failure_wins_over_a_reporting_failure(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("*", status=500)]) as server:
        result = run_suite(tmp_path, server, "--task=fix-median", "--gate=pass@1 of CONTROL >= 1.01")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "LangSmith reporting FAILED" in result.stdout


def test_collect_only_creates_no_client_and_sends_nothing(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(tmp_path, server, "--collect-only", "-q")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "test_task[fix-median-CONTROL-r1]" in result.stdout
        assert server.requests() == []
        without_key = run_suite(tmp_path, server, "--collect-only", "-q", key=None)
        assert without_key.returncode == 0, without_key.stdout + without_key.stderr
        assert server.requests() == []
    assert not experiment(tmp_path).exists()


def test_a_missing_key_is_a_usage_error_before_any_trial(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(tmp_path, server, "--task=fix-median", key=None)
        assert server.requests() == []
    assert result.returncode == 4, result.stdout + result.stderr
    assert "LANGSMITH_API_KEY" in result.stderr
    assert not (experiment(tmp_path) / "trials").exists()


def test_tracking_off_runs_the_trials_and_sends_nothing(tmp_path: Path) -> None:
    with TraceServer() as server:
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / ".env").write_text("LANGSMITH_TEST_TRACKING=false\n")  # the user .env counts
        result = run_suite(tmp_path, server, "--task=fix-median", key=None)
        assert server.requests() == []
    assert result.returncode == 0, result.stdout + result.stderr
    assert "LangSmith: reporting off" in result.stdout
    assert [r.verdict for r in records(tmp_path)] == ["passed"]


def test_the_key_never_reaches_the_agent(tmp_path: Path, factory: TaskFactory) -> None:
    factory.task("env-dump", solve="env > agent-env.txt\necho done > out.txt\n")
    with TraceServer() as server:
        result = run_suite(
            tmp_path, server, f"--tasks-dir={factory.tasks_dir}", "--keep-workspaces=all", "--task=env-dump"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        dumps = list((tmp_path / "ws").rglob("agent-env.txt"))
        assert dumps, "the agent's environment was not kept"
        assert "LANGSMITH" not in dumps[0].read_text()
        assert_no_secret(tmp_path, server, result)


def test_the_suite_folder_does_not_shadow_the_sdk() -> None:
    assert not list((REPO / "langsmith").rglob("__init__.py"))
    found = subprocess.run(
        [sys.executable, "-c", "import langsmith, langsmith.testing; print(langsmith.__file__)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "site-packages" in found.stdout


def comet_eval(
    tmp_path: Path, server: TraceServer, *args: str, key: str | None = PLANTED
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "PYTEST_"))}
    env |= {"COMET_EVAL_HOME": str(tmp_path / "home"), "LANGSMITH_ENDPOINT": server.url}
    if key is not None:
        env["LANGSMITH_API_KEY"] = key
    command = [str(Path(sys.executable).parent / "comet"), "eval", str(BUILTIN_SKILLS_DIR / "markdown-report")]
    command += ["--suite", "langsmith", "--agent", "oracle", "--quick", "--out", str(tmp_path / "runs"), *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_comet_eval_suite_langsmith_reports_and_says_when_reporting_failed(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = comet_eval(tmp_path, server, "--experiment-id=ok")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Suite:      langsmith" in result.stdout
        assert "LangSmith: 2 trial(s) reported" in result.stdout
        got = server.decoded()["langsmith"]
        assert sorted(e["inputs"]["treatment"] for e in got["examples"]) == ["CONTROL", "DYNAMIC_SKILL"]
        assert len(got["runs"]) == 2
        server.fail(Failure("*", status=500))
        failed = comet_eval(tmp_path, server, "--experiment-id=failed")
        assert_no_secret(tmp_path, server, failed)
    assert failed.returncode == 6, failed.stdout + failed.stderr
    assert "LangSmith reporting FAILED" in failed.stdout
    assert "reporting to langsmith failed" in failed.stderr
    assert (tmp_path / "runs" / "experiments" / "failed" / "summary.md").is_file()


def test_comet_eval_collect_with_the_suite_sends_nothing(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = comet_eval(tmp_path, server, "--collect")
        assert result.returncode == 0, result.stdout + result.stderr
        assert server.requests() == []
    assert not (tmp_path / "runs").exists()


def test_comet_eval_needs_the_key_unless_tracking_is_off(tmp_path: Path) -> None:
    with TraceServer() as server:
        missing = comet_eval(tmp_path, server, "--collect", key=None)
        assert missing.returncode == 2, missing.stdout + missing.stderr
        assert "LANGSMITH_API_KEY" in missing.stderr
        (tmp_path / "home").mkdir(exist_ok=True)
        (tmp_path / "home" / ".env").write_text("LANGSMITH_TEST_TRACKING=false\n")
        off = comet_eval(tmp_path, server, "--collect", key=None)
        assert off.returncode == 0, off.stdout + off.stderr
        assert server.requests() == []


def test_comet_report_uploads_an_experiment_again_after_a_reporting_failure(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("*", status=500)]) as down:
        first = run_suite(tmp_path, down, "--task=fix-median", "--count=2")
    assert first.returncode == 6, first.stdout + first.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "PYTEST_"))}
    env |= {"COMET_EVAL_HOME": str(tmp_path / "home"), "LANGSMITH_API_KEY": PLANTED, "LANGSMITH_TEST_SUITE": SUITE}
    comet = str(Path(sys.executable).parent / "comet")
    out = tmp_path / "again"
    with TraceServer() as server:
        env["LANGSMITH_ENDPOINT"] = server.url
        result = subprocess.run(
            [comet, "report", str(experiment(tmp_path)), "--out", str(out), "--suite", "langsmith"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "langsmith: 2 trial run(s)" in result.stdout
        got = server.decoded()["langsmith"]
        assert [d["name"] for d in got["datasets"]] == [SUITE]
        (example,) = got["examples"]  # the live run's example id, again one for the case
        assert example["inputs"] == {"task": "fix-median", "treatment": "CONTROL", "difficulty": "easy"}
        (session,) = got["sessions"]
        assert session["name"].startswith("ls-selftest:reupload-")
        written = records(tmp_path)
        runs = sorted(got["runs"], key=lambda r: r["outputs"]["trial"])
        assert [r["outputs"]["trial"] for r in runs] == [r.trial for r in written] == [1, 2]
        for run, record in zip(runs, written, strict=True):
            assert run["reference_example_id"] == example["id"]
            scores = {f["key"]: f["score"] for f in got["feedback"] if f["run_id"] == run["id"]}
            expected = {f"rubric.{d.name}": d.score for d in record.dimensions if d.score is not None}
            assert scores == {"pass": 1, "checks_pass_rate": 1.0, **expected}
        assert_no_secret(tmp_path, server, result)
        server.fail(Failure("*", status=500))
        refused = subprocess.run(
            [comet, "report", str(experiment(tmp_path)), "--out", str(out), "--suite", "langsmith"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert "langsmith FAILED: " in refused.stderr
    assert PLANTED not in refused.stdout + refused.stderr
