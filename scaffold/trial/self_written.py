"""The pre-phase of a self-written treatment: the agent writes a skill for the kind of task, then solves the
task with it (SkillsBench's "self-generated skills" condition).

It runs in a scratch workspace of the task's own kind (the same backend, made from the task's environment),
never the task's: what the agent tried there cannot leak into the task run except through the skill it
wrote. Neither holds the task's validation or solution (they are copied in only after the task run), and
the prompt gives the task's instruction only. The agent is asked to write the skill to a folder of the
workspace, ``self-written-skill/``, not to its own skills folder: Claude Code refuses writes under
``.claude/`` in print mode even with its permission checks skipped (seen with 2.1.112). What it leaves
there, and anything it put in its skills folder all the same, is kept in the trial folder
(``self-written-skill/``) and installed for the task run; its streams go to ``self-written/``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path, PurePosixPath
from typing import Final

from scaffold.agents.base import Agent, AgentRequest
from scaffold.catalog.tasks import Task
from scaffold.catalog.treatments import SELF_WRITTEN, SkillRef, Treatment, task_treatment
from scaffold.records import SelfWrittenInfo
from scaffold.trial.logs import cap_agent_logs
from scaffold.util.atomic import write_text_atomic
from scaffold.util.hashing import hash_tree
from scaffold.workspaces.base import Workspace

__all__ = ["PLACEHOLDER", "SKILL_FOLDER", "STREAMS_FOLDER", "WrittenSkills", "write_prompt", "write_skills"]

SKILL_FOLDER: Final = "self-written-skill"
"""Where the skills the agent wrote are kept, in the trial folder."""
STREAMS_FOLDER: Final = "self-written"
"""Where the pre-phase's prompt and agent streams are kept, in the trial folder."""
PLACEHOLDER: Final = "(self-written)"
"""How a trial's configuration names the skill the agent will write: its name and content are known only
after the pre-phase (the record's ``self_written`` holds them), and the configuration is fixed before it."""
FILE_LIMIT: Final = 1_000_000
"""Bytes of one file of a written skill kept; a larger file (a dump, not a skill) is left out."""

_PROMPT: Final = """\
Before you work on a task, write a skill for this kind of task, for yourself to use later.

Create a folder `{folder}/<skill-name>/` (a short lowercase name with hyphens) holding a SKILL.md that \
starts with YAML frontmatter (`name: <skill-name>` and a one-line `description` of when to use it), then the \
procedure, the pitfalls and the checks that make such a task go well; add scripts or templates beside it \
when they help. Do not do the task now: only write the skill. The task you will do with it later is:

{instruction}
"""


@dataclasses.dataclass(frozen=True, slots=True)
class WrittenSkills:
    """What the pre-phase left: the skills to install for the task, and what the record says of it."""

    skills: tuple[SkillRef, ...]
    info: SelfWrittenInfo


def write_prompt(instruction: str) -> str:
    """The pre-phase's prompt for a task whose (rendered) instruction is *instruction*."""
    return _PROMPT.format(folder=SKILL_FOLDER, instruction=instruction.strip())


def write_skills(
    agent: Agent, workspace: Workspace, task: Task, instruction: str, trial_dir: Path, model: str | None
) -> WrittenSkills:
    """Ask *agent* in the scratch *workspace* to write a skill for *task*, keep it under the trial folder and
    return it. An agent that wrote none leaves the task to run without one (``info.skills`` empty)."""
    skills_dir = agent.traits.skills_dir
    for folder in (skills_dir, SKILL_FOLDER):
        workspace.remove(folder)  # whatever is in them afterwards is the agent's
    prompt = write_prompt(instruction)
    logs = trial_dir / STREAMS_FOLDER
    logs.mkdir(parents=True, exist_ok=True)
    write_text_atomic(logs / "instruction.md", prompt, durable=False)
    # One turn: a simulated user would answer questions about a task the agent must not do yet.
    interaction = task.spec.interaction.model_copy(update={"mode": "none"})
    single = dataclasses.replace(task, spec=task.spec.model_copy(update={"interaction": interaction}))
    request = AgentRequest(single, Treatment(SELF_WRITTEN), prompt, task.spec.environment.timeout_sec, logs, model)
    started = time.monotonic()
    try:
        trajectory = agent.run(workspace, request)
    finally:
        cap_agent_logs(logs)
    duration = time.monotonic() - started
    kept = trial_dir / SKILL_FOLDER
    for folder in (skills_dir, SKILL_FOLDER):  # the folder asked for last: it wins a name written in both
        _copy_out(workspace, folder, kept)
    found = task_treatment(kept).skills if kept.is_dir() else ()
    skills = tuple(dataclasses.replace(s, source=f"self-written ({s.path})", variant="self-written") for s in found)
    hashes = {s.name: hash_tree(s.path) for s in skills}
    return WrittenSkills(skills, SelfWrittenInfo(SKILL_FOLDER, hashes, round(duration, 6), trajectory))


def _copy_out(workspace: Workspace, folder: str, dest: Path) -> None:
    """The regular files under *folder* of *workspace*, written below *dest* (links and files over
    FILE_LIMIT left out: a skill is text the agent reads)."""
    prefix = PurePosixPath(folder)
    paths = workspace.glob(f"{folder}/**/*")
    for rel, data in sorted(workspace.read_files(paths, FILE_LIMIT).items()):
        inner = PurePosixPath(rel).relative_to(prefix)
        if ".." in inner.parts:
            continue
        target = dest.joinpath(*inner.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
