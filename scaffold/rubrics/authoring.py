"""The authoring-skill rubric: 11 dimensions for a task whose agent writes a skill package.

Four dimensions are the generic rubric's own (completion, skill_invocation, artifact_presence,
safety_boundary, with this profile's weights); the others read the package the agent generated, at the
task's ``skill_package_path`` output, through the workspace's files: its SKILL.md guidance, the
resolved-skill evidence, the engine contract (``comet/*.yaml`` validated by comet_engine), the workflow
route, the authoring lanes, the review gate and the review readiness. The weights sum to 12.8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from comet_engine.errors import SkillPackageError
from comet_engine.skills.package import load_package_texts
from scaffold.errors import CometError
from scaffold.rubrics import JUDGE_SOURCE, Dimension, RubricInput, RubricResult, WorkspaceFiles, generic

__all__ = ["PACKAGE_OUTPUT", "REQUIRED_LANES", "WEIGHTS", "score"]

WEIGHTS = {
    "completion": 1.5,
    "skill_invocation": 1.0,
    "artifact_presence": 1.0,
    "generated_package": 1.4,
    "resolved_skill_evidence": 1.2,
    "engine_contract": 1.2,
    "workflow_route_conformance": 1.5,
    "authoring_lanes": 1.2,
    "review_gate": 0.8,
    "review_readiness": 0.8,
    "safety_boundary": 1.2,
}
PACKAGE_OUTPUT = "skill_package_path"
REQUIRED_LANES = ("skill-core", "script-contract", "reference", "pause-points", "eval", "skill-review")
_FROM_GENERIC = ("completion", "skill_invocation", "artifact_presence", "safety_boundary")
_PACKAGE_DIMS = (
    "generated_package",
    "resolved_skill_evidence",
    "engine_contract",
    "workflow_route_conformance",
    "authoring_lanes",
    "review_gate",
)
_ENGINE_FILES = ("skill.yaml", "guardrails.yaml", "checks.yaml", "eval.yaml")
_ROUTE_GUIDANCE = re.compile(r"Workflow Nodes|工作流节点|workflow route|route", re.IGNORECASE)
_DECISION_GUIDANCE = re.compile(r"用户停顿点|decision point|stop", re.IGNORECASE)
_RECOVERY_GUIDANCE = re.compile(r"workflow-guard|workflow-state|恢复")
# "通过" alone would also match "未通过" (not passed): a negated pass is no pass.
_REVIEW_PASSED = re.compile(r"Review passed|(?<![未不没])(?:审查)?通过", re.IGNORECASE)


def score(data: RubricInput) -> RubricResult:
    base = generic.score(data)
    by_name = {d.name: d for d in base.dimensions if d.source is None}
    dims: dict[str, Dimension] = {
        name: Dimension(name, WEIGHTS[name], by_name[name].score, by_name[name].reason) for name in _FROM_GENERIC
    }
    failures: list[str] = []
    package = _package(data)
    if isinstance(package, str):
        applies = data.files is not None
        for name in _PACKAGE_DIMS:
            dims[name] = _dim(name, 0.0 if applies else None, package)
        if applies:
            failures.append(package)
    else:
        for name, check in _CHECKS.items():
            outcome = check(package)
            dims[name] = _dim(name, outcome.value, outcome.reason)
            failures.extend(outcome.failures)
    dims["review_readiness"] = (
        _dim("review_readiness", 1.0, "no hard validation failures")
        if not base.hard_failures
        else _dim("review_readiness", 0.0, "hard failures present")
    )
    ordered = tuple(dims[name] for name in WEIGHTS)
    # Judge scores the generic rubric carries stay beside the rule scores (the original dropped them).
    judged = tuple(d for d in base.dimensions if d.source == JUDGE_SOURCE)
    return RubricResult("authoring-skill", ordered + judged, (*base.hard_failures, *failures))


def _dim(name: str, value: float | None, reason: str) -> Dimension:
    return Dimension(name, WEIGHTS[name], value, reason)


# --- the package ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Package:
    """The generated package as the checks see it: its folder (workspace-relative) and the workspace."""

    path: str
    files: WorkspaceFiles
    outputs: Mapping[str, str]

    def rel(self, name: str) -> str:
        return name if self.path == "." else f"{self.path}/{name}"

    def read(self, name: str) -> str | None:
        return _read(self.files, self.rel(name))

    @property
    def parent(self) -> str:
        """Where sibling skills (the workflow's node skills) live; the workspace for a package at its root."""
        parent = PurePosixPath(self.path).parent.as_posix()
        return "." if self.path == "." else parent

    def json(self, name: str) -> Any:
        text = self.read(name)
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return None


def _read(files: WorkspaceFiles, rel: str) -> str | None:
    try:
        return files.read_text(rel)
    except CometError:  # a path the agent pointed out of the workspace: nothing there to score
        return None


def _package(data: RubricInput) -> _Package | str:
    """The package, or why there is none (the reason every package dimension then carries)."""
    if data.files is None:
        return "N/A: no workspace to read the generated package from"
    raw = data.outputs.get(PACKAGE_OUTPUT, "").strip()
    if not raw:
        return f"{PACKAGE_OUTPUT} missing"
    path = PurePosixPath(raw.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        return f"{PACKAGE_OUTPUT} must be a path inside the workspace, relative to it (got {raw!r})"
    return _Package(path.as_posix(), data.files, data.outputs)


@dataclass(frozen=True, slots=True)
class _Outcome:
    value: float
    reason: str
    failures: Sequence[str] = field(default=())

    @staticmethod
    def of(checks: Sequence[tuple[bool, str | None]], reason: str) -> _Outcome:
        """Share of *checks* passed; the failure text of each that failed (None: counted, not reported)."""
        failed = [text for ok, text in checks if not ok and text]
        return _Outcome(sum(ok for ok, _ in checks) / len(checks), reason, failed)


def _generated_package(pkg: _Package) -> _Outcome:
    text = pkg.read("SKILL.md")
    if text is None:
        return _Outcome(0.0, "SKILL.md missing", ["SKILL.md missing"])
    checks = [
        (bool(_ROUTE_GUIDANCE.search(text)), "workflow route guidance missing"),
        (bool(_DECISION_GUIDANCE.search(text)), "decision-point guidance missing"),
        (
            "reference/workflow-protocol.json" in text and "reference/resolved-skills.json" in text,
            "workflow and resolved-skill references missing",
        ),
        (bool(_RECOVERY_GUIDANCE.search(text)), "workflow guard or recovery guidance missing"),
    ]
    passed = sum(ok for ok, _ in checks)
    return _Outcome.of(checks, f"{passed}/4 package checks passed")


def _resolved_skill_evidence(pkg: _Package) -> _Outcome:
    if pkg.read("reference/resolved-skills.json") is None:
        return _Outcome(0.0, "resolved-skills.json missing", ["resolved-skills.json missing"])
    data = pkg.json("reference/resolved-skills.json")
    if not isinstance(data, dict):
        return _Outcome(0.0, "resolved-skills.json invalid", ["resolved-skills.json invalid"])
    summaries = data.get("sourceSummaries")
    if not isinstance(summaries, list) or not summaries:
        return _Outcome(0.0, "sourceSummaries empty", ["sourceSummaries empty"])
    return _Outcome(1.0, f"{len(summaries)} source summaries")


def _engine_contract(pkg: _Package) -> _Outcome:
    present = {name: pkg.read(f"comet/{name}") is not None for name in _ENGINE_FILES}
    legacy = pkg.read("comet/evals.yaml") is not None
    if not any(present.values()) and not legacy and not pkg.files.glob(pkg.rel("comet")):
        return _Outcome(1.0, "Engine disabled for lightweight package")
    checks: list[tuple[bool, str | None]] = [(ok, f"comet/{name} missing") for name, ok in present.items()]
    checks.append((not legacy, "legacy evals.yaml present"))
    # Existence is not the contract: the engine loads and validates the package as `comet skill` would.
    if present["skill.yaml"]:
        try:
            load_package_texts(pkg.read, label=pkg.path)
            engine = "valid"
            checks.append((True, None))
        except SkillPackageError as exc:
            engine = f"rejected, {len(exc.problems)} problem(s): {exc.problems[0]}"
            checks.append((False, f"comet engine rejected the package: {exc.problems[0]}"))
    else:
        engine = "not loaded without comet/skill.yaml"
        checks.append((False, None))  # the missing skill.yaml is the failure already reported
    return _Outcome.of(
        checks, f"{sum(present.values())}/4 engine files present; legacy_evals={legacy}; engine {engine}"
    )


def _names(raw: str | None) -> list[str] | None:
    """An output holding a list of names: a JSON array of strings, or names separated by commas."""
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return None
        return [str(x) for x in data] if isinstance(data, list) else None
    return [part.strip() for part in text.split(",") if part.strip()]


def _slug(value: object, default: str) -> str:
    text = re.sub(r"[^a-z0-9._-]+", "-", str(value or "").lower()).strip("-")
    return text or default


def _workflow_route_conformance(pkg: _Package) -> _Outcome:
    protocol = pkg.json("reference/workflow-protocol.json")
    nodes = protocol.get("nodes") if isinstance(protocol, dict) else None
    if not isinstance(protocol, dict) or not isinstance(nodes, list):
        return _Outcome(0.0, "workflow-protocol.json missing or invalid", ["workflow-protocol.json missing or invalid"])
    route = [str(node["id"]) for node in nodes if isinstance(node, dict) and "id" in node and not node.get("disabled")]
    expected = _names(pkg.outputs.get("route_conformance_expected_node_order")) or route
    if not expected:
        return _Outcome(0.0, "workflow route missing", ["workflow route missing"])
    workflow = _slug(protocol.get("name"), "workflow")
    skills = _names(pkg.outputs.get("generated_node_skills")) or [f"{workflow}-{_slug(n, 'node')}" for n in route]
    base = "" if pkg.parent == "." else f"{pkg.parent}/"
    missing = [s for s in skills if _read(pkg.files, f"{base}{s}/SKILL.md") is None]
    manifest = pkg.read("comet/eval.yaml")
    covered = manifest is None or all(t in manifest for t in [*route, *skills, "workflow-route-conformance"])
    checks = [
        (route == expected, f"workflow route mismatch: expected {expected}, got {route}"),
        (not missing, "internal Node Skill missing: " + ", ".join(missing)),
        (covered, "comet/eval.yaml missing workflow-route-conformance route entries"),
    ]
    passed = sum(ok for ok, _ in checks)
    return _Outcome.of(checks, f"route={len(route)} node(s) checks={passed}/3")


def _lanes(pkg: _Package) -> dict[str, Any] | None:
    data = pkg.json("reference/authoring-lanes.json")
    return data if isinstance(data, dict) else None


def _review_passed(lanes: Mapping[str, Any] | None) -> bool:
    review = lanes.get("review") if lanes else None
    return isinstance(review, dict) and review.get("passed") is True


def _authoring_lanes(pkg: _Package) -> _Outcome:
    lanes = _lanes(pkg)
    if lanes is None or not isinstance(lanes.get("lanes"), list):
        return _Outcome(0.0, "authoring-lanes.json missing or invalid", ["authoring-lanes.json missing or invalid"])
    found = {str(item.get("lane")) for item in lanes["lanes"] if isinstance(item, dict)}
    missing = [lane for lane in REQUIRED_LANES if lane not in found]
    passed = _review_passed(lanes)
    checks = [
        (not missing, "authoring lanes missing: " + ", ".join(missing)),
        (passed, "authoring-lanes review did not pass"),
    ]
    return _Outcome.of(checks, f"lanes={len(found)} review_passed={passed}")


def _review_gate(pkg: _Package) -> _Outcome:
    text = pkg.read("reference/skill-review.md")
    if text is None:
        return _Outcome(0.0, "skill-review.md missing", ["skill-review.md missing"])
    lanes = _lanes(pkg)
    review = lanes.get("review") if lanes else None
    blocking = review.get("blockingFindings") if isinstance(review, dict) else None
    count = len(blocking) if isinstance(blocking, list) else 0
    checks: list[tuple[bool, str | None]] = [
        (bool(_REVIEW_PASSED.search(text)), "skill-review.md does not report a passed review"),
        (_review_passed(lanes), None),  # reported by authoring_lanes already
        (count == 0, f"blocking findings present: {count}"),
    ]
    passed = sum(ok for ok, _ in checks)
    return _Outcome.of(checks, f"review_checks={passed}/3")


_CHECKS: dict[str, Callable[[_Package], _Outcome]] = {
    "generated_package": _generated_package,
    "resolved_skill_evidence": _resolved_skill_evidence,
    "engine_contract": _engine_contract,
    "workflow_route_conformance": _workflow_route_conformance,
    "authoring_lanes": _authoring_lanes,
    "review_gate": _review_gate,
}
