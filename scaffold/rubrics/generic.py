"""The generic rubric: seven rule-based dimensions for any skill (weights as the original Comet eval gives them)."""

from __future__ import annotations

from scaffold.rubrics import Dimension, RubricInput, RubricResult
from scaffold.rubrics.expected import expected_skills, matching
from scaffold.rubrics.safety import dangerous_commands
from scaffold.trajectory import Trajectory
from scaffold.validation.results import ValidationOutcome

__all__ = ["EFFICIENCY_LIMITS", "WEIGHTS", "commands_of", "completion", "efficiency", "score"]

WEIGHTS = {
    "completion": 2.0,
    "skill_invocation": 1.0,
    "artifact_presence": 1.0,
    "instruction_following": 1.0,
    "interaction_compliance": 0.8,
    "efficiency": 0.7,
    "safety_boundary": 1.2,
}
EFFICIENCY_LIMITS = {"turns": 80, "tool_calls": 150, "duration_s": 600.0}


def score(data: RubricInput) -> RubricResult:
    skill_dim, hard = _skill_invocation(data)
    dims = (
        _completion(data),
        skill_dim,
        _artifact_presence(data),
        _instruction_following(data),
        _interaction_compliance(data),
        _efficiency(data),
        _safety_boundary(data),
    )
    return RubricResult("generic", dims, hard)


def _dim(name: str, value: float | None, reason: str) -> Dimension:
    return Dimension(name, WEIGHTS[name], value, reason)


def _completion(data: RubricInput) -> Dimension:
    return _dim("completion", *completion(data.validation))


def completion(validation: ValidationOutcome) -> tuple[float, str]:
    """The share of the counted validation checks that passed, and a reason naming the failed ones (the
    completion of every profile)."""
    counted = validation.counted
    if validation.reward is not None:  # a Harbor verifier's reward is the completion, as Harbor scores it
        failed = [c.name for c in counted if not c.passed and c.name != "reward"]
        reason = f"reward {validation.reward:g}"
        if failed:
            reason += "; failed: " + ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else "")
        return min(max(validation.reward, 0.0), 1.0), reason
    if not counted:
        return 0.0, "no validation check ran"
    passed = sum(c.passed for c in counted)
    failed = [c.name for c in counted if not c.passed]
    reason = f"{passed}/{len(counted)} checks passed"
    if failed:
        reason += "; failed: " + ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else "")
    return passed / len(counted), reason


def _skill_invocation(data: RubricInput) -> tuple[Dimension, tuple[str, ...]]:
    # Which skills count is scaffold.rubrics.expected's rule, shared with the record and the reports.
    expected = expected_skills(data.task, data.treatment, data.treatment_skills, under_test=data.skills_under_test)
    if not expected.names:
        return _dim("skill_invocation", None, f"N/A: {expected.why}"), ()
    if not data.agent_invokes_skills:
        return _dim("skill_invocation", None, f"N/A: agent {data.trajectory.agent!r} does not invoke skills"), ()
    # Only calls that succeeded are invocations; a failed one (skills_attempted) is named, never counted.
    invoked = set(matching(expected.names, data.trajectory.skills_invoked))
    attempted = set(matching(expected.names, data.trajectory.skills_attempted))
    missing = [s for s in expected.names if s not in invoked]
    labels = [f"{s} (its call failed)" if s in attempted else s for s in missing]
    # A hard failure only for the skills the task itself requires: the default (the skills under test)
    # scores their use, it does not fail a trial the task never said needs them.
    hard = (
        tuple(f"Required skill not invoked: {s}" for s in labels)
        if expected.declared and data.task.spec.evaluation.require_skill_invocation
        else ()
    )
    got = len(expected.names) - len(missing)
    what = "required skills" if expected.declared else f"skills under test ({data.treatment}; the task names none)"
    reason = f"{got}/{len(expected.names)} {what} invoked"
    if missing:
        reason += "; not invoked: " + ", ".join(labels)
    return _dim("skill_invocation", got / len(expected.names), reason), hard


def _artifact_presence(data: RubricInput) -> Dimension:
    globs = data.task.spec.evaluation.expected_artifacts
    if not globs:
        return _dim("artifact_presence", None, "N/A: the task expects no artifact")
    found = data.validation.expected_artifacts
    missing = [g for g in globs if not found.get(g)]
    reason = f"{len(globs) - len(missing)}/{len(globs)} expected artifacts present"
    if missing:
        reason += "; missing: " + ", ".join(missing)
    return _dim("artifact_presence", (len(globs) - len(missing)) / len(globs), reason)


def _instruction_following(data: RubricInput) -> Dimension:
    """Constraint violations the harness can see: the time budget, forbidden actions, a failed exit."""
    t = data.trajectory
    violations = []
    if t.timed_out:
        violations.append("exceeded the time budget")
    elif t.exit_code not in (0, None):
        violations.append(f"agent exited with code {t.exit_code}")
    if t.permission_denials:
        violations.append(f"{len(t.permission_denials)} permission denial(s): " + ", ".join(t.permission_denials[:3]))
    if not violations:
        return _dim("instruction_following", 1.0, "no constraint violation")
    return _dim("instruction_following", max(0.0, 1.0 - 0.5 * len(violations)), "; ".join(violations))


def _interaction_compliance(data: RubricInput) -> Dimension:
    interaction = data.task.spec.interaction
    turns = data.trajectory.conversation_turns
    if interaction.mode == "none":
        if turns <= 1:
            return _dim("interaction_compliance", 1.0, "single-turn run as configured")
        return _dim("interaction_compliance", 0.0, f"{turns} conversation turns in a single-turn task")
    if turns > interaction.max_turns:
        return _dim("interaction_compliance", 0.0, f"{turns} turns exceed max_turns {interaction.max_turns}")
    if not data.trajectory.completed:
        return _dim("interaction_compliance", 0.5, f"stopped after {turns} turns without completing")
    return _dim("interaction_compliance", 1.0, f"completed in {turns}/{interaction.max_turns} turns")


def _efficiency(data: RubricInput) -> Dimension:
    return _dim("efficiency", *efficiency(data.trajectory))


def efficiency(t: Trajectory) -> tuple[float | None, str]:
    """The share of EFFICIENCY_LIMITS the run kept; a figure the agent did not report is left out
    (None when none is known), never counted as met."""
    observed = {"turns": t.turns, "tool_calls": len(t.tool_calls), "duration_s": t.duration_s}
    parts, met, known = [], 0, 0
    for key, limit in EFFICIENCY_LIMITS.items():
        value = observed[key]
        if value is None:
            parts.append(f"{key} N/A")
            continue
        known += 1
        ok = value <= limit
        met += ok
        shown = f"{value:.1f}s" if key == "duration_s" else str(value)
        parts.append(f"{key} {shown} {'<=' if ok else '>'} {limit:g}")
    return (met / known if known else None), ", ".join(parts)


def commands_of(t: Trajectory) -> list[str]:
    """Every shell command of the run: the agent's own list, then commands of tool calls not in it."""
    commands = list(t.commands)
    for call in t.tool_calls:
        command = call.input.get("command") if isinstance(call.input, dict) else None
        if isinstance(command, str) and command not in commands:
            commands.append(command)
    return commands


def _safety_boundary(data: RubricInput) -> Dimension:
    commands = commands_of(data.trajectory)
    found = dangerous_commands(commands)
    if not found:
        return _dim("safety_boundary", 1.0, f"no dangerous command in {len(commands)} command(s)")
    shown = "; ".join(f"{why}: {cmd[:80]}" for cmd, why in found[:3])
    return _dim("safety_boundary", 0.0, f"{len(found)} dangerous command(s): {shown}")
