"""``comet eval`` end to end with the real Claude Code CLI against the scripted model server, on the local
backend and on Docker: a skill whose eval.yaml declares an inline task with every expect kind runs it under CONTROL and
the skill, writes every report and the quality-gate results, and exits 0; nothing writes the key.

Needs the claude CLI (on PATH or in $COMET_AGENT_BIN_DIR); skipped locally when absent, failed in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

TASK = {
    "name": "writes-summary",
    "prompt": "Write summary.md (a '# Summary' title and one sentence) and out/report.json with status ok.",
    "expect": {
        "files": ["summary.md", "out/report.json"],
        "contains": {"summary.md": ["# Summary"]},
        "json": [
            {"file": "out/report.json", "path": "$.status", "equals": "ok"},
            {"file": "out/report.json", "path": "$.items[0].name", "equals": "a"},
        ],
        "commands": [{"run": "test -s summary.md && grep -q ready summary.md", "timeout": 30}],
    },
    "rubric": ["The summary says whether the release is ready."],
}


@pytest.fixture(params=["local", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
    return str(request.param)


def test_comet_eval_of_an_inline_task_with_claude_code(tmp_path: Path, backend: str) -> None:
    cli_dir = require_cli("claude")
    folder = tmp_path / "my-skill"
    (folder / "comet").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: my-skill\ndescription: writes summaries\n---\nWrite short summaries.\n"
    )
    manifest = {
        "apiVersion": "comet.eval/v1alpha1",
        "kind": "SkillEvalManifest",
        "metadata": {"name": "my-skill-eval"},
        "skill": {"name": "my-skill"},
        "execution": {"agent": "claude-code", "model": "claude-sonnet-4-5"},
        "evaluation": {"tasks": [TASK], "qualityGates": {"minPassAt1": 1.0}},
    }
    (folder / "comet" / "eval.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    log = tmp_path / "model-requests.jsonl"
    comet = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert comet
    (tmp_path / "tmp").mkdir()
    with ScriptedModelServer(load_script(SCRIPTS / "claude-eval-inline.yaml"), host="0.0.0.0", log_path=log) as server:
        url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
        env = {
            "PATH": cli_dir + os.pathsep + os.environ.get("PATH", os.defpath),
            "HOME": str(tmp_path / "home"),
            "TMPDIR": str(tmp_path / "tmp"),
            "COMET_EVAL_HOME": str(tmp_path / "eval-home"),
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_BASE_URL": url,
            "LANG": "C.UTF-8",
            # The docker backend mounts the agent CLIs installed once per machine in this cache.
            "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
            **{k: v for k, v in os.environ.items() if k in ("DOCKER_HOST", "COMET_DOCKER_COPY")},
        }
        result = subprocess.run(
            [comet, "eval", str(folder), "--html", "--backend", backend],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    header = {k: v.strip() for k, _, v in (line.partition(":") for line in result.stdout.splitlines()) if v}
    assert header["Agent"] == "claude-code (manifest)"
    assert header["Model"] == "claude-sonnet-4-5 (manifest)"
    assert header["API"] == "custom (environment)" and url not in output
    assert "writes-summary-CONTROL-r1: passed" in output
    assert "writes-summary-DYNAMIC_SKILL-r1: passed" in output
    assert "quality gates: PASS" in output
    (experiment,) = (folder / ".comet" / "eval" / "runs" / "experiments").iterdir()
    for name in ("summary.md", "comparison_report.md", "results.jsonl", "report.html", "quality-gates.json"):
        assert (experiment / name).is_file(), name
    for trial in (experiment / "trials").iterdir():
        record = json.loads((trial / "record.json").read_text())
        statuses = {check["name"]: check["status"] for check in record["checks"]}
        # Every expect kind became a named check, and each passed.
        assert len(statuses) == 6 and set(statuses.values()) == {"passed"}, statuses
        assert any(name.startswith("command 1:") for name in statuses)
        assert any("$.items[0].name" in name for name in statuses)
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) >= 6  # three turns in each of the two trials
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.name != "model-requests.jsonl":
            assert ANTHROPIC_KEY not in path.read_text(errors="replace"), f"the key was written to {path}"
