"""Runtime checks: conditions the engine verifies against a run's state, each PASS or FAIL with evidence.

Two types (as in the original Comet engine): ``artifact_exists`` (the artifact is in the run's artifacts) and
``state_equals`` (a field of the run state, dotted for nested objects, equals a value). Three scopes:
``step`` (after each recorded outcome; a check may name the ``step`` it belongs to), ``completion`` (when
the run completes) and ``progress`` (on demand). Evaluation is pure: it reads the state and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CHECK_SCOPES", "CHECK_TYPES", "Check", "CheckResult", "evaluate"]

CHECK_TYPES = ("artifact_exists", "state_equals")
CHECK_SCOPES = ("step", "completion", "progress")
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class Check:
    """One runtime check. ``field``/``equals`` for ``state_equals``, ``artifact`` for ``artifact_exists``."""

    id: str
    scope: str
    type: str
    field: str | None = None
    equals: Any = None
    artifact: str | None = None
    step: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "scope": self.scope, "type": self.type}
        if self.type == "state_equals":
            out |= {"field": self.field, "equals": self.equals}
        else:
            out["artifact"] = self.artifact
        if self.step is not None:
            out["step"] = self.step
        return out

    def problems(self) -> list[str]:
        """What is wrong with this check's declaration (empty when it is usable)."""
        where = f"check {self.id!r}"
        out = []
        if not self.id:
            out.append("a check has an empty id: give every check a unique id")
        if self.scope not in CHECK_SCOPES:
            out.append(f"{where}: scope {self.scope!r} is not one of {', '.join(CHECK_SCOPES)}")
        if self.type not in CHECK_TYPES:
            out.append(f"{where}: type {self.type!r} is not one of {', '.join(CHECK_TYPES)}")
        if self.type == "state_equals" and not self.field:
            out.append(f"{where}: state_equals needs a 'field' (a run-state field, dotted for nested ones)")
        if self.type == "artifact_exists" and not self.artifact:
            out.append(f"{where}: artifact_exists needs an 'artifact' (the name of an artifact)")
        return out


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one check: ``status`` is ``PASS`` or ``FAIL``; ``evidence`` says what was seen."""

    id: str
    scope: str
    type: str
    status: str
    evidence: str

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "scope": self.scope, "type": self.type, "status": self.status, "evidence": self.evidence}


def evaluate(
    checks: Iterable[Check], state: Mapping[str, Any], scope: str, *, step: str | None = None
) -> list[CheckResult]:
    """Evaluate the checks of *scope* against *state*; for scope ``step``, only those of *step* (or of none)."""
    results = []
    for check in checks:
        if check.scope != scope or (scope == "step" and check.step not in (None, step)):
            continue
        results.append(_one(check, state))
    return results


def _one(check: Check, state: Mapping[str, Any]) -> CheckResult:
    if check.type == "artifact_exists":
        artifacts = state.get("artifacts") or {}
        ok = check.artifact in artifacts
        evidence = f"artifact {check.artifact!r} " + ("is recorded" if ok else "is not among the run's artifacts")
    else:
        actual = _lookup(state, check.field or "")
        # True == 1 in Python; a check that expects a flag must not pass on a count, nor the reverse.
        ok = (
            actual is not _ABSENT
            and actual == check.equals
            and isinstance(actual, bool) == isinstance(check.equals, bool)
        )
        seen = "absent" if actual is _ABSENT else repr(actual)
        evidence = f"{check.field} is {seen}; expected {check.equals!r}"
    return CheckResult(check.id, check.scope, check.type, "PASS" if ok else "FAIL", evidence)


def _lookup(state: Mapping[str, Any], dotted: str) -> Any:
    value: Any = state
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value
