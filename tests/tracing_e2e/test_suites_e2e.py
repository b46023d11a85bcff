"""``comet eval examples/release-notes --suite langfuse|langsmith`` with the real Claude Code CLI against the
scripted model server, reporting to ``comet trace-server``: the local reports, and at the trace server every
trial's trace (or run) with its trajectory and scores and the experiment's summary; a server answering 500
leaves the local results complete and the run exits ExitStatus.REPORTING (6). No key is written anywhere.

Needs the claude CLI (on PATH or in $COMET_AGENT_BIN_DIR); skipped locally when absent, failed in CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scaffold.errors import ExitStatus
from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.traceserver import Failure, TraceServer
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli, scripted_run_env
from tests.support.factories import REPO

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

LANGFUSE_KEYS = {
    "LANGFUSE_PUBLIC_KEY": "pk-lf-e2e-planted-0a1b2c3d",
    "LANGFUSE_SECRET_KEY": "sk-lf-e2e-planted-4e5f6a7b",
}
LANGSMITH_KEY = "lsv2_pt_e2e_planted_8c9d0e1f2a3b"
SECRETS = (ANTHROPIC_KEY, LANGSMITH_KEY, *LANGFUSE_KEYS.values())


def _skill(tmp_path: Path) -> Path:
    """A copy of examples/release-notes: comet eval keeps its runs beside the skill."""
    folder = tmp_path / "release-notes"
    shutil.copytree(REPO / "examples" / "release-notes", folder)
    return folder


def _eval(tmp_path: Path, suite: str, model_url: str, trace_url: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    cli_dir = require_cli("claude")
    skill = _skill(tmp_path)
    env = scripted_run_env(tmp_path, model_url, cli_dir)
    if suite == "langfuse":
        env.update(LANGFUSE_KEYS, LANGFUSE_BASE_URL=trace_url, LANGFUSE_TIMEOUT="2")
    else:
        env.update(LANGSMITH_API_KEY=LANGSMITH_KEY, LANGSMITH_ENDPOINT=trace_url, LANGSMITH_TEST_SUITE="e2e-suite")
    comet = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert comet
    argv = [comet, "eval", str(skill), "--suite", suite, "--backend", "local", "--count", "1"]
    result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=900)
    (experiment,) = (skill / ".comet" / "eval" / "runs" / "experiments").iterdir()
    return result, experiment


def _local_results_complete(experiment: Path) -> list[dict[str, Any]]:
    records = [json.loads(p.read_text()) for p in sorted(experiment.glob("trials/*/record.json"))]
    assert sorted(r["treatment"] for r in records) == ["CONTROL", "DYNAMIC_SKILL"]
    for name in ("summary.md", "comparison_report.md", "results.jsonl"):
        assert (experiment / name).is_file(), name
    return records


def _no_secret(tmp_path: Path, *texts: str) -> None:
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_text(errors="replace")
            for secret in SECRETS:
                assert secret not in data, f"a key was written to {path}"
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_langfuse_suite_with_claude_code(tmp_path: Path) -> None:
    with ScriptedModelServer(load_script(SCRIPTS / "claude-release-notes.yaml"), host="127.0.0.1") as model:
        with TraceServer() as traces:
            result, experiment = _eval(tmp_path / "ok", "langfuse", model.url, traces.url)
            decoded, log = traces.decoded(), json.dumps(traces.requests())
        # Authentication works (else nothing would run: a usage error); every upload after it fails.
        failures = [Failure("langfuse.otel", status=500), Failure("langfuse.scores", status=500)]
        with TraceServer(failures=failures) as broken:
            failed, failed_experiment = _eval(tmp_path / "failed", "langfuse", model.url, broken.url)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    records = _local_results_complete(experiment)
    assert all(r["verdict"] == "passed" for r in records), output

    spans = decoded["langfuse"]["spans"]
    runs = [s for s in spans if s["name"] == "comet.eval.run"]
    assert sorted(s["input"]["treatment"] for s in runs) == ["CONTROL", "DYNAMIC_SKILL"]
    for run in runs:
        assert run["output"]["verdict"] == "passed" and run["output"]["agent"] == "claude-code"
        children = [s for s in spans if s["parent_span_id"] == run["span_id"]]
        # The trajectory as child observations: the Skill call, the Write, the Bash command.
        names = " ".join(s["name"] for s in children)
        assert "Skill" in names and "Write" in names and "Bash" in names, names
    assert [s for s in spans if s["name"] == "comet.eval.experiment"]
    scores = {(s["name"], s["traceId"]) for s in decoded["langfuse"]["scores"]}
    for run in runs:
        for name in ("comet.passed", "comet.checks_pass_rate", "comet.rubric.completion"):
            assert (name, run["trace_id"]) in scores, name
    assert any(name == "comet.pass_at_k" for name, _ in scores)

    assert failed.returncode == ExitStatus.REPORTING, failed.stdout + failed.stderr
    _local_results_complete(failed_experiment)
    _no_secret(tmp_path, output, log, failed.stdout, failed.stderr)


def test_langsmith_suite_with_claude_code(tmp_path: Path) -> None:
    with ScriptedModelServer(load_script(SCRIPTS / "claude-release-notes.yaml"), host="127.0.0.1") as model:
        with TraceServer() as traces:
            result, experiment = _eval(tmp_path / "ok", "langsmith", model.url, traces.url)
            decoded, log = traces.decoded()["langsmith"], json.dumps(traces.requests())
        with TraceServer(
            failures=[Failure("langsmith.runs", status=500)]  # run ingestion fails; the SDK retries, then gives up
        ) as broken:
            failed, failed_experiment = _eval(tmp_path / "failed", "langsmith", model.url, broken.url)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    records = _local_results_complete(experiment)
    assert all(r["verdict"] == "passed" for r in records), output

    assert [d["name"] for d in decoded["datasets"]] == ["e2e-suite"]  # one dataset per suite
    assert len(decoded["sessions"]) == 1  # one experiment per session
    examples = decoded["examples"]
    assert sorted(e["inputs"]["treatment"] for e in examples) == ["CONTROL", "DYNAMIC_SKILL"]  # one per case
    assert all(e["outputs"]["required_skills"] == [] or "required_skills" in e["outputs"] for e in examples)
    roots = [r for r in decoded["runs"] if r.get("reference_example_id")]
    assert len(roots) == 2
    for run in roots:
        assert run["outputs"]["verdict"] == "passed"
        assert run["outputs"]["skills_invoked"] is not None
    keys = {f["key"] for f in decoded["feedback"]}
    assert {"checks_pass_rate", "rubric.completion", "pass"} <= keys, keys

    assert failed.returncode == ExitStatus.REPORTING, failed.stdout + failed.stderr
    _local_results_complete(failed_experiment)
    _no_secret(tmp_path, output, log, failed.stdout, failed.stderr)
