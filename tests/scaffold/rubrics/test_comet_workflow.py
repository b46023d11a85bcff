"""The comet-workflow rubric on real workspace folders: full, hotfix and tweak runs, each dimension's
pass and fail, the baseline, the hard failures, opsx names, run files the engine refuses, sorted listings."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from comet_engine.skills.companions import state_digest
from scaffold.catalog.tasks import Task, TaskSpec
from scaffold.rubrics import Dimension, RubricInput, RubricResult, WorkspaceFiles, comet_workflow
from scaffold.rubrics.comet_workflow import WEIGHTS, normalize_skills, score
from scaffold.rubrics.profiles import COMET_WORKFLOW, get_profile, resolve_profile
from scaffold.trajectory import ToolCall, Trajectory
from scaffold.validation.results import ValidationCheck, ValidationOutcome
from scaffold.workspaces.files import HostFiles
from tests.engine.skillpkg import EXAMPLE
from tests.engine.test_skill_cli import Project

HOTFIX = "openspec/changes/archive/2026-01-01-fix-median"
FULL = "openspec/changes/add-login"
TWEAK = "openspec/changes/rename-flag"
PROPOSAL = "# Proposal\n" + "".join(f"line {n}\n" for n in range(12))
STATE = {"runId": "fix-median", "status": "completed", "iteration": 3, "currentStep": "archive"}
TRAJECTORY = '{"revision": 1, "type": "run-created"}\n{"revision": 2, "type": "step-finished"}\n'

HOTFIX_SKILLS = ("comet", "comet-hotfix", "openspec-apply-change", "systematic-debugging")
HOTFIX_COMMANDS = (
    "bash .claude/skills/comet/scripts/comet-guard check",
    "comet transition fix-median build --apply",
    "comet set fix-median verify_mode light",
    "comet transition fix-median verify-pass --apply",
)
FULL_SKILLS = ("comet", "comet-open", "comet-design", "openspec-new-change", "brainstorming")
FULL_COMMANDS = (
    "comet-guard check add-login",
    "comet transition add-login open-complete --apply",
    "comet transition add-login design-complete --apply",
)
ASK = ToolCall("AskUserQuestion", {"question": "Which option?"})


def task() -> Task:
    data = {"metadata": {"name": "comet-fix", "category": "comet"}, "validation": {"test_scripts": ["c.py"]}}
    return Task("comet-fix", Path("/nowhere/comet-fix"), TaskSpec.model_validate(data))


def run_state_files(change: str, state: Mapping[str, Any] = STATE) -> dict[str, str]:
    """The run files a workflow leaves in ``<change>/.comet``: a checkpoint made from *state*."""
    return {
        f"{change}/.comet/run-state.json": json.dumps(state),
        f"{change}/.comet/checkpoint.json": json.dumps({"runId": state["runId"], "stateDigest": state_digest(state)}),
        f"{change}/.comet/trajectory.jsonl": TRAJECTORY,
        f"{change}/.comet/pending-action.json": '{"pending": null}',
    }


def hotfix_files() -> dict[str, str]:
    return {
        f"{HOTFIX}/proposal.md": PROPOSAL,
        f"{HOTFIX}/tasks.md": "- [x] reproduce\n- [x] fix the median\n",
        f"{HOTFIX}/verification.md": "all green\n",
        f"{HOTFIX}/.comet/state-events.jsonl": '{"workflow": "hotfix", "revision": 1}\n',
        **run_state_files(HOTFIX),
        "test_stats.py": "def test_median():\n    assert median([1, 2, 3]) == 2\n",
    }


def full_files() -> dict[str, str]:
    return {
        f"{FULL}/proposal.md": PROPOSAL,
        f"{FULL}/design.md": "# Design\nTradeoff and alternative option with risk to consider.\n",
        f"{FULL}/tasks.md": "- [x] a\n- [x] b\n- [ ] c\n",
        f"{FULL}/plan.md": "plan\n",
        f"{FULL}/verification.md": "ok\n",
        f"{FULL}/.comet/handoff/context.md": "where we are\n",
        **run_state_files(FULL, {**STATE, "runId": "add-login"}),
        "docs/superpowers/specs/login.md": "spec\n",
        "openspec/archive/README.md": "archived\n",
        "tests/test_login.py": "def test_login():\n    assert True\n",
    }


def tweak_files() -> dict[str, str]:
    return {
        f"{TWEAK}/proposal.md": PROPOSAL,
        f"{TWEAK}/tasks.md": "- [x] rename the flag\n",
        f"{TWEAK}/.comet.yaml": "classic_profile: tweak\nphase: verify\n",
        f"{TWEAK}/verification.md": "ok\n",
        **run_state_files(TWEAK, {**STATE, "runId": "rename-flag"}),
        "openspec/archive/rename-flag.md": "archived\n",
    }


def workspace(root: Path, files: Mapping[str, str]) -> HostFiles:
    host = HostFiles(root)
    for rel, text in files.items():
        host.write_text(rel, text)
    return host


def run(
    files: WorkspaceFiles | None,
    *,
    skills: tuple[str, ...] = HOTFIX_SKILLS,
    commands: tuple[str, ...] = HOTFIX_COMMANDS,
    tool_calls: tuple[ToolCall, ...] = (),
    treatment: str = "COMET",
    baseline: str = "CONTROL",
    invokes: bool = True,
    checks: tuple[ValidationCheck, ...] = (ValidationCheck("a", "passed", "s"),),
    **trajectory: Any,
) -> RubricResult:
    traj = Trajectory(
        agent="claude-code", skills_invoked=skills, commands=commands, tool_calls=tool_calls, **trajectory
    )
    data = RubricInput(
        task(), (), invokes, traj, ValidationOutcome(checks), treatment=treatment, baseline=baseline, files=files
    )
    result = score(data)
    assert [d.name for d in result.dimensions] == list(WEIGHTS)
    return result


def dims(result: RubricResult) -> dict[str, Dimension]:
    return {d.name: d for d in result.dimensions}


# -- the profile


def test_weights_are_the_seeds_in_display_order() -> None:
    assert list(WEIGHTS.items()) == [
        ("main_flow", 1.5),
        ("gate_guard", 1.5),
        ("skill_invocation", 1.0),
        ("spec_drift", 1.0),
        ("completion", 2.0),
        ("efficiency", 0.8),
        ("decision_point_compliance", 1.0),
        ("artifact_quality", 1.2),
        ("recovery_resilience", 1.0),
    ]
    assert sum(WEIGHTS.values()) == 11.0


def test_the_profile_is_registered_with_its_defaults() -> None:
    profile = get_profile(COMET_WORKFLOW)
    assert profile.score is score
    assert profile.weights == tuple(WEIGHTS.items())
    assert profile.interaction == "auto_user" and profile.max_turns == 12
    assert profile.simulator_prompt and "approve" in profile.simulator_prompt.lower()
    assert resolve_profile(task()) is profile  # category "comet" infers it


# -- whole runs (the original's fixtures, ported)


def test_a_hotfix_run_scores_full_marks(tmp_path: Path) -> None:
    result = run(workspace(tmp_path, hotfix_files()))
    d = dims(result)
    assert {name: dim.score for name, dim in d.items()} == dict.fromkeys(WEIGHTS, 1.0)
    assert d["main_flow"].reason == "workflow=hotfix 4/4 phases (open, build, verify, archive)"
    assert d["decision_point_compliance"].reason == "no hotfix decision mutations observed"
    assert "tasks=2 boxes" in d["artifact_quality"].reason and "tests=w/ assert" in d["artifact_quality"].reason
    assert d["recovery_resilience"].reason == (
        "checkpoint=valid; trajectory=exists; context=preset-n/a; pending=clean; state=ok"
    )
    assert d["gate_guard"].reason == "guard=1 transition=2 apply=2"
    assert result.hard_failures == ()
    assert result.weighted_score == 1.0


def test_a_tweak_run_is_known_by_its_comet_yaml(tmp_path: Path) -> None:
    skills = ("comet", "comet-build", "openspec-apply-change", "executing-plans")
    d = dims(run(workspace(tmp_path, tweak_files()), skills=skills))
    assert d["main_flow"].score == 1.0 and d["main_flow"].reason.startswith("workflow=tweak 4/4")
    assert d["artifact_quality"].score == 1.0
    assert "tasks=1 boxes" in d["artifact_quality"].reason and "tests=n/a" in d["artifact_quality"].reason


def test_a_full_run_scores_full_marks(tmp_path: Path) -> None:
    result = run(workspace(tmp_path, full_files()), skills=FULL_SKILLS, commands=FULL_COMMANDS, tool_calls=(ASK,))
    d = dims(result)
    assert {name: dim.score for name, dim in d.items()} == dict.fromkeys(WEIGHTS, 1.0)
    assert d["main_flow"].reason == "workflow=full 5/5 phases (open, design, build, verify, archive)"
    assert "design=deep" in d["artifact_quality"].reason and "tasks=3 boxes" in d["artifact_quality"].reason
    assert "context=exists" in d["recovery_resilience"].reason
    assert d["decision_point_compliance"].reason == "workflow=full 1 asks for 2 mutations (ratio=0.50)"
    assert result.hard_failures == ()


# -- each dimension, pass and fail


def test_main_flow_counts_the_phases_reached(tmp_path: Path) -> None:
    files = workspace(tmp_path, {f"{FULL}/proposal.md": PROPOSAL})
    d = dims(run(files, skills=FULL_SKILLS))["main_flow"]
    assert d.score == 1 / 5 and d.reason == "workflow=full 1/5 phases (open)"
    # A file the agent wrote and later removed still shows the phase (the tool call names it).
    call = ToolCall("Write", {"file_path": f"/workspace/{FULL}/design.md", "content": "x"})
    assert dims(run(files, skills=FULL_SKILLS, tool_calls=(call,)))["main_flow"].score == 2 / 5
    assert dims(run(None, skills=FULL_SKILLS))["main_flow"].reason == "workflow=full 0/5 phases (none)"


def test_gate_guard_needs_guard_transition_and_apply() -> None:
    assert dims(run(None, commands=()))["gate_guard"].score == 0.0
    assert dims(run(None, commands=()))["gate_guard"].reason == "no commands captured"
    d = dims(run(None, commands=("comet guard", "comet transition x build")))["gate_guard"]
    assert d.score == 2 / 3 and d.reason == "guard=1 transition=1 apply=0"
    # Commands of tool calls count as well as the agent's own list.
    call = ToolCall("Bash", {"command": "comet-guard && comet transition x open --apply"})
    assert dims(run(None, commands=(), tool_calls=(call,)))["gate_guard"].score == 1.0


def test_skill_invocation_checks_the_kinds_and_the_entry_first() -> None:
    d = dims(run(None, skills=("comet",)))["skill_invocation"]
    assert round(d.score or 0, 2) == 0.20 and "comet_stage=missing" in d.reason
    late = dims(run(None, skills=("comet-open", "comet", "openspec-new-change", "brainstorming")))
    assert late["skill_invocation"].score == 0.8 and "order=missing" in late["skill_invocation"].reason
    none = dims(run(None, skills=()))["skill_invocation"]
    assert none.score == 0.0 and none.reason == "no skills invoked"
    full = dims(run(None, skills=FULL_SKILLS))["skill_invocation"]
    assert full.reason == (
        "entry=comet comet_stage=comet-open,comet-design openspec=openspec-new-change superpowers=brainstorming "
        "order=entry-before-stage"
    )


def test_opsx_names_count_as_their_openspec_skills() -> None:
    assert normalize_skills(["opsx:apply", "comet", "plugin:comet", "opsx:propose"]) == [
        "openspec-apply-change",
        "comet",
        "openspec-propose",
    ]
    result = run(None, skills=("comet", "comet-hotfix", "opsx:apply", "systematic-debugging"))
    assert dims(result)["skill_invocation"].score == 1.0
    assert "openspec=openspec-apply-change" in dims(result)["skill_invocation"].reason
    assert result.hard_failures == ()


def test_spec_drift_wants_a_written_delta_spec_synced() -> None:
    assert dims(run(None))["spec_drift"].score == 1.0
    write = ToolCall("Write", {"file_path": f"{FULL}/specs/auth/spec.md", "content": "x"})
    stale = dims(run(None, tool_calls=(write,)))["spec_drift"]
    assert stale.score == 0.5 and stale.reason == "spec_written=True spec_synced=False"
    synced = dims(run(None, tool_calls=(write,), commands=("openspec archive add-login",)))["spec_drift"]
    assert synced.score == 1.0 and synced.reason == "spec_written=True spec_synced=True"
    # Reading a delta spec is not writing one; a Codex file change is.
    read = ToolCall("Read", {"file_path": f"{FULL}/specs/auth/spec.md"})
    assert dims(run(None, tool_calls=(read,)))["spec_drift"].score == 1.0
    change = ToolCall("file_change", {"changes": [{"path": f"/w/{FULL}/specs/auth/spec.md", "kind": "add"}]})
    assert dims(run(None, tool_calls=(change,)))["spec_drift"].score == 0.5


def test_decisions_need_the_user_asked() -> None:
    # Not the original's quirk: a run without any command made no decision and complies.
    assert dims(run(None, skills=FULL_SKILLS, commands=()))["decision_point_compliance"].score == 1.0
    silent = dims(run(None, skills=FULL_SKILLS, commands=FULL_COMMANDS))["decision_point_compliance"]
    assert silent.score == 0.0 and silent.reason == "workflow=full 0 asks for 2 mutations (ratio=0.00)"
    set_mode = ("comet set add-login build_mode subagent --apply",)
    asked = run(None, skills=FULL_SKILLS, commands=set_mode, tool_calls=(ASK,))
    assert dims(asked)["decision_point_compliance"].score == 1.0
    # A hotfix counts only the preset's mutations: verify-fail is one, verify-pass is not.
    failed = dims(run(None, commands=("comet transition fix-median verify-fail",)))["decision_point_compliance"]
    assert failed.score == 0.0 and failed.reason.startswith("workflow=hotfix 0 asks for 1 mutations")


def test_artifact_quality_fails_stubs_and_shallow_designs(tmp_path: Path) -> None:
    assert dims(run(None))["artifact_quality"].reason == "no openspec change directory"
    files = workspace(
        tmp_path,
        {f"{FULL}/proposal.md": "# short\n", f"{FULL}/design.md": "we do it\n", f"{FULL}/tasks.md": "- [ ] a\n"},
    )
    d = dims(run(files, skills=FULL_SKILLS))["artifact_quality"]
    assert d.score == 0.0
    assert d.reason == "workflow=full; proposal=stub; design=shallow; tasks=1 boxes; tests=no assert"


def test_completion_is_the_share_of_counted_checks() -> None:
    checks = (ValidationCheck("a", "passed", "s"), ValidationCheck("b", "failed", "s"))
    d = dims(run(None, checks=checks))["completion"]
    assert d.score == 0.5 and "failed: b" in d.reason
    assert dims(run(None, checks=()))["completion"].score == 0.0


def test_efficiency_limits_and_unreported_figures() -> None:
    assert dims(run(None, turns=81, duration_s=601.0))["efficiency"].score == 1 / 3
    unreported = dims(run(None, turns=None))["efficiency"]
    assert unreported.score == 1.0 and "turns N/A" in unreported.reason


def test_recovery_fails_a_workspace_without_run_files(tmp_path: Path) -> None:
    files = workspace(tmp_path, {f"{FULL}/proposal.md": PROPOSAL})
    d = dims(run(files, skills=FULL_SKILLS))["recovery_resilience"]
    assert d.score == 0.2  # only "nothing is left pending" holds
    assert d.reason == "checkpoint=missing; trajectory=missing; context=missing; pending=clean; state=missing"
    assert dims(run(None))["recovery_resilience"].reason == "no comet change directory"


def test_a_corrupt_checkpoint_is_a_failed_check_with_the_engines_reason(tmp_path: Path) -> None:
    files = workspace(tmp_path, {**hotfix_files(), f"{HOTFIX}/.comet/checkpoint.json": "{not json"})
    d = dims(run(files))["recovery_resilience"]
    assert d.score == 0.75  # a preset's context is a note, not a check: 3 of 4
    assert f"checkpoint=invalid (run '?': {HOTFIX}/.comet/checkpoint.json is not valid JSON" in d.reason


def test_a_state_edited_after_its_checkpoint_is_named(tmp_path: Path) -> None:
    tampered = {**STATE, "currentStep": "verify"}  # the checkpoint was made from STATE
    files = workspace(tmp_path, {**hotfix_files(), f"{HOTFIX}/.comet/run-state.json": json.dumps(tampered)})
    d = dims(run(files))["recovery_resilience"]
    assert d.score == 0.75 and "checkpoint=invalid (run 'fix-median': " in d.reason
    assert "was made from another state than run-state.json" in d.reason


def test_a_broken_run_state_or_trajectory_fails_with_the_engines_reason(tmp_path: Path) -> None:
    broken = {
        **hotfix_files(),
        f"{HOTFIX}/.comet/run-state.json": '{"runId": "fix-median"}',
        f"{HOTFIX}/.comet/trajectory.jsonl": '{"revision": 2}\n{"revision": 1}\n',
        f"{HOTFIX}/.comet.yaml": "phase: archive\n",  # a summary does not mend the state
    }
    d = dims(run(workspace(tmp_path, broken)))["recovery_resilience"]
    assert "state=corrupt (run 'fix-median': " in d.reason and "lacks status, iteration" in d.reason
    assert "trajectory=corrupt (" in d.reason and "revision 1 after 2" in d.reason
    assert d.score == 0.5  # the checkpoint has no state to compare with; pending is clean


def test_a_pending_action_of_a_live_run_is_orphaned(tmp_path: Path) -> None:
    live = {**STATE, "status": "running"}
    files = {**hotfix_files(), **run_state_files(HOTFIX, live)}
    files[f"{HOTFIX}/.comet/pending-action.json"] = '{"pending": {"id": "report"}}'
    d = dims(run(workspace(tmp_path / "live", files)))["recovery_resilience"]
    assert "pending=orphaned" in d.reason and d.score == 0.75
    done = {**hotfix_files(), f"{HOTFIX}/.comet/pending-action.json": '{"pending": {"id": "report"}}'}
    assert "pending=clean" in dims(run(workspace(tmp_path / "done", done)))["recovery_resilience"].reason


# -- baseline and hard failures


def test_the_baseline_is_scored_on_completion_and_efficiency_only(tmp_path: Path) -> None:
    for baseline in ("CONTROL", "plain-claude"):
        result = run(workspace(tmp_path / baseline, {}), skills=(), treatment=baseline, baseline=baseline)
        d = dims(result)
        assert {n for n, dim in d.items() if dim.applicable} == {"completion", "efficiency"}
        assert "is the baseline: scored on completion and efficiency only" in d["main_flow"].reason
        assert result.hard_failures == ()
    # A treatment that is only called CONTROL, with another baseline, is scored on everything.
    other = run(None, skills=(), treatment="CONTROL", baseline="plain-claude")
    assert all(dim.applicable for dim in other.dimensions)
    assert other.hard_failures == ("Required skill not invoked: comet",)


def test_hard_failures_name_the_missing_skills() -> None:
    assert run(None, skills=("comet-open", "openspec-new-change")).hard_failures == (
        "Required skill not invoked: comet",
    )
    failures = run(None, skills=("comet",)).hard_failures
    assert len(failures) == 3
    assert "comet-open" in failures[0] and "openspec-" in failures[1] and "brainstorming" in failures[2]
    assert run(None, skills=HOTFIX_SKILLS).hard_failures == ()


def test_an_agent_that_cannot_invoke_skills_is_not_failed_for_them(tmp_path: Path) -> None:
    result = run(workspace(tmp_path, hotfix_files()), skills=(), invokes=False)
    d = dims(result)
    assert d["skill_invocation"].score is None and "does not invoke skills" in d["skill_invocation"].reason
    assert result.hard_failures == ()
    assert d["main_flow"].score == 1.0  # the files it left are still scored


# -- listings


class MemoryFiles:
    """A WorkspaceFiles over a dict, listing in the order asked for (here: against the protocol, not
    always sorted), folders included as a real workspace lists them."""

    def __init__(self, files: Mapping[str, str], *, reverse: bool) -> None:
        self._files = dict(files)
        self._paths = set(files) | {str(parent) for p in files for parent in Path(p).parents if str(parent) != "."}
        self._reverse = reverse

    def glob(self, pattern: str) -> list[str]:
        # "**/" as any number of folders, "*" within one: enough for the rubric's patterns.
        rx = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
        return sorted((p for p in self._paths if re.fullmatch(rx, p)), reverse=self._reverse)

    def read_text(self, rel: str) -> str | None:
        return self._files.get(rel)


def test_the_result_does_not_depend_on_the_listing_order() -> None:
    # Two changes: the rubric reads the first by name (0-first, whose proposal is a stub), whichever order
    # the workspace lists them in.
    files = {
        **{p.replace("fix-median", "b-second"): t for p, t in hotfix_files().items()},
        "openspec/changes/archive/0-first/proposal.md": "# stub\n",
        "openspec/changes/archive/0-first/tasks.md": "- [x] a\n",
    }
    forward = run(MemoryFiles(files, reverse=False))
    backward = run(MemoryFiles(files, reverse=True))
    assert forward == backward
    assert "proposal=stub" in dims(forward)["artifact_quality"].reason


# -- any trajectory


_NAMES = st.sampled_from(
    [*comet_workflow.STAGE_SKILLS, "comet", "opsx:apply", "brainstorming", "openspec-propose", "x/y:z", ""]
)
_COMMANDS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(FULL_COMMANDS + HOTFIX_COMMANDS + ("openspec sync", "comet set x tdd_mode on ")),
)
_CALLS = st.builds(
    ToolCall,
    st.sampled_from(["AskUserQuestion", "Write", "Bash", "Edit", "ask_user"]),
    st.dictionaries(st.sampled_from(["file_path", "command", "path"]), st.one_of(st.text(max_size=30), st.integers())),
)


@settings(max_examples=60, deadline=None)
@given(
    skills=st.lists(_NAMES, max_size=8),
    commands=st.lists(_COMMANDS, max_size=6),
    calls=st.lists(_CALLS, max_size=6),
    turns=st.one_of(st.none(), st.integers(0, 500)),
    with_files=st.booleans(),
    treatment=st.sampled_from(["COMET", "CONTROL"]),
)
def test_scores_are_in_range_for_any_trajectory(
    skills: list[str],
    commands: list[str],
    calls: list[ToolCall],
    turns: int | None,
    with_files: bool,
    treatment: str,
) -> None:
    files = MemoryFiles(hotfix_files(), reverse=True) if with_files else None
    result = run(
        files, skills=tuple(skills), commands=tuple(commands), tool_calls=tuple(calls), turns=turns, treatment=treatment
    )
    for dim in result.dimensions:
        assert dim.score is None or 0.0 <= dim.score <= 1.0
    weighted = result.weighted_score
    assert weighted is None or 0.0 <= weighted <= 1.0


def test_the_run_files_of_a_real_engine_run_are_read_by_the_engine(tmp_path: Path) -> None:
    # Files written by `comet skill run`, not by hand: the rubric and the engine agree on their format.
    project = Project(tmp_path)
    change = tmp_path / FULL
    change.mkdir(parents=True)
    (change / "proposal.md").write_text(PROPOSAL)
    project.ok("run", str(EXAMPLE), "--change", change)
    files = HostFiles(tmp_path)
    d = dims(run(files, skills=FULL_SKILLS))["recovery_resilience"]
    assert "checkpoint=valid; trajectory=exists" in d.reason and "state=ok" in d.reason
    assert "pending=orphaned" in d.reason  # the run waits for the report of its first step
    state = json.loads((change / ".comet" / "run-state.json").read_text())
    (change / ".comet" / "run-state.json").write_text(json.dumps({**state, "currentStep": "publish"}))
    edited = dims(run(files, skills=FULL_SKILLS))["recovery_resilience"]
    assert "checkpoint=invalid (" in edited.reason and "stateDigest differs" in edited.reason


def test_a_trajectory_of_other_tooling_needs_json_lines_only(tmp_path: Path) -> None:
    """Without the engine's run-state.json beside it (the original Comet's layout), trajectory lines need
    not carry the engine's revisions; a line that is not JSON still fails."""
    plain = {**hotfix_files(), f"{HOTFIX}/.comet/trajectory.jsonl": '{"step": "open"}\n{"step": "build"}\n'}
    plain.pop(f"{HOTFIX}/.comet/run-state.json", None)
    assert "trajectory=exists" in dims(run(workspace(tmp_path / "a", plain)))["recovery_resilience"].reason
    broken = {**plain, f"{HOTFIX}/.comet/trajectory.jsonl": '{"step": "open"}\nnot json\n'}
    reason = dims(run(workspace(tmp_path / "b", broken)))["recovery_resilience"].reason
    assert "trajectory=corrupt (" in reason and "line 2 is not a JSON line" in reason
