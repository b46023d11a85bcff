"""The treatment kinds end to end: ``comet eval --quick`` on the markdown-report skill with the real Claude Code
CLI against the scripted model server, each kind's report showing its loading figures (summary.md's skill
use line): the model loads the skill only under the nudge, loads a distractor instead of the skill among
distractors, and writes a skill before the task under self-written, then uses it.

``comet`` runs as its own process, as a user starts it. Needs the CLI; skipped locally when absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.catalog.builtin import BUILTIN_SKILLS_DIR
from scaffold.modelserver import ScriptedModelServer, load_script
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli, scripted_run_env

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

COMET = str(Path(sys.executable).with_name("comet"))


def _eval(tmp_path: Path, script: str, *options: str) -> tuple[Path, str]:
    """Run ``comet eval --quick`` with *options*; the experiment folder and the output."""
    skill = tmp_path / "markdown-report"
    shutil.copytree(BUILTIN_SKILLS_DIR / "markdown-report", skill)
    with ScriptedModelServer(load_script(SCRIPTS / script)) as server:
        env = scripted_run_env(tmp_path, server.url, require_cli("claude"))
        proc = subprocess.run(
            [COMET, "eval", str(skill), "--agent", "claude-code", "--backend", "local", "--quick", "--count", "1",
             *options],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    line = next(line for line in out.splitlines() if line.startswith("summary: "))
    experiment = Path(line.removeprefix("summary: ")).parent
    for path in experiment.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".html"):
            assert ANTHROPIC_KEY not in path.read_text(errors="replace"), f"secret written to {path}"
    return experiment, out


def _record(experiment: Path, treatment: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (experiment / "trials" / f"generic-skill-smoke-{treatment}-r1" / "record.json").read_text()
    )
    return data


def test_nudge_the_scripted_model_loads_the_skill_only_when_told_it_is_there(tmp_path: Path) -> None:
    experiment, out = _eval(tmp_path, "claude-kind-nudge.yaml", "--nudge")
    assert "DYNAMIC_SKILL_NUDGE" in out
    summary = (experiment / "summary.md").read_text()
    plain, nudged = summary.split("- **DYNAMIC_SKILL**: ", 1)[1].split("- **DYNAMIC_SKILL_NUDGE**: ", 1)
    assert "skill used in 0 of 1 trials" in plain, summary
    assert "skill used in 1 of 1 trials" in nudged.split("\n- ", 1)[0], summary
    kind = _record(experiment, "DYNAMIC_SKILL_NUDGE")["config"]["treatment"]["kind"]  # type: ignore[index]
    assert kind["skills_of"] == "DYNAMIC_SKILL" and kind["nudge"].startswith("Skills are installed")


def test_distractors_the_scripted_model_loads_another_skill(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    for name, what in (("csv-summary", "Summarize a CSV file"), ("json-lint", "Check JSON files")):
        (pool / name).mkdir(parents=True)
        (pool / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {what}.\n---\n\n{what}.\n")
    experiment, _ = _eval(
        tmp_path,
        "claude-kind-distractors.yaml",
        "--distractors", "2", "--skill-pool", str(pool), "--treatment", "CONTROL,DYNAMIC_SKILL_PLUS_2_DISTRACTORS",
    )  # fmt: skip
    summary = (experiment / "summary.md").read_text()
    among = summary.split("- **DYNAMIC_SKILL_PLUS_2_DISTRACTORS**: ", 1)[1]
    assert "skill used in 0 of 1 trials; 1 loaded another skill instead" in among, summary
    assert "**CONTROL** installs no skill, and none was loaded in 1 trial(s) that would show it: no leak" in summary
    record = _record(experiment, "DYNAMIC_SKILL_PLUS_2_DISTRACTORS")
    drawn = record["config"]["treatment"]["kind"]["distractors"]["drawn"]  # type: ignore[index]
    assert sorted(d["name"] for d in drawn) == ["csv-summary", "json-lint"]
    assert record["expected_skills"] == ["markdown-report"]  # the distractors are installed, never expected


def test_self_written_the_scripted_model_writes_a_skill_then_uses_it(tmp_path: Path) -> None:
    experiment, _ = _eval(
        tmp_path, "claude-kind-self-written.yaml", "--self-written", "--treatment", "CONTROL,SELF_WRITTEN"
    )
    summary = (experiment / "summary.md").read_text()
    assert "skill used in 1 of 1 trials" in summary.split("- **SELF_WRITTEN**: ", 1)[1], summary
    trial = experiment / "trials" / "generic-skill-smoke-SELF_WRITTEN-r1"
    assert "name: smoke-report" in (trial / "self-written-skill" / "smoke-report" / "SKILL.md").read_text()
    record = _record(experiment, "SELF_WRITTEN")
    written = record["self_written"]
    assert list(written["skills"]) == ["smoke-report"]  # type: ignore[index]
    assert written["trajectory"]["tokens"]["input"] > 0  # type: ignore[index]  # the pre-phase's own spend
    assert record["expected_skills"] == ["smoke-report"]
    assert (trial / "self-written" / "instruction.md").is_file()
