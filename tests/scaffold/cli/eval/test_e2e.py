"""``comet eval`` end to end with the real Claude Code and Codex CLIs against the scripted model server, on
the local backend and on Docker: a skill whose eval.yaml declares an inline task with every expect kind, a source
task and a recommended built-in task runs those (and generates none) under CONTROL and the skill, writes every
report and the quality-gate results, and exits 0; nothing writes a key.

Needs the claude and codex CLIs (on PATH or in $COMET_AGENT_BIN_DIR); skipped locally when absent, failed in CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import ANTHROPIC_KEY, OPENAI_KEY, SCRIPTS, require_cli, scripted_run_env
from tests.support.factories import TaskFactory

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


@pytest.fixture(params=["claude-code/local", "claude-code/docker", "codex/local"])
def run(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(agent, backend): Claude Code on both backends; Codex on the local one (its docker path is the
    generated-tasks test's)."""
    agent, backend = str(request.param).split("/")
    if backend == "docker":
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
    return agent, backend


def test_comet_eval_of_inline_source_and_recommended_tasks(tmp_path: Path, run: tuple[str, str]) -> None:
    agent, backend = run
    cli_dir = require_cli({"claude-code": "claude", "codex": "codex"}[agent])
    folder = tmp_path / "my-skill"
    (folder / "comet").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: my-skill\ndescription: writes summaries\n---\nWrite short summaries.\n"
    )
    # A source task (evals/tasks/own-task): its validator checks that out.txt says done.
    TaskFactory(folder / "evals").task("own-task", environment={"timeout_sec": 300})
    manifest = {
        "apiVersion": "comet.eval/v1alpha1",
        "kind": "SkillEvalManifest",
        "metadata": {"name": "my-skill-eval"},
        "skill": {"name": "my-skill"},
        "execution": {"agent": "claude-code", "model": "claude-sonnet-4-5"},
        "evaluation": {
            "tasks": [TASK, {"source": "evals/tasks/own-task"}],
            "recommendedTasks": ["generic-skill-smoke"],
            "qualityGates": {"minPassAt1": 1.0},
        },
    }
    (folder / "comet" / "eval.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    log = tmp_path / "model-requests.jsonl"
    comet = shutil.which("comet", path=str(Path(sys.executable).parent))
    assert comet
    script = SCRIPTS / f"{'claude' if agent == 'claude-code' else 'codex'}-eval-manifest.yaml"
    with ScriptedModelServer(load_script(script), host="0.0.0.0", log_path=log) as server:
        url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
        env = scripted_run_env(tmp_path, url, cli_dir)
        argv = [comet, "eval", str(folder), "--html", "--backend", backend, "--count", "1"]
        if agent == "codex":  # the command line over the manifest's execution
            argv += ["--agent", "codex", "--model", "gpt-5-codex"]
        result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    header = {k: v.strip() for k, _, v in (line.partition(":") for line in result.stdout.splitlines()) if v}
    if agent == "claude-code":
        assert header["Agent"] == "claude-code (manifest)"
        assert header["Model"] == "claude-sonnet-4-5 (manifest)"
    else:
        assert header["Agent"] == "codex (command line)"
    assert header["API"] == "custom (environment)" and url not in output
    # The declared tasks run, and no generated one: the manifest declares tasks, so nothing is generated.
    for task in ("writes-summary", "own-task", "generic-skill-smoke"):
        for treatment in ("CONTROL", "DYNAMIC_SKILL"):
            assert f"{task}-{treatment}-r1: passed" in output, output
    assert "Tasks generated" not in output and "You design evaluation tasks" not in log.read_text()
    assert "quality gates: PASS" in output
    (experiment,) = (folder / ".comet" / "eval" / "runs" / "experiments").iterdir()
    for name in ("summary.md", "comparison_report.md", "results.jsonl", "report.html", "quality-gates.json"):
        assert (experiment / name).is_file(), name
    results = [json.loads(line) for line in (experiment / "results.jsonl").read_text().splitlines()]
    assert sorted({r["task"] for r in results}) == ["generic-skill-smoke", "own-task", "writes-summary"]
    for trial in (experiment / "trials").iterdir():
        record = json.loads((trial / "record.json").read_text())
        if record["task"] != "writes-summary":
            continue
        statuses = {check["name"]: check["status"] for check in record["checks"]}
        # Every expect kind became a named check, and each passed.
        assert len(statuses) == 6 and set(statuses.values()) == {"passed"}, statuses
        assert any(name.startswith("command 1:") for name in statuses)
        assert any("$.items[0].name" in name for name in statuses)
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.name != "model-requests.jsonl":
            text = path.read_text(errors="replace")
            assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text, f"a key was written to {path}"
