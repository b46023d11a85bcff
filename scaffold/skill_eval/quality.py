"""The manifest's quality gates (``evaluation.qualityGates``) answered from a session's analysis.

Per task, over the trials of every treatment that is not a baseline (``baselineTreatments``, default
CONTROL) pooled, in the analysis set (trials excluded as noise left out):

* pass@1: passed / scored trials (with one attempt per trial, the unbiased pass@1 is the pass rate);
* weighted score: the mean rubric weighted score of the scored trials;
* instability gap: pass@1 minus the reliability floor (1 when every trial passed, else 0), so a task that
  passes sometimes has a gap equal to its pass rate, and one that always or never passes has none.

``minWeightedScore`` and ``minPassAt1`` are floors, ``maxInstabilityGap`` a ceiling, each in [0, 1]. A task
without a scored trial fails every floor set (a gate cannot vouch for trials it did not see). The
``gates`` expressions are the ``--gate`` grammar and are answered by scaffold.reports.gates with the
session's other gates; this module only carries their results into the same JSON file.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from scaffold.reports.gates import GateResult
from scaffold.reports.model import Analysis
from scaffold.skill_eval.manifest import QualityGates

__all__ = ["QUALITY_FILE", "QualityResult", "TaskQuality", "assess", "quality_json", "quality_markdown"]

QUALITY_FILE = "quality-gates.json"
SCHEMA = "comet.eval.quality-gates.v1"


@dataclass(frozen=True, slots=True)
class TaskQuality:
    task: str
    trials: int
    """Scored trials of the assessed treatments."""
    pass_at_1: float
    weighted_score: float
    instability_gap: float


@dataclass(frozen=True, slots=True)
class QualityResult:
    treatments: tuple[str, ...]
    """The treatments assessed (the non-baseline ones)."""
    tasks: tuple[TaskQuality, ...]
    failures: tuple[str, ...]
    gates: tuple[GateResult, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures and all(result.passed for result in self.gates)


def assess(
    gates: QualityGates,
    analysis: Analysis,
    baseline_treatments: Collection[str],
    gate_results: Sequence[GateResult] = (),
) -> QualityResult:
    """The per-task floors of *gates* over *analysis* (see the module docstring), with *gate_results* (the
    manifest's ``gates`` expressions, already evaluated) carried along."""
    assessed = tuple(t for t in analysis.treatments if t not in baseline_treatments)
    failures: list[str] = []
    floors = gates.min_weighted_score, gates.min_pass_at_1, gates.max_instability_gap
    if not assessed and any(value is not None for value in floors):
        failures.append(
            "no treatment left to assess: every treatment of the run is a baseline ("
            + ", ".join(sorted(baseline_treatments))
            + ")"
        )
    tasks: list[TaskQuality] = []
    for task in analysis.tasks if assessed else ():
        cells = [analysis.cells[(task, t)] for t in assessed if (task, t) in analysis.cells]
        scored = sum(cell.scored for cell in cells)
        passed = sum(cell.passed for cell in cells)
        with_score = [
            (cell.mean_score, cell.scored) for cell in cells if cell.scored and not math.isnan(cell.mean_score)
        ]
        weight = sum(n for _, n in with_score)
        score = sum(mean * n for mean, n in with_score) / weight if weight else math.nan
        rate = passed / scored if scored else math.nan
        floor = 1.0 if scored and passed == scored else 0.0
        gap = rate - floor if scored else math.nan
        tasks.append(TaskQuality(task, scored, rate, score, gap))
        if gates.min_pass_at_1 is not None:
            if not scored:
                failures.append(f"{task}: no scored trial, so pass@1 cannot reach {gates.min_pass_at_1:g}")
            elif rate < gates.min_pass_at_1 - 1e-9:
                failures.append(f"{task}: pass@1 {rate:.3g} is below the required {gates.min_pass_at_1:g}")
        if gates.min_weighted_score is not None:
            if math.isnan(score):
                failures.append(f"{task}: no trial reported a weighted score (required {gates.min_weighted_score:g})")
            elif score < gates.min_weighted_score - 1e-9:
                failures.append(
                    f"{task}: weighted score {score:.3g} is below the required {gates.min_weighted_score:g}"
                )
        if gates.max_instability_gap is not None:
            if not scored:
                failures.append(f"{task}: no scored trial, so the instability gap is unknown")
            elif gap > gates.max_instability_gap + 1e-9:
                failures.append(f"{task}: instability gap {gap:.3g} exceeds the allowed {gates.max_instability_gap:g}")
    return QualityResult(assessed, tuple(tasks), tuple(failures), tuple(gate_results))


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


def quality_json(gates: QualityGates, result: QualityResult) -> dict[str, Any]:
    """The content of quality-gates.json."""
    return {
        "schema": SCHEMA,
        "passed": result.passed,
        "required": {
            "min_weighted_score": gates.min_weighted_score,
            "min_pass_at_1": gates.min_pass_at_1,
            "max_instability_gap": gates.max_instability_gap,
            "gates": list(gates.gates),
        },
        "treatments": list(result.treatments),
        "tasks": [
            {
                "task": t.task,
                "trials": t.trials,
                "pass_at_1": _number(t.pass_at_1),
                "weighted_score": _number(t.weighted_score),
                "instability_gap": _number(t.instability_gap),
            }
            for t in result.tasks
        ],
        "gates": [{"expression": r.gate.expression, "passed": r.passed, "message": r.message} for r in result.gates],
        "failures": list(result.failures),
    }


def quality_markdown(result: QualityResult) -> str:
    """The section summary.md shows: the verdict, each failure, each gate."""
    lines = ["## Quality gates (eval.yaml)", ""]
    lines.append(
        f"**{'Passed' if result.passed else 'Failed'}** over {', '.join(result.treatments) or 'no treatment'}."
    )
    lines.append("")
    if result.tasks:
        lines += ["| task | trials | pass@1 | weighted score | instability gap |", "|---|---|---|---|---|"]
        for t in result.tasks:
            cells = [_shown(t.pass_at_1), _shown(t.weighted_score), _shown(t.instability_gap)]
            lines.append(f"| {t.task} | {t.trials} | " + " | ".join(cells) + " |")
        lines.append("")
    for failure in result.failures:
        lines.append(f"- FAIL {failure}")
    for gate in result.gates:
        lines.append(f"- {'PASS' if gate.passed else 'FAIL'} gate `{gate.gate.expression}`: {gate.message}")
    return "\n".join(lines).rstrip() + "\n"


def _shown(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"
