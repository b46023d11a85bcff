"""The Langfuse suite (langfuse/) end to end: real pytest runs of it, the real langfuse SDK (5.2.0), and the
trace server (scaffold.traceserver) as the service: what arrives, what a failing service leaves, that the
keys never leave the SDK, and that collection starts nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR, BUILTIN_TASKS_DIR
from scaffold.traceserver import Failure, TraceServer

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "langfuse" / "tests"
PUBLIC = "pk-lf-planted-7f3a9c21"
SECRET = "sk-lf-planted-5be80d44"
"""Planted keys: they must reach the trace server (which redacts them) and nowhere else."""


def suite_env(tmp_path: Path, url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "PYTEST_", "COMET_"))}
    env.update(
        COMET_EVAL_HOME=str(tmp_path / "eval-home"),
        LANGFUSE_PUBLIC_KEY=PUBLIC,
        LANGFUSE_SECRET_KEY=SECRET,
        LANGFUSE_BASE_URL=url,
        LANGFUSE_TIMEOUT="2",  # the SDK's retries of a failing server end within seconds
        **extra,
    )
    return env


def run_suite(tmp_path: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest langfuse/tests`` from the repository (rootdir there, as a user runs it), the oracle agent."""
    argv = [sys.executable, "-m", "pytest", str(SUITE), "-p", "no:cacheprovider", "-p", "no:randomly"]
    argv += [f"--logs-dir={tmp_path / 'logs'}", f"--workspace-root={tmp_path / 'ws'}", *args]
    return subprocess.run(argv, check=False, cwd=ROOT, env=dict(env), capture_output=True, text=True, timeout=300)


def experiment_dir(tmp_path: Path) -> Path:
    [folder] = (tmp_path / "logs" / "experiments").iterdir()
    return folder


def every_file(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*") if p.is_file()]


def assert_no_secret(paths: Sequence[Path], *texts: str) -> None:
    for path in paths:
        data = path.read_bytes()
        assert PUBLIC.encode() not in data and SECRET.encode() not in data, path
    for text in texts:
        assert PUBLIC not in text and SECRET not in text


def spans_named(decoded: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [s for s in decoded["langfuse"]["spans"] if s["name"] == name]


def test_every_trial_is_a_trace_with_its_trajectory_and_scores_and_the_experiment_a_summary(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(
            tmp_path,
            suite_env(tmp_path, server.url, LANGFUSE_TRACING_ENVIRONMENT="ci"),
            "--task=fix-median",
            "--treatment=CONTROL",
            "--count=2",
            "--keep-workspaces=all",
        )
        decoded, requests = server.decoded(), server.requests()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    folder = experiment_dir(tmp_path)

    runs = spans_named(decoded, "comet.eval.run")
    assert sorted(s["input"]["trial"] for s in runs) == [1, 2]
    for run in runs:
        assert run["parent_span_id"] is None  # the root of its own trace
        assert run["resource"].get("langfuse.environment") == "ci"
        assert run["input"]["task"] == "fix-median"
        assert run["input"]["treatment"] == "CONTROL"
        assert run["input"]["difficulty"] == "easy"
        assert run["input"]["experiment_id"] == folder.name
        assert run["input"]["reference"]["expected_artifacts"] == ["stats.py"]
        assert run["output"]["verdict"] == "passed"
        assert run["output"]["agent"] == "oracle"
        assert run["output"]["checks_failed"] == 0
        children = [s for s in decoded["langfuse"]["spans"] if s["parent_span_id"] == run["span_id"]]
        assert [c["name"] for c in children] == ["agent.command/bash $COMET_SOLUTION_DIR/solve.sh/0"]
        assert children[0]["trace_id"] == run["trace_id"]
    assert len({r["trace_id"] for r in runs}) == 2  # one trace per trial

    [summary] = spans_named(decoded, "comet.eval.experiment")
    assert summary["parent_span_id"] is None
    assert summary["input"] == {"suite": "langfuse", "experiment_id": folder.name, "cases": 2}
    aggregate = summary["output"]["aggregates"]["fix-median/CONTROL"]
    assert aggregate["runs"] == 2
    assert aggregate["pass_at_k"] == {"1": 1.0, "2": 1.0}  # k=5 needs five trials: left out
    assert aggregate["pass_power_k"] == {"1": 1.0, "2": 1.0}

    scores = decoded["langfuse"]["scores"]
    run_ids = {r["span_id"]: r["trace_id"] for r in runs}
    for run_span, trace in run_ids.items():
        mine = {s["name"]: s for s in scores if s["observationId"] == run_span}
        assert {s["traceId"] for s in mine.values()} == {trace}
        assert mine["comet.passed"]["value"] == 1.0
        assert mine["comet.passed"]["dataType"] == "BOOLEAN"
        assert mine["comet.checks_pass_rate"]["value"] == 1.0
        assert mine["comet.checks_pass_rate"]["dataType"] == "NUMERIC"
        rubric = {n for n in mine if n.startswith("comet.rubric.")}
        assert "comet.rubric.completion" in rubric
        assert all(mine[n]["dataType"] == "NUMERIC" for n in rubric)
    summary_scores = [s for s in scores if s["observationId"] == summary["span_id"]]
    assert sorted((s["name"], s["metadata"]["k"]) for s in summary_scores) == [
        ("comet.pass_at_k", 1),
        ("comet.pass_at_k", 2),
        ("comet.pass_power_k", 1),
        ("comet.pass_power_k", 2),
    ]
    assert {(s["metadata"]["task"], s["metadata"]["treatment"]) for s in summary_scores} == {("fix-median", "CONTROL")}

    status = json.loads((folder / "tracing.json").read_text())
    assert status["status"] == "ok"
    assert sorted(t["trace_id"] for t in status["trials"]) == sorted(run_ids.values())
    assert "langfuse: 2 of 2 trial trace(s) sent" in result.stdout
    assert (folder / "summary.md").is_file()
    # The keys reached the server (it redacts them) and nothing else: no record, report, log, workspace.
    assert_no_secret(every_file(tmp_path / "logs", tmp_path / "ws"), output, json.dumps(requests), json.dumps(decoded))


def test_the_agent_process_never_gets_the_langfuse_keys(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(BUILTIN_TASKS_DIR / "fix-median", tasks / "fix-median")
    (tasks / "index.yaml").write_text(
        "tasks:\n- name: fix-median\n  category: generic\n  default_treatments:\n  - CONTROL\n"
        "  description: Fix the median function.\n"
    )
    solve = tasks / "fix-median" / "solution" / "solve.sh"
    solve.write_text(solve.read_text() + "\nenv > agent-env.txt\n")  # in the workspace, kept below
    with TraceServer() as server:
        result = run_suite(
            tmp_path, suite_env(tmp_path, server.url), f"--tasks-dir={tasks}", "--keep-workspaces=all", "-W", "default"
        )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    dumps = [p for p in every_file(tmp_path) if p.name == "agent-env.txt"]
    assert dumps, "the oracle's environment was not dumped"
    for dump in dumps:
        text = dump.read_text()
        assert "PATH=" in text  # a real environment dump
        assert "LANGFUSE_" not in text
    assert_no_secret(every_file(tmp_path / "logs", tmp_path / "ws", tasks))


def test_a_failing_service_loses_no_trial_and_exits_6(tmp_path: Path) -> None:
    failures = [Failure("langfuse.scores", status=500), Failure("langfuse.otel", status=500)]
    with TraceServer(failures=failures) as server:
        result = run_suite(tmp_path, suite_env(tmp_path, server.url), "--task=fix-median", "--treatment=CONTROL")
        decoded, requests = server.decoded(), server.requests()
    output = result.stdout + result.stderr
    assert result.returncode == 6, output
    folder = experiment_dir(tmp_path)
    assert [p.parent.name for p in folder.glob("trials/*/record.json")] == ["fix-median-CONTROL-r1"]
    for report in ("summary.md", "comparison_report.md", "results.jsonl"):
        assert (folder / report).is_file(), report
    assert "1 passed" in result.stdout
    assert "langfuse FAILED: fix-median-CONTROL-r1" in result.stdout
    assert "langfuse FAILED: experiment summary" in result.stdout
    assert f"comet report --suite langfuse {folder}" in result.stdout
    status = json.loads((folder / "tracing.json").read_text())
    assert status["status"] == "failed"
    assert status["trials"][0]["error"]
    assert {r["route"] for r in requests} >= {"langfuse.scores", "langfuse.otel"}
    assert decoded["langfuse"]["spans"] == [] and decoded["langfuse"]["scores"] == []
    assert_no_secret(every_file(tmp_path / "logs"), output, json.dumps(requests))

    # Uploaded again from the records, to a service that answers: the same trace and summary arrive.
    with TraceServer() as server:
        env = suite_env(tmp_path, server.url)
        again = subprocess.run(
            [sys.executable, "-m", "scaffold.cli.main", "report", str(folder), "--suite", "langfuse"],
            check=False,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        decoded = server.decoded()
    assert again.returncode == 0, again.stdout + again.stderr
    [run] = spans_named(decoded, "comet.eval.run")
    assert run["input"]["trial"] == 1 and run["input"]["reference"]["expected_artifacts"] == ["stats.py"]
    assert run["output"]["verdict"] == "passed"
    assert len(spans_named(decoded, "comet.eval.experiment")) == 1
    assert {s["name"] for s in decoded["langfuse"]["scores"]} >= {"comet.passed", "comet.pass_at_k"}
    assert json.loads((folder / "tracing.json").read_text())["status"] == "ok"
    assert "langfuse: 1 of 1 trial trace(s)" in again.stdout


@pytest.mark.slow
def test_a_service_that_times_out_loses_no_trial_and_exits_6(tmp_path: Path) -> None:
    # The key check answers; every upload after it is answered later than the SDK waits (LANGFUSE_TIMEOUT=2).
    failures = [Failure("langfuse.scores", delay=6.0), Failure("langfuse.otel", delay=6.0)]
    with TraceServer(failures=failures) as server:
        result = run_suite(tmp_path, suite_env(tmp_path, server.url), "--task=fix-median", "--treatment=CONTROL")
    output = result.stdout + result.stderr
    assert result.returncode == 6, output
    folder = experiment_dir(tmp_path)
    assert [p.parent.name for p in folder.glob("trials/*/record.json")] == ["fix-median-CONTROL-r1"]
    assert (folder / "summary.md").is_file()
    assert "langfuse FAILED: fix-median-CONTROL-r1" in result.stdout
    assert json.loads((folder / "tracing.json").read_text())["status"] == "failed"


def test_a_gate_failure_wins_over_a_reporting_failure(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langfuse.scores", status=500)]) as server:
        result = run_suite(
            tmp_path,
            suite_env(tmp_path, server.url),
            "--task=fix-median",
            "--treatment=CONTROL",
            "--agent=nop",
            "--gate=pass@1 of CONTROL >= 0.5",
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "gate FAIL" in result.stdout
    assert "langfuse FAILED" in result.stdout


def test_refused_keys_are_a_usage_error_before_any_trial(tmp_path: Path) -> None:
    with TraceServer(failures=[Failure("langfuse.projects", status=401)]) as server:
        result = run_suite(tmp_path, suite_env(tmp_path, server.url), "--task=fix-median")
        requests = server.requests()
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Langfuse authentication failed" in result.stderr
    assert "HTTP 401" in result.stderr
    assert [r["route"] for r in requests] == ["langfuse.projects"]
    assert not (tmp_path / "logs").exists()  # no trial, no experiment
    assert_no_secret([], result.stdout, result.stderr)


def test_missing_keys_are_a_usage_error_naming_them(tmp_path: Path) -> None:
    env = suite_env(tmp_path, "http://127.0.0.1:9")
    del env["LANGFUSE_SECRET_KEY"]
    result = run_suite(tmp_path, env, "--task=fix-median")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "the Langfuse suite needs LANGFUSE_SECRET_KEY" in result.stderr
    assert not (tmp_path / "logs").exists()


PROBE = """
import sys, pytest
code = pytest.main(sys.argv[1:])
module = sys.modules.get("langfuse")
print("SDK-IMPORTED" if getattr(module, "Langfuse", None) else "SDK-NOT-IMPORTED", code)
print("SDK-FILE", getattr(module, "__file__", None))
"""


def test_collection_imports_no_sdk_and_opens_no_connection(tmp_path: Path) -> None:
    with TraceServer() as server:
        env = suite_env(tmp_path, server.url)
        collected = subprocess.run(
            [sys.executable, "-c", PROBE, str(SUITE), "-p", "no:cacheprovider", "--collect-only", "-q"],
            check=False,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        skill = BUILTIN_SKILLS_DIR / "markdown-report"
        listed = subprocess.run(
            [sys.executable, "-c", PROBE.replace("pytest.main(sys.argv[1:])", _EVAL), "--suite", "langfuse"],
            check=False,
            cwd=ROOT,
            env={**env, "COMET_SKILL": str(skill)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = server.requests()
    assert "fix-median-CONTROL-r1" in collected.stdout, collected.stdout + collected.stderr
    assert "SDK-NOT-IMPORTED 0" in collected.stdout
    assert "Static collection only (langfuse)" in listed.stdout, listed.stdout + listed.stderr
    assert "SDK-NOT-IMPORTED 0" in listed.stdout
    assert requests == []


def test_in_a_run_from_the_repository_import_langfuse_is_the_sdk_not_the_suite_folder(tmp_path: Path) -> None:
    """pytest's importlib mode makes the folder langfuse/ a module "langfuse" (the parent of
    langfuse.conftest); the suite's process must still import the SDK under that name."""
    with TraceServer() as server:
        argv = [str(SUITE), "-p", "no:cacheprovider", "--task=fix-median", "--treatment=CONTROL"]
        result = subprocess.run(
            [sys.executable, "-c", PROBE, *argv, f"--logs-dir={tmp_path / 'logs'}"],
            check=False,
            cwd=ROOT,
            env=suite_env(tmp_path, server.url),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "SDK-IMPORTED 0" in result.stdout, result.stdout + result.stderr
    sdk_file = result.stdout.split("SDK-FILE ")[1].split()[0]
    assert Path(sdk_file).parent.parent != ROOT and Path(sdk_file).name == "__init__.py"
    assert "rootdir: " + str(ROOT) in result.stdout


_EVAL = (
    "__import__('scaffold.cli.main', fromlist=['main']).main("
    "['eval', __import__('os').environ['COMET_SKILL'], '--collect', '--agent', 'oracle', *sys.argv[1:]])"
)


@pytest.mark.slow
def test_under_xdist_workers_send_the_trials_and_the_controller_the_summary(tmp_path: Path) -> None:
    with TraceServer() as server:
        result = run_suite(
            tmp_path,
            suite_env(tmp_path, server.url),
            "--task=fix-median,wordcount-cli",
            "--treatment=CONTROL",
            "--count=2",
            "-n",
            "2",
        )
        decoded = server.decoded()
    assert result.returncode == 0, result.stdout + result.stderr
    runs = spans_named(decoded, "comet.eval.run")
    assert sorted((r["input"]["task"], r["input"]["trial"]) for r in runs) == [
        ("fix-median", 1),
        ("fix-median", 2),
        ("wordcount-cli", 1),
        ("wordcount-cli", 2),
    ]
    [summary] = spans_named(decoded, "comet.eval.experiment")
    assert set(summary["output"]["aggregates"]) == {"fix-median/CONTROL", "wordcount-cli/CONTROL"}
    status = json.loads((experiment_dir(tmp_path) / "tracing.json").read_text())
    assert status["status"] == "ok" and len(status["trials"]) == 4


@pytest.mark.slow
def test_a_resumed_experiment_sends_only_what_did_not_arrive_before(tmp_path: Path) -> None:
    args = ("--task=fix-median", "--treatment=CONTROL", "--experiment-id=resumed")
    with TraceServer(failures=[Failure("langfuse.scores", status=500)]) as server:
        assert run_suite(tmp_path, suite_env(tmp_path, server.url), *args).returncode == 6
    with TraceServer() as server:
        second = run_suite(tmp_path, suite_env(tmp_path, server.url), *args)
        resent = server.decoded()
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(spans_named(resent, "comet.eval.run")) == 1  # its upload had failed: sent again
    first_trace = json.loads((experiment_dir(tmp_path) / "tracing.json").read_text())["trials"][0]["trace_id"]
    with TraceServer() as server:
        third = run_suite(tmp_path, suite_env(tmp_path, server.url), *args)
        again = server.decoded()
    assert third.returncode == 0, third.stdout + third.stderr
    assert spans_named(again, "comet.eval.run") == []  # arrived before: not sent twice
    assert len(spans_named(again, "comet.eval.experiment")) == 1
    status = json.loads((experiment_dir(tmp_path) / "tracing.json").read_text())
    assert status["status"] == "ok" and status["trials"][0]["trace_id"] == first_trace
