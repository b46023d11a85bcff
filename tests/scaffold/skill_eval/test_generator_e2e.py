"""The task generator end to end: the real Claude Code and Codex CLIs answer through the scripted model
server, on the local backend and on Docker; the cache is reused with no request to the model; an answer
invalid twice stops with the partial report; a repair attempt carries the first error.

Needs the CLIs (on PATH or in $COMET_AGENT_BIN_DIR); skipped locally when absent, failed in CI.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.errors import GenerationError
from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.skill_eval.generated import ensure_generated, load_generated
from scaffold.skill_eval.generator import GeneratorSettings
from scaffold.skill_eval.manifest import synthesize_manifest
from scaffold.skill_eval.prompt import REPAIR_MARKER
from tests.scaffold.skill_eval.fake_generator import BUILTIN
from tests.support.agents import ANTHROPIC_KEY, OPENAI_KEY, SCRIPTS, require_cli, scripted_cli_env

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

GENERATOR_TEXT = "You design evaluation tasks"
Generate = Callable[..., tuple[Path, list[dict[str, Any]]]]


@pytest.fixture(params=["local", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        request.getfixturevalue("docker_base_image")  # skips without an engine, fails in CI
    return str(request.param)


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    root = tmp_path / "markdown-report"
    shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", root)
    return root


@pytest.fixture
def generate(tmp_path: Path, skill: Path, monkeypatch: pytest.MonkeyPatch) -> Generate:
    """Run ensure_generated for *agent* with *script* answering; returns the manifest path and the
    model server's requests of this call."""
    log = tmp_path / "model-requests.jsonl"

    def run(agent: str, script: str, backend: str = "local") -> tuple[Path, list[dict[str, Any]]]:
        cli = {"claude-code": "claude", "codex": "codex"}[agent]
        monkeypatch.setenv("PATH", require_cli(cli) + os.pathsep + os.environ["PATH"])
        before = len(log.read_text().splitlines()) if log.exists() else 0
        with ScriptedModelServer(load_script(SCRIPTS / script), host="0.0.0.0", log_path=log) as server:
            url = "http://127.0.0.1:" + server.url.rsplit(":", 1)[1]
            env = scripted_cli_env(tmp_path / "user-home", url)
            settings = GeneratorSettings(agent, backend=backend, workspace_root=tmp_path / "ws", timeout_s=240)
            try:
                path = ensure_generated(
                    synthesize_manifest(skill), owner=skill, settings=settings, builtin_tasks=BUILTIN, env=env,
                    experiment_id="exp-gen",
                )  # fmt: skip
            finally:
                requests = [json.loads(line) for line in log.read_text().splitlines()[before:]] if log.exists() else []
                _no_secret_written(tmp_path)
        return path, requests

    return run


def _no_secret_written(root: Path) -> None:
    for path in root.rglob("*"):
        if (
            path.is_file()
            and not path.is_symlink()
            and path.suffix in (".json", ".jsonl", ".log", ".md", ".yaml", ".html")
        ):
            text = path.read_text(errors="replace")
            assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text, f"secret written to {path}"


def _generator_calls(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in requests if GENERATOR_TEXT in json.dumps(r.get("body"))]


def _check_generated(path: Path, skill: Path, agent: str) -> dict[str, Any]:
    manifest = load_generated(path, builtin_tasks=BUILTIN)
    assert manifest.task_names == ("release-summary-report", "report-settings-file")
    assert path.parent.parent == skill / ".comet" / "eval" / "generated" / "markdown-report"
    generation: dict[str, Any] = json.loads((path.parent / "generation.json").read_text())
    assert generation["agent"] == agent and generation["generation_overhead"]["attempt_count"] >= 1
    assert generation["generation_overhead"]["input_tokens"] > 0
    assert generation["agent_version"]
    return generation


@pytest.mark.parametrize("agent,script", [("claude-code", "claude-generator.yaml"), ("codex", "codex-generator.yaml")])
def test_generates_then_reuses_the_cache(
    generate: Generate, skill: Path, backend: str, agent: str, script: str
) -> None:
    path, requests = generate(agent, script, backend)
    assert _generator_calls(requests), "the generator never reached the model server"
    generation = _check_generated(path, skill, agent)
    expected_source = "comet-generated-tasks.json" if agent == "claude-code" else "final_text"
    assert generation["generation_overhead"]["attempts"][0]["answer_source"] == expected_source
    assert generation["backend"] == backend
    # The second run: the same entry, and the model server's log shows no generator call at all.
    again, requests = generate(agent, script, backend)
    assert again == path and _generator_calls(requests) == [] and requests == []


def test_invalid_twice_stops_with_the_partial_report(generate: Generate, skill: Path) -> None:
    with pytest.raises(GenerationError) as info:
        generate("claude-code", "claude-generator-invalid.yaml")
    report = skill / ".comet" / "eval" / "runs" / "exp-gen" / "summary.md"
    assert info.value.report_path == report and f"Partial report: {report}" in str(info.value)
    assert "expected 2-4 tasks, got 1" in str(info.value)
    text = report.read_text()
    assert "Evaluation stopped during task generation" in text and "Attempts: 2" in text
    meta = json.loads((report.parent / "metadata.json").read_text())
    assert meta["attribution"] == "task_generation" and meta["attempt_count"] == 2
    assert sorted(p.name for p in (report.parent / "task-generation").iterdir()) == ["attempt-1", "attempt-2"]
    assert not list((skill / ".comet" / "eval" / "generated").rglob("eval.yaml"))


def test_repair_carries_the_first_error_then_succeeds(generate: Generate, skill: Path) -> None:
    path, requests = generate("claude-code", "claude-generator-repair.yaml")
    generation = _check_generated(path, skill, "claude-code")
    attempts = generation["generation_overhead"]["attempts"]
    assert len(attempts) == 2 and "expected 2-4 tasks, got 1" in attempts[0]["error"] and attempts[1]["error"] is None
    repairs = [r for r in _generator_calls(requests) if REPAIR_MARKER in json.dumps(r["body"])]
    assert repairs and "expected 2-4 tasks, got 1" in json.dumps(repairs[0]["body"])
    assert yaml.safe_load(path.read_text())["metadata"]["generationFile"] == "generation.json"
