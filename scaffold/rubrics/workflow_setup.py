"""What a trial adds to a workspace for its profile, beside the treatment's skills (pure: the runner
writes what these functions return).

* **Profile defaults**: a task whose task.toml sets no interaction mode, turn limit or simulated user gets
  its profile's (the comet-workflow and authoring-skill profiles are multi-turn by nature).
* **The workflow instruction**: under the comet-workflow profile the agent's instructions file
  (CLAUDE.md, AGENTS.md) starts with a short instruction to enter through the ``comet`` skill, followed by
  the treatment's own ``claude_md``. Without it an agent often does the work directly and the run says
  nothing about the workflow.
* **The guard hook**: when a treatment installs the ``comet`` skill with its PreToolUse guard script
  (``scripts/comet-hook-guard.mjs``, else ``.sh``), the agent's settings register it, whatever the profile,
  so edits are checked as the workflow's guard intends. The settings file is merged, never replaced, and
  registering twice changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from scaffold.catalog.tasks import Task
from scaffold.rubrics.profiles import COMET_WORKFLOW, Profile

__all__ = [
    "GUARD_SCRIPTS",
    "WORKFLOW_INSTRUCTION",
    "hook_settings",
    "hook_settings_file",
    "instructions",
    "with_profile_defaults",
]

WORKFLOW_INSTRUCTION: Final = (
    "# How to work in this repository\n\n"
    "This project is developed with the Comet workflow. Before anything else, invoke the `comet` skill "
    "and follow it: it decides which stage skill comes next (open, design, build, verify, archive, or the "
    "hotfix and tweak paths) and keeps the change's state under `openspec/changes/`. Do not edit code "
    "before the workflow has opened a change for it."
)
GUARD_SCRIPTS: Final = (("scripts/comet-hook-guard.mjs", "node"), ("scripts/comet-hook-guard.sh", "bash"))
"""The guard scripts of the ``comet`` skill, in order of preference, with the program that runs each."""
_MATCHER: Final = "Write|Edit|MultiEdit"
_SETTINGS: Final = {
    # agent -> (settings file in the workspace, whether the inner hook carries a description)
    "claude-code": (".claude/settings.json", False),
    "codex": (".codex/hooks.json", False),
    "qoder": (".qoder/settings.json", True),
    "codebuddy": (".codebuddy/settings.json", True),
}


def with_profile_defaults(task: Task, profile: Profile) -> Task:
    """*task* with the profile's interaction defaults where its task.toml sets none (the task itself when
    nothing changes, so every other session is unchanged)."""
    interaction = task.spec.interaction
    given = interaction.model_fields_set
    update: dict[str, Any] = {}
    if "mode" not in given and profile.interaction != interaction.mode:
        update["mode"] = profile.interaction
    if "max_turns" not in given and profile.max_turns != interaction.max_turns:
        update["max_turns"] = profile.max_turns
    auto = update.get("mode", interaction.mode) == "auto_user"  # a simulated user only where one talks
    if auto and "simulator_prompt" not in given and profile.simulator_prompt and not interaction.simulator_prompt:
        update["simulator_prompt"] = profile.simulator_prompt
    if not update:
        return task
    spec = task.spec.model_copy(update={"interaction": interaction.model_copy(update=update)})
    return dataclasses.replace(task, spec=spec)


def instructions(profile: str, claude_md: str | None) -> str | None:
    """The agent's instructions file for *profile*: the workflow instruction first (comet-workflow), then
    the treatment's own; None when both are empty."""
    parts = [WORKFLOW_INSTRUCTION] if profile == COMET_WORKFLOW else []
    if claude_md and claude_md.strip():
        parts.append(claude_md.strip())
    return "\n\n".join(parts) + "\n" if parts else None


def hook_settings_file(agent: str) -> str | None:
    """The workspace file holding *agent*'s hook settings; None for an agent with no known hook settings
    (custom adapters)."""
    return _SETTINGS[agent][0] if agent in _SETTINGS else None


def hook_settings(agent: str, existing: str | None, command: str) -> tuple[str, str] | None:
    """(settings file, its new text) registering *command* as a PreToolUse hook for *agent*, merged into
    *existing* (the file's current text, or None); None for an agent with no known hook settings (custom
    adapters) or when *existing* is not a JSON object (never overwrite a user's file we cannot read)."""
    if agent not in _SETTINGS:
        return None
    path, described = _SETTINGS[agent]
    try:
        data = json.loads(existing) if existing and existing.strip() else {}
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    hook: dict[str, Any] = {"type": "command", "command": command}
    if described:
        hook["description"] = "Comet workflow guard"
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        return None
    entries = hooks.setdefault("PreToolUse", [])
    if not isinstance(entries, list):
        return None
    present = any(
        isinstance(e, dict) and any(isinstance(h, dict) and h.get("command") == command for h in e.get("hooks", []))
        for e in entries
    )
    if not present:
        entries.append({"matcher": _MATCHER, "hooks": [hook]})
    return path, json.dumps(data, indent=2) + "\n"
