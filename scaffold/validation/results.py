"""Checks and how a validation script's results are read. Pure: no processes, no files."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

__all__ = ["CheckStatus", "ValidationCheck", "ValidationOutcome", "parse_outputs", "parse_results"]

CheckStatus = Literal["passed", "failed", "skipped"]
_PASSED = {"passed", "pass", "ok", "success", "succeeded", "true"}
_FAILED = {"failed", "fail", "failure", "error", "errored", "false"}
_SKIPPED = {"skipped", "skip"}


class ValidationCheck(msgspec.Struct, frozen=True, gc=False):
    """One validation result, as trial records store it. ``source`` is ``artifact`` or ``script:<file>``."""

    name: str
    status: CheckStatus
    source: str
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True, slots=True)
class ValidationOutcome:
    """Every check of a trial, and what the expected-artifact globs matched (for the rubric)."""

    checks: tuple[ValidationCheck, ...] = ()
    expected_artifacts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    outputs: Mapping[str, str] = field(default_factory=dict)
    """The task's ``[evaluation] outputs`` with the ``outputs`` its validators reported over them (a later
    script's value over an earlier one's): what the profile's rubric reads (RubricInput.outputs)."""
    reward: float | None = None
    """A Harbor-format verifier's reward (``reward.txt``/``reward.json``): when set it decides, as in
    Harbor: at least 1 passes, a fraction is the completion score; the checks (ctrf tests) explain it."""

    @property
    def counted(self) -> tuple[ValidationCheck, ...]:
        """Checks that count toward the pass rate (skipped ones do not)."""
        return tuple(c for c in self.checks if c.status != "skipped")

    @property
    def pass_rate(self) -> float | None:
        if self.reward is not None:
            return min(max(self.reward, 0.0), 1.0)
        counted = self.counted
        return sum(c.passed for c in counted) / len(counted) if counted else None

    @property
    def all_passed(self) -> bool:
        if self.reward is not None:
            return self.reward >= 1.0
        counted = self.counted
        return bool(counted) and all(c.passed for c in counted)


def parse_results(results_json: str | None, stdout: str, source: str) -> list[ValidationCheck] | None:
    """Checks from ``_test_results.json`` text, else from the last JSON line of *stdout*.

    Returns None when neither holds a results object (the caller then judges by exit code).
    Malformed entries become failed checks that say what was wrong, never an exception.
    """
    if results_json is not None:
        try:
            data = json.loads(results_json)
        except json.JSONDecodeError as exc:
            return [ValidationCheck("_test_results.json", "failed", source, f"not valid JSON: {exc}")]
        checks = _from_object(data, source)
        if checks is not None:
            return checks
        return [
            ValidationCheck(
                "_test_results.json",
                "failed",
                source,
                'expected {"passed": [...], "failed": [...]} or {"checks": [...]}',
            )
        ]
    for data in _json_lines_last_first(stdout):
        checks = _from_object(data, source)
        if checks is not None:
            return checks
    return None


def parse_outputs(results_json: str | None, stdout: str, source: str) -> tuple[dict[str, str], list[ValidationCheck]]:
    """The ``outputs`` object (names to strings) of the results :func:`parse_results` reads, from the same
    object; and a failed check for each malformed entry, so a validator's mistake shows instead of
    silently leaving the task's value in place."""
    data = _results_object(results_json, stdout)
    if not isinstance(data, dict) or "outputs" not in data:
        return {}, []
    raw = data["outputs"]
    if not isinstance(raw, dict):
        return {}, [ValidationCheck("outputs", "failed", source, "'outputs' must be an object of strings")]
    outputs: dict[str, str] = {}
    problems: list[ValidationCheck] = []
    for key, value in raw.items():
        if isinstance(value, str):
            outputs[str(key)] = value
        else:
            problems.append(
                ValidationCheck(f"outputs.{key}", "failed", source, f"an output must be a string (got {value!r})")
            )
    return outputs, problems


def _results_object(results_json: str | None, stdout: str) -> Any:
    """The object parse_results reads checks from: the results file's, else the last results line's."""
    if results_json is not None:
        try:
            return json.loads(results_json)
        except json.JSONDecodeError:
            return None
    for data in _json_lines_last_first(stdout):
        if isinstance(data, dict) and ("checks" in data or "passed" in data or "failed" in data):
            return data
    return None


def _from_object(data: Any, source: str) -> list[ValidationCheck] | None:
    if not isinstance(data, dict):
        return None
    if "checks" in data:
        items = data["checks"]
        if not isinstance(items, list):
            return [ValidationCheck("checks", "failed", source, "'checks' must be a list")]
        return [_from_entry(i, item, source) for i, item in enumerate(items)]
    if "passed" in data or "failed" in data:
        out: list[ValidationCheck] = []
        for key, status in (("passed", "passed"), ("failed", "failed"), ("skipped", "skipped")):
            values = data.get(key, [])
            if not isinstance(values, list):
                out.append(ValidationCheck(key, "failed", source, f"'{key}' must be a list"))
                continue
            for value in values:
                name, reason = _name_reason(value)
                out.append(ValidationCheck(name, status, source, reason))  # type: ignore[arg-type]
        return out
    return None


def _name_reason(value: Any) -> tuple[str, str]:
    if isinstance(value, dict):
        return str(value.get("name", value)), str(value.get("reason", value.get("message", "")) or "")
    return str(value), ""


def _from_entry(index: int, item: Any, source: str) -> ValidationCheck:
    # "check" is the original Comet eval's validators' word for the name.
    if not isinstance(item, dict) or ("name" not in item and "check" not in item):
        return ValidationCheck(
            f"checks[{index}]", "failed", source, f"a check needs a name and a status (got {item!r})"
        )
    name = str(item["name"] if "name" in item else item["check"])
    raw = item.get("status", item.get("passed"))
    reason = str(item.get("reason") or item.get("message") or "")
    text = str(raw).strip().lower()
    if raw is True or text in _PASSED:
        return ValidationCheck(name, "passed", source, reason)
    if raw is False or text in _FAILED:
        return ValidationCheck(name, "failed", source, reason)
    if text in _SKIPPED:
        return ValidationCheck(name, "skipped", source, reason)
    return ValidationCheck(name, "failed", source, f"unknown status {raw!r}" + (f"; {reason}" if reason else ""))


def _json_lines_last_first(stdout: str) -> Iterator[Any]:
    """The JSON values of the output lines that hold a JSON object, the last line first (a script prints
    its results last)."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
