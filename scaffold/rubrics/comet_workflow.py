"""The comet-workflow rubric: nine rule-based dimensions for runs of the Comet workflow skills.

Each dimension is the share of its binary checks that pass (weights and display order as the original Comet eval's
table, sum 11.0). The evidence is the run's trajectory (skills, commands, tool calls), the validation
checks and the workspace after the agent, read through :class:`scaffold.rubrics.WorkspaceFiles` (every
listing sorted, so a score never depends on the order a file system lists entries in). The workflow's
own run state is judged by comet_engine (scaffold.rubrics.comet_workflow reads the text, the engine says
whether it is whole): a corrupt or edited run file is a failed check with the engine's reason.

The session's baseline treatment is scored on completion and efficiency only (it has no workflow to
follow); other treatments get the workflow contract as hard failures: the entry skill ``comet``, and then
a stage skill, an OpenSpec skill and a Superpowers skill.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from comet_engine.errors import CorruptRunError
from comet_engine.skills.audit import read_checkpoint, read_pending, read_state, read_trajectory
from scaffold.rubrics import Dimension, RubricInput, RubricResult, WorkspaceFiles
from scaffold.rubrics.expected import skill_key
from scaffold.rubrics.generic import commands_of, completion, efficiency
from scaffold.trajectory import ToolCall

__all__ = ["PROFILE", "WEIGHTS", "normalize_skills", "score"]

PROFILE: Final = "comet-workflow"
WEIGHTS: Final = {
    "main_flow": 1.5,
    "gate_guard": 1.5,
    "skill_invocation": 1.0,
    "spec_drift": 1.0,
    "completion": 2.0,
    "efficiency": 0.8,
    "decision_point_compliance": 1.0,
    "artifact_quality": 1.2,
    "recovery_resilience": 1.0,
}
"""In display order."""

ENTRY: Final = "comet"
STAGE_SKILLS: Final = (
    "comet-open",
    "comet-design",
    "comet-build",
    "comet-verify",
    "comet-archive",
    "comet-hotfix",
    "comet-tweak",
)
SUPERPOWERS_SKILLS: Final = frozenset(
    {
        "brainstorming",
        "dispatching-parallel-agents",
        "executing-plans",
        "finishing-a-development-branch",
        "requesting-code-review",
        "subagent-driven-development",
        "systematic-debugging",
        "test-driven-development",
        "using-git-worktrees",
        "verification-before-completion",
        "writing-plans",
    }
)
_ALIASES: Final = {
    "opsx:new": "openspec-new-change",
    "opsx:apply": "openspec-apply-change",
    "opsx:verify": "openspec-verify-change",
    "opsx:archive": "openspec-archive-change",
    "opsx:explore": "openspec-explore",
    "opsx:propose": "openspec-propose",
}
CHANGES: Final = "openspec/changes"
PHASES: Final = {
    "full": ("open", "design", "build", "verify", "archive"),
    "hotfix": ("open", "build", "verify", "archive"),
    "tweak": ("open", "build", "verify", "archive"),
}
_C = re.escape(CHANGES)
_PHASE_SIGNALS: Final = {
    "open": (rf"{_C}/[^/\n]+/(?:proposal|tasks)\.md", rf"{_C}/archive/[^/\n]+/(?:proposal|tasks)\.md"),
    "design": (r"docs/superpowers/specs/.+\.md", rf"{_C}/(?:archive/)?[^/\n]+/design\.md"),
    "build": (
        rf"{_C}/(?:archive/)?[^/\n]+/plan\.md",
        r"docs/superpowers/plans/.+\.md",
        rf"{_C}/(?:archive/)?[^/\n]+/\.comet/",
    ),
    "verify": (rf"{_C}/(?:archive/)?[^/\n]+/verification\.md", r"docs/superpowers/reports/.+\.md"),
    "archive": (rf"{_C}/archive/", r"openspec/archive/"),
}
_DECISIONS: Final = {
    "full": re.compile(
        r"transition\s+\S+\s+(?:open-complete|design-complete|build-complete|verify-pass|verify-fail|preset-escalate)"
        r"|set\s+\S+\s+(?:build_mode|isolation|tdd_mode|review_mode|build_pause)\s"
    ),
    "preset": re.compile(r"transition\s+\S+\s+(?:verify-fail|preset-escalate|archive-reopen)"),
}
_ASK_TOOLS: Final = frozenset({"AskUserQuestion", "ask_user", "AskFollowUpQuestion"})
_DEPTH_WORDS: Final = ("tradeoff", "alternative", "risk", "consider", "option", "权衡", "替代", "风险", "考虑", "方案")
_KIND_IN_YAML: Final = re.compile(r"(?m)^\s*(?:workflow|classic_profile):\s*(full|hotfix|tweak)\b")
_KIND_IN_EVENTS: Final = re.compile(r'"workflow"\s*:\s*"(full|hotfix|tweak)"')
_WRITE_KEYS: Final = ("file_path", "path", "notebook_path")
_WRITE_TOOLS: Final = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_SYNC: Final = re.compile(r"\b(?:openspec\s+(?:sync|archive)|comet\s+classic\s+openspec\s+--\s+(?:sync|archive))\b")


def normalize_skills(names: Sequence[str]) -> list[str]:
    """Skill names as the checks compare them: legacy ``opsx:*`` names as their ``openspec-*`` skills, a
    plugin prefix or path dropped; duplicates removed, the order of first use kept (entry-before-stage
    is an order check)."""
    out: list[str] = []
    for name in names:
        key = skill_key(_ALIASES.get(name, name))
        if key not in out:
            out.append(key)
    return out


@dataclass(frozen=True, slots=True)
class _Run:
    """What the checks read, gathered once."""

    kind: str
    skills: list[str]
    commands: str
    haystack: str
    """Every workspace path and every path the agent wrote to, one per line."""
    written: list[str]
    change: str | None
    """The change folder (workspace-relative), or None."""
    files: WorkspaceFiles | None


def score(data: RubricInput) -> RubricResult:
    scored: dict[str, tuple[float | None, str]] = {
        "completion": completion(data.validation),
        "efficiency": efficiency(data.trajectory),
    }
    if data.treatment == data.baseline:
        # The baseline (whatever --baseline names) installs no workflow: scoring it on phases and skills would
        # only measure that, and failing it for a skill it does not have would fail every baseline trial.
        na = (None, f"N/A: {data.treatment!r} is the baseline: scored on completion and efficiency only")
        dims = tuple(Dimension(name, weight, *scored.get(name, na)) for name, weight in WEIGHTS.items())
        return RubricResult(PROFILE, dims, ())
    run = _gather(data)
    scored |= {
        "main_flow": _main_flow(run),
        "gate_guard": _gate_guard(run),
        "skill_invocation": _skill_invocation(run),
        "spec_drift": _spec_drift(run),
        "decision_point_compliance": _decisions(run, data),
        "artifact_quality": _artifact_quality(run),
        "recovery_resilience": _recovery(run),
    }
    hard = _hard_failures(run.skills)
    if not data.agent_invokes_skills:
        # As in the generic rubric: an agent that cannot invoke skills (oracle, nop) is not failed for the
        # skills it could never call; its phases, files and run state are still scored.
        scored["skill_invocation"] = (None, f"N/A: agent {data.trajectory.agent!r} does not invoke skills")
        hard = ()
    dims = tuple(Dimension(name, weight, *scored[name]) for name, weight in WEIGHTS.items())
    return RubricResult(PROFILE, dims, hard)


# -- the evidence


def _gather(data: RubricInput) -> _Run:
    t = data.trajectory
    listing = sorted(data.files.glob("**/*")) if data.files is not None else []
    written = _written_paths(t.tool_calls)
    skills = normalize_skills(t.skills_invoked)
    change = _change_dir(listing)
    return _Run(
        kind=_workflow_kind(skills, change, data.files),
        skills=skills,
        commands="\n".join(commands_of(t)),
        haystack="\n".join([*listing, *written]),
        written=written,
        change=change,
        files=data.files,
    )


def _written_paths(calls: Sequence[ToolCall]) -> list[str]:
    """The paths the agent created or changed (the original's files_created and files_modified): Claude
    Code's writing tools and Codex's file changes. A Read names a path too, but reading a delta spec is not
    writing one."""
    found: set[str] = set()
    for call in calls:
        if call.name in _WRITE_TOOLS:
            found.update(str(call.input[key]) for key in _WRITE_KEYS if isinstance(call.input.get(key), str))
        elif call.name == "file_change" and isinstance(call.input.get("changes"), list):
            found.update(
                str(change["path"])
                for change in call.input["changes"]
                if isinstance(change, dict) and isinstance(change.get("path"), str)
            )
    return sorted(found)


def _change_dir(listing: Sequence[str]) -> str | None:
    """The change folder: the first archived change, else the first active one (by name), holding
    ``.comet.yaml``, ``.comet/``, ``proposal.md`` or ``tasks.md``."""
    marks = (".comet.yaml", ".comet", "proposal.md", "tasks.md")
    archived: list[str] = []
    active: list[str] = []
    for path in listing:
        if not path.startswith(CHANGES + "/"):
            continue
        parts = path[len(CHANGES) + 1 :].split("/")
        if parts[0] == "archive" and len(parts) >= 3 and parts[2] in marks:
            archived.append(f"{CHANGES}/archive/{parts[1]}")
        elif parts[0] != "archive" and len(parts) >= 2 and parts[1] in marks:
            active.append(f"{CHANGES}/{parts[0]}")
    found = sorted(set(archived)) or sorted(set(active))
    return found[0] if found else None


def _workflow_kind(skills: Sequence[str], change: str | None, files: WorkspaceFiles | None) -> str:
    if "comet-hotfix" in skills:
        return "hotfix"
    if "comet-tweak" in skills:
        return "tweak"
    if change is not None and files is not None:
        m = _KIND_IN_YAML.search(files.read_text(f"{change}/.comet.yaml") or "")
        m = m or _KIND_IN_EVENTS.search(files.read_text(f"{change}/.comet/state-events.jsonl") or "")
        if m:
            return m.group(1)
    return "full"


# -- the dimensions: (score, reason)


def _share(checks: Sequence[bool]) -> float:
    return sum(checks) / len(checks) if checks else 0.0


def _main_flow(run: _Run) -> tuple[float, str]:
    expected = PHASES[run.kind]
    reached = [p for p in expected if any(re.search(rx, run.haystack) for rx in _PHASE_SIGNALS[p])]
    return len(reached) / len(expected), (
        f"workflow={run.kind} {len(reached)}/{len(expected)} phases ({', '.join(reached) or 'none'})"
    )


def _gate_guard(run: _Run) -> tuple[float, str]:
    if not run.commands:
        return 0.0, "no commands captured"
    guard = len(re.findall(r"comet-guard\b|\bcomet(?:\.sh)?\s+guard\b", run.commands))
    transition = len(re.findall(r"transition\s+\S+\s+(?:open|design|build|verify|archive)", run.commands))
    apply = run.commands.count("--apply")
    return _share([guard > 0, transition > 0, apply > 0]), f"guard={guard} transition={transition} apply={apply}"


def _skill_invocation(run: _Run) -> tuple[float, str]:
    skills = run.skills
    if not skills:
        return 0.0, "no skills invoked"
    stage = [s for s in skills if s in STAGE_SKILLS]
    openspec = [s for s in skills if s.startswith("openspec-")]
    superpowers = [s for s in skills if s in SUPERPOWERS_SKILLS]
    entry_first = ENTRY in skills and bool(stage) and skills.index(ENTRY) < min(skills.index(s) for s in stage)
    checks = [ENTRY in skills, bool(stage), bool(openspec), bool(superpowers), entry_first]

    def shown(found: Sequence[str]) -> str:
        return ",".join(found) or "missing"

    reason = (
        f"entry={ENTRY if ENTRY in skills else 'missing'} comet_stage={shown(stage)} openspec={shown(openspec)} "
        f"superpowers={shown(superpowers)} order={'entry-before-stage' if entry_first else 'missing'}"
    )
    return _share(checks), reason


def _spec_drift(run: _Run) -> tuple[float, str]:
    touched = any("specs/" in path and CHANGES in path for path in run.written)
    if not touched:
        return 1.0, "no delta spec written, none to sync"
    synced = bool(_SYNC.search(run.commands))
    return _share([True, synced]), f"spec_written=True spec_synced={synced}"


def _decisions(run: _Run, data: RubricInput) -> tuple[float, str]:
    # Unlike the original, a run that ran no shell command is not scored 0 here: with no command there is no
    # decision mutation either, and a run that needed no decision complied with the rule.
    pattern = _DECISIONS["full" if run.kind == "full" else "preset"]
    mutations = len(pattern.findall(run.commands))
    if not mutations:
        return 1.0, f"no {run.kind} decision mutations observed"
    asks = sum(call.name in _ASK_TOOLS for call in data.trajectory.tool_calls)
    ratio = asks / mutations
    return (
        1.0 if ratio >= 0.5 else 0.0
    ), f"workflow={run.kind} {asks} asks for {mutations} mutations (ratio={ratio:.2f})"


def _artifact_quality(run: _Run) -> tuple[float, str]:
    if run.change is None or run.files is None:
        return 0.0, "no openspec change directory"
    files, change = run.files, run.change
    checks: list[bool] = []
    notes = [f"workflow={run.kind}"]
    proposal = files.read_text(f"{change}/proposal.md") or ""
    checks.append(proposal.count("\n") >= 10)
    notes.append(f"proposal={'ok' if checks[-1] else 'stub'}")
    design = files.read_text(f"{change}/design.md")
    if run.kind == "full":
        text = (design or "").lower()
        checks.append(design is not None and sum(word in text for word in _DEPTH_WORDS) >= 2)
        notes.append(f"design={'deep' if checks[-1] else 'shallow'}")
    elif design is not None:
        notes.append("design=preset-optional")
    tasks = files.read_text(f"{change}/tasks.md")
    if tasks is not None:
        boxes = len(re.findall(r"- \[[ x]\]", tasks))
        checks.append(boxes >= (3 if run.kind == "full" else 1))
        notes.append(f"tasks={boxes} boxes")
    tests = [p for p in files.glob("**/test_*.py") if not any(part.startswith(".") for part in p.split("/"))]
    if run.kind in ("full", "hotfix") or tests:
        checks.append(any("assert" in (files.read_text(p) or "").lower() for p in sorted(tests)))
        notes.append(f"tests={'w/ assert' if checks[-1] else 'no assert'}")
    else:
        notes.append("tests=n/a")
    return _share(checks), "; ".join(notes)


def _recovery(run: _Run) -> tuple[float, str]:  # noqa: PLR0915 - five checks read in one place, in order
    if run.change is None or run.files is None:
        return 0.0, "no comet change directory"
    files, state_dir = run.files, f"{run.change}/.comet"
    checks: list[bool] = []
    notes: list[str] = []

    def check(ok: bool, note: str) -> None:
        checks.append(ok)
        notes.append(note)

    state = None
    state_text = files.read_text(f"{state_dir}/run-state.json")
    state_problem = None
    if state_text is not None:
        try:
            state = read_state(state_text, f"{state_dir}/run-state.json")
        except CorruptRunError as exc:
            state_problem = str(exc)
    checkpoint = files.read_text(f"{state_dir}/checkpoint.json")
    if checkpoint is not None:
        try:
            read_checkpoint(checkpoint, state, f"{state_dir}/checkpoint.json")
            check(True, "checkpoint=valid")
        except CorruptRunError as exc:
            check(False, f"checkpoint=invalid ({exc})")
    elif state_text is not None or files.read_text(f"{state_dir}/state-events.jsonl") is not None:
        check(True, "checkpoint=state-events")
    else:
        check(False, "checkpoint=missing")

    trajectories = sorted(files.glob(f"{state_dir}/trajectory*.jsonl"))
    problems = []
    for path in trajectories:
        text = files.read_text(path) or ""
        if state_text is None:
            # No engine state beside it: a run of other tooling (the original Comet's layout), whose
            # trajectory lines need not carry the engine's revisions; each line being JSON is all it asks.
            bad = _first_bad_json_line(text)
            if bad is not None:
                problems.append(f"{path} line {bad} is not a JSON line")
            continue
        try:
            read_trajectory(text, state.run_id if state else "?", path)
        except CorruptRunError as exc:
            problems.append(str(exc))
    if problems:
        check(False, f"trajectory=corrupt ({problems[0]})")
    else:
        check(bool(trajectories), f"trajectory={'exists' if trajectories else 'missing'}")

    context = bool(files.glob(f"{state_dir}/**/context.*") or files.glob(f"{state_dir}/handoff/*.md"))
    context = context or bool(files.glob(f"{state_dir}/handoff/*.json"))
    if run.kind == "full":
        check(context, f"context={'exists' if context else 'missing'}")
    else:
        notes.append(f"context={'exists' if context else 'preset-n/a'}")

    orphaned = []
    for path in sorted(files.glob(f"{state_dir}/**/pending*.json")):
        try:
            if read_pending(files.read_text(path) or "", path) is not None:
                orphaned.append(path)
        except CorruptRunError:
            continue  # an unreadable pending file says nothing about what is pending
    if state is not None and state.status in ("completed", "failed", "cancelled"):
        orphaned = []  # an ended run waits for nothing, whatever a projection still shows
    check(not orphaned, f"pending={'orphaned' if orphaned else 'clean'}")

    # A run-state.json the engine refuses fails even when .comet.yaml names a phase: the file a resumed run
    # would read is the one that is broken, whatever the summary beside it says.
    phase = _PHASE_LINE.search(files.read_text(f"{run.change}/.comet.yaml") or "")
    if state_problem is not None:
        check(False, f"state=corrupt ({state_problem})")
    elif phase:
        check(True, "state=ok")
    elif state is not None:
        ok = state.status == "completed" or bool(state.current_step)
        check(ok, f"state={'ok' if ok else 'incomplete'}")
    else:
        check(False, "state=missing")
    return _share(checks), "; ".join(notes)


_PHASE_LINE: Final = re.compile(r"phase:\s*\w+")


def _first_bad_json_line(text: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                json.loads(line)
            except ValueError:
                return number
    return None


def _hard_failures(skills: Sequence[str]) -> tuple[str, ...]:
    """The workflow contract: the entry skill first of all; with it, one skill of each nested kind."""
    if ENTRY not in skills:
        return (f"Required skill not invoked: {ENTRY}",)
    failures = []
    if not any(s in STAGE_SKILLS for s in skills):
        failures.append("Required Comet stage skill not invoked (one of " + ", ".join(STAGE_SKILLS) + ")")
    if not any(s.startswith("openspec-") for s in skills):
        failures.append("Required OpenSpec skill not invoked (an openspec-* skill)")
    if not any(s in SUPERPOWERS_SKILLS for s in skills):
        failures.append("Required Superpowers skill not invoked (e.g. brainstorming, writing-plans)")
    return tuple(failures)
