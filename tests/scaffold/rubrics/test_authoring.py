"""The authoring-skill rubric on real package folders: a complete package, and each part missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from scaffold.catalog.tasks import load_task
from scaffold.rubrics import JUDGE_SOURCE, Dimension, RubricInput, RubricResult, authoring
from scaffold.rubrics.profiles import get_profile
from scaffold.trajectory import Trajectory
from scaffold.validation.results import ValidationCheck, ValidationOutcome
from scaffold.workspaces.files import HostFiles
from tests.support.factories import TaskFactory

PKG = "generated-skill"
NODES = ("collect", "draft")
NODE_SKILLS = tuple(f"release-flow-{n}" for n in NODES)

SKILL_MD = """---
name: release-flow
---
# Release flow

## Workflow Nodes
Follow the workflow route in reference/workflow-protocol.json; the skills it resolved are in
reference/resolved-skills.json.

## Pauses
At each decision point, stop and ask the user.

## Recovery
Read the workflow-state before resuming; the workflow-guard script checks each step.
"""

SKILL_YAML = {
    "apiVersion": "comet/v1alpha1",
    "kind": "Skill",
    "metadata": {"name": "release-flow", "version": "1"},
    "goal": {"statement": "write the release notes"},
    "orchestration": {
        "mode": "deterministic",
        "entry": "collect",
        "steps": [
            {"id": "collect", "action": {"type": "invoke_skill", "ref": NODE_SKILLS[0]}, "next": "draft"},
            {"id": "draft", "action": {"type": "invoke_skill", "ref": NODE_SKILLS[1]}},
        ],
    },
    "skills": list(NODE_SKILLS),
}
EVAL_YAML = (
    "# workflow-route-conformance: the route the package declares\n"
    f"expectedNodeOrder: [{', '.join(NODES)}]\n"
    f"nodeSkills: [{', '.join(NODE_SKILLS)}]\n"
)


def complete_package(root: Path) -> None:
    """Every part the rubric looks for, in a workspace at *root*."""
    files = {
        f"{PKG}/SKILL.md": SKILL_MD,
        f"{PKG}/comet/skill.yaml": yaml.safe_dump(SKILL_YAML, sort_keys=False),
        f"{PKG}/comet/guardrails.yaml": yaml.safe_dump({"maxIterations": 10}),
        f"{PKG}/comet/checks.yaml": yaml.safe_dump({"runtime": []}),
        f"{PKG}/comet/eval.yaml": EVAL_YAML,
        f"{PKG}/reference/resolved-skills.json": json.dumps({"sourceSummaries": [{"skill": "notes"}]}),
        f"{PKG}/reference/workflow-protocol.json": json.dumps(
            {"name": "Release Flow", "nodes": [{"id": n} for n in NODES] + [{"id": "old", "disabled": True}]}
        ),
        f"{PKG}/reference/authoring-lanes.json": json.dumps(
            {
                "lanes": [{"lane": lane} for lane in authoring.REQUIRED_LANES],
                "review": {"passed": True, "blockingFindings": []},
            }
        ),
        f"{PKG}/reference/skill-review.md": "# Review\n\nReview passed: no blocking finding.\n",
        **{f"{skill}/SKILL.md": f"---\nname: {skill}\n---\nOne node.\n" for skill in NODE_SKILLS},
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def rubric(
    factory: TaskFactory, workspace: Path, *, outputs: dict[str, str] | None = None, checks: bool = True
) -> RubricResult:
    task = load_task(factory.task("author"))
    validation = ValidationOutcome((ValidationCheck("package written", "passed" if checks else "failed", "s"),))
    data = RubricInput(
        task,
        (),
        True,
        Trajectory(agent="claude-code", turns=3),
        validation,
        files=HostFiles(workspace),
        outputs={"skill_package_path": PKG} if outputs is None else outputs,
    )
    return authoring.score(data)


def scores(result: RubricResult) -> dict[str, float | None]:
    return {d.name: d.score for d in result.dimensions}


def test_weights_in_order_sum_to_12_8() -> None:
    assert list(authoring.WEIGHTS) == [
        "completion",
        "skill_invocation",
        "artifact_presence",
        "generated_package",
        "resolved_skill_evidence",
        "engine_contract",
        "workflow_route_conformance",
        "authoring_lanes",
        "review_gate",
        "review_readiness",
        "safety_boundary",
    ]
    assert sum(authoring.WEIGHTS.values()) == pytest.approx(12.8)
    profile = get_profile("authoring-skill")
    assert profile.weights == tuple(authoring.WEIGHTS.items())
    assert (profile.interaction, profile.max_turns) == ("auto_user", 8)
    assert profile.simulator_prompt


def test_a_complete_package_scores_every_dimension_one(factory: TaskFactory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    result = rubric(factory, ws)
    assert result.profile == "authoring-skill"
    assert [d.name for d in result.dimensions] == list(authoring.WEIGHTS)
    applicable = {k: v for k, v in scores(result).items() if v is not None}
    # skill_invocation and artifact_presence are N/A: the task requires neither (the generic rule).
    assert set(scores(result)) - set(applicable) == {"skill_invocation", "artifact_presence"}
    assert set(applicable.values()) == {1.0}, [(d.name, d.reason) for d in result.dimensions]
    assert result.hard_failures == ()
    assert result.weighted_score == 1.0
    engine = next(d for d in result.dimensions if d.name == "engine_contract")
    assert engine.reason == "4/4 engine files present; legacy_evals=False; engine valid"


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda ws: (ws / rel).unlink()


def _write(rel: str, text: str) -> Callable[[Path], None]:
    return lambda ws: (ws / rel).write_text(text, encoding="utf-8")


def _edit_json(rel: str, change: Callable[[dict], None]) -> Callable[[Path], None]:  # type: ignore[type-arg]
    def apply(ws: Path) -> None:
        data = json.loads((ws / rel).read_text())
        change(data)
        (ws / rel).write_text(json.dumps(data))

    return apply


LANES = f"{PKG}/reference/authoring-lanes.json"
MISSING_PARTS = {
    "SKILL.md": (_remove(f"{PKG}/SKILL.md"), "generated_package", "SKILL.md missing"),
    "route guidance": (
        _write(f"{PKG}/SKILL.md", SKILL_MD.replace("Workflow Nodes", "Nodes").replace("workflow route", "order")),
        "generated_package",
        "workflow route guidance missing",
    ),
    "decision guidance": (
        _write(f"{PKG}/SKILL.md", SKILL_MD.replace("decision point, stop", "node, pause")),
        "generated_package",
        "decision-point guidance missing",
    ),
    "references": (
        _write(f"{PKG}/SKILL.md", SKILL_MD.replace("reference/resolved-skills.json", "a file")),
        "generated_package",
        "workflow and resolved-skill references missing",
    ),
    "recovery guidance": (
        _write(f"{PKG}/SKILL.md", SKILL_MD.replace("workflow-state", "state").replace("workflow-guard", "guard")),
        "generated_package",
        "workflow guard or recovery guidance missing",
    ),
    "resolved-skills.json": (
        _remove(f"{PKG}/reference/resolved-skills.json"),
        "resolved_skill_evidence",
        "resolved-skills.json missing",
    ),
    "resolved-skills.json valid": (
        _write(f"{PKG}/reference/resolved-skills.json", "{not json"),
        "resolved_skill_evidence",
        "resolved-skills.json invalid",
    ),
    "source summaries": (
        _write(f"{PKG}/reference/resolved-skills.json", '{"sourceSummaries": []}'),
        "resolved_skill_evidence",
        "sourceSummaries empty",
    ),
    "skill.yaml": (_remove(f"{PKG}/comet/skill.yaml"), "engine_contract", "comet/skill.yaml missing"),
    "guardrails.yaml": (_remove(f"{PKG}/comet/guardrails.yaml"), "engine_contract", "comet/guardrails.yaml missing"),
    "checks.yaml": (_remove(f"{PKG}/comet/checks.yaml"), "engine_contract", "comet/checks.yaml missing"),
    "eval.yaml": (_remove(f"{PKG}/comet/eval.yaml"), "engine_contract", "comet/eval.yaml missing"),
    "no legacy evals.yaml": (
        _write(f"{PKG}/comet/evals.yaml", "runtime: []\n"),
        "engine_contract",
        "legacy evals.yaml present",
    ),
    "a valid skill.yaml": (
        # Present, but a step names a skill that is not declared: only the engine's validation sees it.
        _write(f"{PKG}/comet/skill.yaml", yaml.safe_dump({**SKILL_YAML, "skills": [NODE_SKILLS[0]]})),
        "engine_contract",
        "comet engine rejected the package: generated-skill/comet/skill.yaml: "
        "orchestration.steps[1](draft).action.ref: 'release-flow-draft' is not declared; add it to skills: "
        "in skill.yaml",
    ),
    "workflow-protocol.json": (
        _remove(f"{PKG}/reference/workflow-protocol.json"),
        "workflow_route_conformance",
        "workflow-protocol.json missing or invalid",
    ),
    "a node skill": (
        _remove(f"{NODE_SKILLS[1]}/SKILL.md"),
        "workflow_route_conformance",
        "internal Node Skill missing: release-flow-draft",
    ),
    "route entries in eval.yaml": (
        _write(f"{PKG}/comet/eval.yaml", EVAL_YAML.replace("workflow-route-conformance", "route")),
        "workflow_route_conformance",
        "comet/eval.yaml missing workflow-route-conformance route entries",
    ),
    "authoring-lanes.json": (
        _remove(LANES),
        "authoring_lanes",
        "authoring-lanes.json missing or invalid",
    ),
    "a lane": (
        _edit_json(LANES, lambda d: d["lanes"].pop()),
        "authoring_lanes",
        "authoring lanes missing: skill-review",
    ),
    "the lanes' review": (
        _edit_json(LANES, lambda d: d["review"].update(passed=False)),
        "authoring_lanes",
        "authoring-lanes review did not pass",
    ),
    "skill-review.md": (_remove(f"{PKG}/reference/skill-review.md"), "review_gate", "skill-review.md missing"),
    "a passed review": (
        _write(f"{PKG}/reference/skill-review.md", "# 审查\n\n审查未通过。\n"),
        "review_gate",
        "skill-review.md does not report a passed review",
    ),
    "no blocking finding": (
        _edit_json(LANES, lambda d: d["review"].update(blockingFindings=["unsafe script"])),
        "review_gate",
        "blocking findings present: 1",
    ),
}


@pytest.mark.parametrize("part", list(MISSING_PARTS))
def test_each_missing_part_lowers_its_dimension_and_fails(factory: TaskFactory, tmp_path: Path, part: str) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    damage, dimension, failure = MISSING_PARTS[part]
    damage(ws)
    result = rubric(factory, ws)
    assert failure in result.hard_failures, result.hard_failures
    assert scores(result)[dimension] is not None and scores(result)[dimension] < 1.0  # type: ignore[operator]


def test_without_a_package_path_every_package_dimension_is_zero(factory: TaskFactory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    result = rubric(factory, ws, outputs={})
    package_dims = [d for d in result.dimensions if d.name in authoring._PACKAGE_DIMS]
    assert {(d.score, d.reason) for d in package_dims} == {(0.0, "skill_package_path missing")}
    assert result.hard_failures == ("skill_package_path missing",)


@pytest.mark.parametrize("path", ["/abs/pkg", "../outside"])
def test_a_package_path_outside_the_workspace_is_a_failure(factory: TaskFactory, tmp_path: Path, path: str) -> None:
    result = rubric(factory, tmp_path, outputs={"skill_package_path": path})
    assert result.hard_failures == (
        f"skill_package_path must be a path inside the workspace, relative to it (got {path!r})",
    )


def test_a_lightweight_package_without_comet_passes_the_engine_contract(factory: TaskFactory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    for name in ("skill.yaml", "guardrails.yaml", "checks.yaml", "eval.yaml"):
        (ws / PKG / "comet" / name).unlink()
    (ws / PKG / "comet").rmdir()
    engine = next(d for d in rubric(factory, ws).dimensions if d.name == "engine_contract")
    assert (engine.score, engine.reason) == (1.0, "Engine disabled for lightweight package")


def test_route_order_and_node_skills_come_from_the_outputs(factory: TaskFactory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    outputs = {"skill_package_path": PKG, "route_conformance_expected_node_order": "draft, collect"}
    result = rubric(factory, ws, outputs=outputs)
    assert "workflow route mismatch: expected ['draft', 'collect'], got ['collect', 'draft']" in result.hard_failures
    outputs = {"skill_package_path": PKG, "generated_node_skills": '["release-flow-collect", "other-node"]'}
    assert "internal Node Skill missing: other-node" in rubric(factory, ws, outputs=outputs).hard_failures


def test_generic_failures_make_review_readiness_zero(factory: TaskFactory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    complete_package(ws)
    task = load_task(
        factory.task("needs", evaluation={"required_skills": ["comet-any"], "require_skill_invocation": True})
    )
    data = RubricInput(
        task,
        ("comet-any",),
        True,
        Trajectory(agent="claude-code"),
        ValidationOutcome((ValidationCheck("a", "passed", "s"),)),
        files=HostFiles(ws),
        outputs={"skill_package_path": PKG},
    )
    result = authoring.score(data)
    assert scores(result)["review_readiness"] == 0.0
    assert result.hard_failures == ("Required skill not invoked: comet-any",)


def test_judge_dimensions_of_the_generic_rubric_are_kept(
    factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.rubrics import generic

    real = generic.score
    judged = Dimension("task_completion", 1.0, 0.5, "half done", JUDGE_SOURCE)

    def with_judge(data: RubricInput) -> RubricResult:
        base = real(data)
        return RubricResult(base.profile, (*base.dimensions, judged), base.hard_failures)

    monkeypatch.setattr(generic, "score", with_judge)
    ws = tmp_path / "ws"
    complete_package(ws)
    result = rubric(factory, ws)
    assert result.dimensions[-1] == judged
    assert [d.name for d in result.dimensions[:-1]] == list(authoring.WEIGHTS)


def test_without_a_workspace_the_package_dimensions_are_na(factory: TaskFactory) -> None:
    task = load_task(factory.task("offline"))
    data = RubricInput(
        task, (), True, Trajectory(agent="oracle"), ValidationOutcome((ValidationCheck("a", "passed", "s"),))
    )
    result = authoring.score(data)
    assert all(scores(result)[name] is None for name in authoring._PACKAGE_DIMS)
    assert result.hard_failures == ()
