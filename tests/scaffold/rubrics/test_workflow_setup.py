"""The workspace a profile asks for: interaction defaults, the workflow instruction first in the agent's
instructions file, and the comet guard hook registered in the agent's settings (merged, idempotent), in
real trials on the local backend."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import load_task
from scaffold.experiment.cases import Case
from scaffold.rubrics.profiles import get_profile
from scaffold.rubrics.workflow_setup import WORKFLOW_INSTRUCTION, hook_settings, instructions, with_profile_defaults
from tests.support.factories import TaskFactory, make_runner


def test_profile_defaults_fill_only_what_the_task_leaves_unset(tmp_path: Path) -> None:
    factory = TaskFactory(tmp_path)
    plain = load_task(factory.task("comet-plain"))
    own = load_task(factory.task("comet-own", interaction={"mode": "none", "max_turns": 3}))
    comet = get_profile("comet-workflow")
    filled = with_profile_defaults(plain, comet).spec.interaction
    assert (filled.mode, filled.max_turns) == ("auto_user", 12) and filled.simulator_prompt
    kept = with_profile_defaults(own, comet).spec.interaction
    assert (kept.mode, kept.max_turns) == ("none", 3)
    assert with_profile_defaults(plain, get_profile("generic")) is plain  # nothing to change: the same task
    authoring = with_profile_defaults(plain, get_profile("authoring-skill")).spec.interaction
    assert (authoring.mode, authoring.max_turns) == ("auto_user", 8)


def test_the_workflow_instruction_comes_first() -> None:
    assert instructions("generic", None) is None
    assert instructions("generic", "  Be brief.\n") == "Be brief.\n"
    text = instructions("comet-workflow", "Be brief.")
    assert text is not None and text.startswith(WORKFLOW_INSTRUCTION) and text.endswith("\n\nBe brief.\n")
    assert instructions("comet-workflow", None) == WORKFLOW_INSTRUCTION + "\n"


@pytest.mark.parametrize(
    ("agent", "path", "described"),
    [
        ("claude-code", ".claude/settings.json", False),
        ("codex", ".codex/hooks.json", False),
        ("qoder", ".qoder/settings.json", True),
        ("codebuddy", ".codebuddy/settings.json", True),
    ],
)
def test_the_hook_is_merged_once(agent: str, path: str, described: bool) -> None:
    command = "node /workspace/.claude/skills/comet/scripts/comet-hook-guard.mjs"
    existing = json.dumps({"permissions": {"allow": ["Bash"]}, "hooks": {"PreToolUse": [{"matcher": "Bash"}]}})
    made = hook_settings(agent, existing, command)
    assert made is not None and made[0] == path
    data = json.loads(made[1])
    assert data["permissions"] == {"allow": ["Bash"]}  # the user's settings stay
    entry = data["hooks"]["PreToolUse"][-1]
    assert entry["matcher"] == "Write|Edit|MultiEdit" and entry["hooks"][0]["command"] == command
    assert ("description" in entry["hooks"][0]) is described
    again = hook_settings(agent, made[1], command)
    assert again == made  # registering twice changes nothing


def test_no_hook_for_unknown_agents_or_unreadable_settings() -> None:
    assert hook_settings("my-agent", None, "node x") is None
    assert hook_settings("claude-code", "{not json", "node x") is None
    assert hook_settings("claude-code", "[1]", "node x") is None


class _AsClaudeCode:
    """The oracle agent presented as claude-code: the trial then registers Claude Code's hook settings."""

    name = "claude-code"

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def test_a_comet_trial_writes_the_instruction_and_the_hook(tmp_path: Path) -> None:
    """A real trial on the local backend: the comet task (inferred profile comet-workflow, interaction set
    to none by the task) gets the workflow instruction before the treatment's, and the guard hook."""
    factory = TaskFactory(tmp_path / "suite")
    factory.task("comet-demo", interaction={"mode": "none"})
    skill = factory.skill("comet", extra={"scripts/comet-hook-guard.mjs": "process.exit(0)\n"})
    factory.treatments(
        "comet.yaml",
        {
            "COMET_DEMO": {
                "description": "comet",
                "claude_md": "Be brief.",
                "skills": [{"name": "comet", "path": str(skill)}],
            }
        },
    )
    factory.write_index()
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path / "out", keep_workspaces="all")
    runner.agent = _AsClaudeCode(runner.agent)
    record = runner.run(Case("comet-demo", "COMET_DEMO", 1)).record
    assert record.profile == "comet-workflow" and len(record.dimensions) == 9
    kept = Path(str(record.workspace.path))
    text = (kept / "CLAUDE.md").read_text()
    assert text.startswith(WORKFLOW_INSTRUCTION) and text.rstrip().endswith("Be brief.")
    settings = json.loads((kept / ".claude" / "settings.json").read_text())
    (entry,) = settings["hooks"]["PreToolUse"]
    script = kept / ".claude" / "skills" / "comet" / "scripts" / "comet-hook-guard.mjs"
    assert entry["hooks"][0]["command"] == f"node {script}"
    assert "interaction" not in record.config  # the task's own interaction: the configuration is as before


def test_comet_profiles_lists_every_profile(capsys: pytest.CaptureFixture[str]) -> None:
    from scaffold.cli.main import main

    assert main(["profiles", "--json"]) == 0
    found = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert sorted(found) == ["authoring-skill", "comet-workflow", "generic"]
    assert (len(found["generic"]["dimensions"]), found["generic"]["interaction"]) == (7, "none")
    assert (len(found["comet-workflow"]["dimensions"]), found["comet-workflow"]["weight_sum"]) == (9, 11.0)
    assert found["comet-workflow"]["dimensions"][0] == {"name": "main_flow", "weight": 1.5}
    assert (found["comet-workflow"]["interaction"], found["comet-workflow"]["max_turns"]) == ("auto_user", 12)
    authoring = found["authoring-skill"]
    assert (len(authoring["dimensions"]), authoring["weight_sum"], authoring["max_turns"]) == (11, 12.8, 8)
    assert main(["profiles"]) == 0
    text = capsys.readouterr().out
    assert "comet-workflow:" in text and "weights sum to 11)" in text and "weights sum to 12.8)" in text
    assert re.search(r"\n +recovery_resilience +1\n", text)


def test_the_configuration_names_the_profile_interaction_only_when_it_applies(tmp_path: Path) -> None:
    """A comet task without [interaction] runs the profile's auto_user dialogue, and its configuration
    says so; a generic task's configuration (and so its hash) is as it always was."""
    factory = TaskFactory(tmp_path / "suite")
    factory.task("comet-plain")
    factory.task("plain")
    factory.write_index()
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path / "out")
    comet = runner.config_for(Case("comet-plain", "CONTROL", 1))
    assert comet["profile"] == "comet-workflow"
    assert comet["interaction"]["mode"] == "auto_user" and comet["interaction"]["max_turns"] == 12
    assert comet["interaction"]["simulator_prompt"] == get_profile("comet-workflow").simulator_prompt
    assert "interaction" not in runner.config_for(Case("plain", "CONTROL", 1))
