"""The task generator's prompt: what it must return, the rules each task follows, and the skill's files.

The skill's files are also copied into the generator's workspace (under :data:`SKILL_DIR`), so the prompt
inlines their text only up to :data:`INLINE_BUDGET` and lists the rest by path and hash: a CLI agent gets
its prompt as one command-line argument, and Linux refuses a single argument over 128 KiB.
"""

from __future__ import annotations

import json
from typing import Final

from scaffold.skill_eval.snapshot import SkillSnapshot

__all__ = ["INLINE_BUDGET", "OUTPUT_FILE", "REPAIR_MARKER", "SKILL_DIR", "generator_prompt"]

OUTPUT_FILE: Final = "comet-generated-tasks.json"
"""Where the generator writes its JSON, relative to its workspace (its final text is read too)."""
SKILL_DIR: Final = "skill-under-test"
INLINE_BUDGET: Final = 48 * 1024
REPAIR_MARKER: Final = "Your previous answer was rejected"

_EXAMPLE: Final = {
    "tasks": [
        {
            "name": "summary-report",
            "prompt": "Write summary.md: a level-1 title 'Summary' and three bullet points about notes.txt.",
            "expect": {
                "files": ["summary.md"],
                "contains": {"summary.md": ["# Summary"]},
            },
            "rubric": ["The bullet points are about the content of notes.txt, not generic filler."],
        },
        {
            "name": "config-file",
            "prompt": "Create config.json with the key 'format' set to 'markdown', then check it with python3.",
            "expect": {
                "json": [{"file": "config.json", "path": "$.format", "equals": "markdown"}],
                "commands": [{"run": "python3 -c \"import json; json.load(open('config.json'))\"", "timeout": 60}],
            },
        },
    ]
}


def generator_prompt(
    snapshot: SkillSnapshot, *, skill_name: str, profile: str | None, previous_error: str | None
) -> str:
    """The whole prompt of one generator attempt (the second one carries the first one's error)."""
    parts = [
        f"You design evaluation tasks for the agent skill {skill_name!r}. Read the skill's files (listed at the"
        f" end; copies are in the folder {SKILL_DIR}/ of this workspace) and write between 2 and 4 tasks that"
        " an agent with this skill should do well and an agent without it could get wrong.",
        "",
        'Return JSON only: one object with a key "tasks", a list of tasks. Write it to the file'
        f" {OUTPUT_FILE} at the top of this workspace, and also give the same JSON as your final answer.",
        "",
        "Each task has:",
        "- name: unique, letters, digits, '.', '_' or '-' (starting with a letter or digit), at most 100 characters;",
        "- prompt: the concrete instruction given to the agent under test, naming every file it must write;",
        "- expect: at least one deterministic check, run after the agent finished, in the agent's workspace:",
        "  files (paths that must exist), contains (file -> strings it must contain),",
        "  json (file, a path starting with '$' such as $.a.b or $.items[0], and the value it equals),",
        "  commands (run: a shell command that exits 0 on success; timeout: seconds, 1 to 3600);",
        "- rubric (optional): criteria a reviewer scores; a rubric never replaces the deterministic expect;",
        "- workspace (optional): a folder of the skill whose files are copied into the agent's workspace.",
        "",
        "Rules: every path is relative to the agent's workspace (never absolute, never '..', never /workspace/...);"
        " files the agent reads must come from the task's workspace folder or be created by the agent;"
        " checks must not depend on the network, the time of day or randomness; use only the skill's files below.",
        "",
        "The environment of every task (plan for it; a task that needs more fails under every treatment and"
        " measures nothing): the agent works in a fresh folder holding the task's workspace files, with no"
        " internet (it reaches its model only) and the checks run with no network at all. Available: bash,"
        " coreutils, grep, sed, awk, find, tar, gzip, git, curl (with nowhere to reach), Node.js without npm"
        " packages, and Python 3 with its standard library only: no numpy, pandas, requests, Pillow or any"
        " other third-party package, and nothing can be installed. The skill's own files are there for the"
        " agent with the skill. If the skill needs a package that is missing, write tasks on what it can do"
        " without it.",
        f"Profile of the evaluation: {profile or 'generic'}.",
        "",
        "An example of the shape (the content must fit this skill, not this example):",
        json.dumps(_EXAMPLE, indent=2),
    ]
    if previous_error:
        parts += [
            "",
            f"{REPAIR_MARKER}. Fix every problem below and return the whole JSON again:",
            previous_error,
        ]
    parts += ["", "The skill's files (path, sha256):"]
    budget = INLINE_BUDGET
    for file in snapshot.files:
        size = len(file.content.encode("utf-8"))
        if size <= budget:
            budget -= size
            parts += ["", f"--- {file.path} ({file.sha256})", file.content.rstrip("\n"), f"--- end of {file.path}"]
        else:
            parts += ["", f"--- {file.path} ({file.sha256}): read it in {SKILL_DIR}/{file.path}"]
    return "\n".join(parts) + "\n"
