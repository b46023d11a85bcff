"""One comet-workflow trial with the real Claude Code CLI against the scripted model server (local
backend): a task with category ``comet`` infers the profile; the treatment installs a small ``comet``
entry skill with its guard script, an open stage skill, an OpenSpec and a Superpowers skill stub; the
trial writes the workflow instruction and registers the hook; the model enters through ``comet``, opens
a change and writes its documents; the nine dimensions score what happened.

Needs the claude CLI (on PATH or in $COMET_AGENT_BIN_DIR); skipped locally when absent, failed in CI.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from scaffold.agents import create_agent
from scaffold.experiment.cases import Case
from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.rubrics.workflow_setup import WORKFLOW_INSTRUCTION
from tests.support.agents import ANTHROPIC_KEY, SCRIPTS, require_cli, scripted_cli_env
from tests.support.factories import TaskFactory, make_runner

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

CHECK = textwrap.dedent(
    """\
    from pathlib import Path
    from scaffold.python.validation.core import write_test_results

    ok = Path("openspec/changes/add-median/proposal.md").is_file()
    write_test_results({"passed": ["proposal written"]} if ok else {"failed": ["proposal written"]})
    """
)

GUARD = "import { appendFileSync } from 'node:fs';\nappendFileSync('.guard-calls', 'x');\n"


def test_a_comet_workflow_trial_with_claude_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", require_cli("claude") + os.pathsep + os.environ["PATH"])
    factory = TaskFactory(tmp_path / "suite")
    factory.task(
        "comet-add-median",
        instruction="Open a Comet change named add-median that adds a median function. Run id: {run_id}\n",
        scripts={"check.py": CHECK},
        metadata={"category": "comet"},
        environment={"timeout_sec": 300},
        interaction={"mode": "none"},  # one scripted conversation; the profile's auto_user is tested apart
    )
    # The guard allows every edit and leaves a mark per call in the workspace (hooks run in the project).
    comet = factory.skill(
        "comet",
        extra={"scripts/comet-hook-guard.mjs": GUARD},
    )
    stage = factory.skill("comet-open")
    openspec = factory.skill("openspec-new-change")
    superpowers = factory.skill("brainstorming")
    factory.treatments(
        "comet.yaml",
        {
            "COMET_MINI": {
                "description": "the comet entry, its open stage, an OpenSpec and a Superpowers skill",
                "skills": [
                    {"name": "comet", "path": str(comet)},
                    {"name": "comet-open", "path": str(stage)},
                    {"name": "openspec-new-change", "path": str(openspec)},
                    {"name": "brainstorming", "path": str(superpowers)},
                ],
            }
        },
    )
    factory.write_index()
    log = tmp_path / "model-requests.jsonl"
    with ScriptedModelServer(load_script(SCRIPTS / "claude-comet-workflow.yaml"), log_path=log) as server:
        runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path / "out", keep_workspaces="all")
        runner.agent = create_agent("claude-code", scripted_cli_env(tmp_path / "home", server.url))
        record = runner.run(Case("comet-add-median", "COMET_MINI", 1)).record
    assert record.profile == "comet-workflow"
    scores = {d.name: d for d in record.dimensions}
    assert list(scores) == [
        "main_flow",
        "gate_guard",
        "skill_invocation",
        "spec_drift",
        "completion",
        "efficiency",
        "decision_point_compliance",
        "artifact_quality",
        "recovery_resilience",
    ]
    assert record.trajectory is not None
    assert record.trajectory.skills_invoked == ("comet", "comet-open", "brainstorming", "openspec-new-change")
    # the entry, a stage, an OpenSpec and a Superpowers skill, the entry before the stage: 5 of 5 checks
    assert scores["skill_invocation"].score == 1.0, scores["skill_invocation"].reason
    assert "order=entry-before-stage" in scores["skill_invocation"].reason
    assert scores["completion"].score == 1.0
    assert scores["main_flow"].reason.startswith("workflow=full 1/5 phases (open)")
    assert "proposal=ok" in scores["artifact_quality"].reason and "tasks=3 boxes" in scores["artifact_quality"].reason
    assert record.verdict == "passed" and record.hard_failures == ()
    kept = Path(str(record.workspace.path))
    assert (kept / "CLAUDE.md").read_text().startswith(WORKFLOW_INSTRUCTION)
    hook = json.loads((kept / ".claude" / "settings.json").read_text())["hooks"]["PreToolUse"][0]
    assert hook["matcher"] == "Write|Edit|MultiEdit"
    assert (kept / ".guard-calls").read_text() == "xx"  # the real CLI ran the guard before both Writes
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".log", ".md"):
            assert ANTHROPIC_KEY not in path.read_text(errors="replace"), f"secret written to {path}"
