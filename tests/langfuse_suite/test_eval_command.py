"""``comet eval --suite langfuse``: the Langfuse suite's test file runs (same trials and reports), its
lines and status at the end; the SDK and keys checked before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR, SUITES
from scaffold.cli.eval.planner import plan_eval
from scaffold.cli.eval.target import UsageError
from scaffold.cli.main import _parser
from scaffold.traceserver import Failure, TraceServer
from tests.langfuse_suite.test_suite import PUBLIC, ROOT, SECRET, assert_no_secret, every_file, suite_env

SKILL = BUILTIN_SKILLS_DIR / "markdown-report"


def comet_eval(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "scaffold.cli.main", "eval", str(SKILL), "--suite", "langfuse", "--agent", "oracle"]
    argv += ["--quick", "--out", str(tmp_path / "runs"), *args]
    return subprocess.run(
        argv, check=False, cwd=ROOT, env=suite_env(tmp_path, url), capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_comet_eval_runs_the_langfuse_suite_and_a_failed_upload_exits_6(tmp_path: Path) -> None:
    assert SUITES["langfuse"].parent.name == "langfuse" and SUITES["langfuse"].is_file()
    with TraceServer() as server:
        ok = comet_eval(tmp_path / "ok", server.url)
        decoded = server.decoded()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    runs = [s for s in decoded["langfuse"]["spans"] if s["name"] == "comet.eval.run"]
    assert sorted(s["input"]["treatment"] for s in runs) == ["CONTROL", "DYNAMIC_SKILL"]
    assert "langfuse: 2 of 2 trial trace(s) sent" in ok.stdout
    assert "langfuse: experiment summary sent" in ok.stdout

    with TraceServer(failures=[Failure("langfuse.scores", status=500)]) as server:
        failed = comet_eval(tmp_path / "failed", server.url)
    assert failed.returncode == 6, failed.stdout + failed.stderr
    assert "langfuse FAILED: generic-skill-smoke-CONTROL-r1" in failed.stdout
    assert "reporting to langfuse failed" in failed.stderr
    [folder] = (tmp_path / "failed" / "runs" / "experiments").iterdir()
    assert len(list(folder.glob("trials/*/record.json"))) == 2
    assert (folder / "summary.md").is_file()
    assert json.loads((folder / "tracing.json").read_text())["status"] == "failed"
    assert_no_secret(every_file(tmp_path), ok.stdout, ok.stderr, failed.stdout, failed.stderr)
    assert PUBLIC and SECRET


def test_a_missing_sdk_is_a_usage_error_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def version(name: str) -> str:
        if name == "langfuse":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    env = {"COMET_EVAL_HOME": str(tmp_path / "home"), "LANGFUSE_PUBLIC_KEY": PUBLIC, "LANGFUSE_SECRET_KEY": SECRET}
    args = _parser(skill_commands=False).parse_args(["eval", str(SKILL), "--suite", "langfuse", "--agent", "oracle"])
    with pytest.raises(UsageError, match=r"needs the langfuse SDK: pip install 'comet-eval\[langfuse\]'"):
        plan_eval(args, process_env=env)
