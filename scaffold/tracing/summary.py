"""What a tracing suite sends about a whole experiment: pass@k and pass^k per task and treatment, and the
gate results, built from the experiment's records (so the controller of a ``-n`` session, which ran no
trial itself, and a re-upload of an old experiment send the same).

Pure: plain data from records and gate results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scaffold.records import TrialRecord
from scaffold.reports.gates import GateResult
from scaffold.stats.passk import pass_at_k, pass_hat_k

__all__ = ["KS", "Aggregate", "ExperimentSummary", "experiment_summary"]

KS: Final = (1, 2, 5)
"""The ks reported, each where a task and treatment has at least k scored trials."""


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One task under one treatment: its scored trials (a verdict, not excluded as noise), passes, and
    pass@k / pass^k by k."""

    task: str
    treatment: str
    agent: str
    """The agent of its trials, or ``mixed``."""
    runs: int
    passed: int
    pass_at_k: dict[int, float]
    pass_power_k: dict[int, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "treatment": self.treatment,
            "agent": self.agent,
            "runs": self.runs,
            "passed": self.passed,
            "pass_at_k": {str(k): v for k, v in self.pass_at_k.items()},
            "pass_power_k": {str(k): v for k, v in self.pass_power_k.items()},
        }


@dataclass(frozen=True, slots=True)
class ExperimentSummary:
    experiment_id: str
    cases: int
    passed: int
    failed: int
    errors: int
    aggregates: tuple[Aggregate, ...]
    gates: tuple[GateResult, ...]
    quality_gates: bool | None
    """The eval.yaml quality gates' answer (quality-gates.json), None when there were none."""

    def inputs(self, suite: str) -> dict[str, Any]:
        return {"suite": suite, "experiment_id": self.experiment_id, "cases": self.cases}

    def outputs(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "aggregates": {f"{a.task}/{a.treatment}": a.to_json() for a in self.aggregates},
            "gates": [{"gate": g.gate.expression, "passed": g.passed, "message": g.message} for g in self.gates],
            "quality_gates": None if self.quality_gates is None else ("passed" if self.quality_gates else "failed"),
        }


def experiment_summary(
    experiment_id: str,
    records: Iterable[TrialRecord],
    gates: Sequence[GateResult] = (),
    quality_gates: bool | None = None,
) -> ExperimentSummary:
    """The summary of *records* (one experiment's): counts, per task and treatment the scored trials and
    pass@k, pass^k for k in KS up to their number (a k with fewer trials is left out, not zero)."""
    rows = list(records)
    groups: dict[tuple[str, str], list[TrialRecord]] = {}
    for record in rows:
        groups.setdefault((record.task, record.treatment), []).append(record)
    aggregates: list[Aggregate] = []
    for (task, treatment), group in sorted(groups.items()):
        scored = [r for r in group if r.verdict != "error" and r.noise.category != "excluded"]
        n, c = len(scored), sum(r.verdict == "passed" for r in scored)
        agents = {r.agent.name or "unknown" for r in group}
        at = {k: pass_at_k(n, c, k) for k in KS if k <= n}
        power = {k: pass_hat_k(n, c, k) for k in KS if k <= n}
        aggregates.append(
            Aggregate(
                task=task,
                treatment=treatment,
                agent=agents.pop() if len(agents) == 1 else "mixed",
                runs=n,
                passed=c,
                pass_at_k={k: v for k, v in at.items() if not math.isnan(v)},
                pass_power_k={k: v for k, v in power.items() if not math.isnan(v)},
            )
        )
    return ExperimentSummary(
        experiment_id=experiment_id,
        cases=len(rows),
        passed=sum(r.verdict == "passed" for r in rows),
        failed=sum(r.verdict == "failed" for r in rows),
        errors=sum(r.verdict == "error" for r in rows),
        aggregates=tuple(aggregates),
        gates=tuple(gates),
        quality_gates=quality_gates,
    )
