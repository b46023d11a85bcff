"""Quality gates for CI: small expressions checked against an ``Analysis`` (always its analysis set).

Grammar (keywords are case-insensitive, treatment names are not; NAME is letters, digits, ``.``, ``_``, ``-``)::

    gate       := comparison | threshold
    comparison := NAME "not worse than" NAME [margin] ["on" paired]   # non-inferiority
                | NAME "better than" NAME ["on" paired]              # a significant improvement
    margin     := "by more than" number ["points" | "%"]             # default: 5 points
    paired     := "pass rate" | "score"                              # default: pass rate
    threshold  := metric "of" NAME op number ["%"]
    metric     := "pass@" K | "pass^" K | "pass rate" | "score" | "cost" | "excluded"
    op         := ">=" | ">" | "<=" | "<" | "=="

Meanings
    A pass-rate comparison with the report's baseline follows the verdict (scaffold.reports.verdicts),
    scope, exclusion bounds and flagged trials included: a gate never passes what the verdict refuses.
    "better than" passes only on "improvement". "not worse than" is a non-inferiority test with a
    margin (``DEFAULT_MARGIN``, 5 points of pass rate, unless the gate says "by more than N points"):
    it passes only when the lower bound of the verdict's interval of the difference (treatment minus
    baseline, in the verdict's scope) is above minus the margin, and, when trials were excluded, so is
    the lower bound with the treatment's excluded trials counted as failures and the baseline's as
    passes; it fails on "regression", "Inconclusive due to data quality", "Insufficient clean data" and
    "not comparable". So a skill is "not worse" only when the data show that it costs less than the
    margin: no data, or too little to tell, is not evidence of no harm (with the absence-of-evidence
    rule it replaced, an outside simulation saw a skill costing 10 points pass 78% of the time at 20
    tasks x 5 trials). Other
    comparisons (on score, or against another treatment than the baseline) use the paired per-task
    test over tasks (sign-flip p and t interval) at the analysis's alpha, with the same margin rule.
    pass@K / pass^K (unbiased) / pass rate / score: the mean over tasks (task as the unit); "cost": mean
    USD per trial that reported one; "excluded": the share of the treatment's trials excluded as noise.
    Numbers may be written as fractions (0.8) or percentages (80%).

Insufficient data fails the gate. A gate exists to stop a bad change; passing it because the runs
were rate-limited away, or because a treatment did not run, would let exactly that through. So a
comparison without an answer in its scope (no task scored under both; for a comparison on score or
against another treatment than the baseline, fewer than 3 paired tasks), a metric that cannot be
computed (NaN, e.g. pass@5 with fewer than 5 trials of some task) and an unknown treatment all fail,
with the reason. So does a
comparison of treatments that are not comparable (they differ in more than the treatment: agent, model,
backend, ...; scaffold.reports.comparable), which only a report made with ``--allow-mixed`` can hold:
no difference between them can be credited to the treatment, for or against. Thresholds on one treatment
are still answered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from scaffold.errors import GateError
from scaffold.reports.comparable import mismatch
from scaffold.reports.model import Analysis, TreatmentReport, TreatmentVerdict
from scaffold.reports.verdicts import MIN_TASKS, label_of
from scaffold.stats import Insufficient, Metric, PairedComparison, compare_treatments, mean_over_tasks
from scaffold.stats.stratified import OnTasksComparison

__all__ = ["DEFAULT_MARGIN", "Gate", "GateResult", "evaluate_gates", "parse_gate"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_COMPARISON = re.compile(
    rf"^\s*(?P<treatment>{_NAME})\s+(?P<kind>not\s+worse\s+than|better\s+than)\s+(?P<baseline>{_NAME})"
    r"(?:\s+by\s+more\s+than\s+(?P<margin>[0-9]*\.?[0-9]+)\s*(?:points?|%)?)?"
    r"(?:\s+on\s+(?P<metric>pass\s+rate|score))?\s*$",
    re.IGNORECASE,
)
DEFAULT_MARGIN = 0.05
"""The non-inferiority margin of "not worse than" (5 points of pass rate, or 0.05 of weighted score)."""
_THRESHOLD = re.compile(
    rf"^\s*(?P<metric>pass[@^]\d+|pass\s+rate|score|cost|excluded)\s+of\s+(?P<treatment>{_NAME})\s*"
    r"(?P<op>>=|<=|==|>|<)\s*(?P<number>[0-9]*\.?[0-9]+)\s*(?P<percent>%?)\s*$",
    re.IGNORECASE,
)
# Thresholds compare with a tolerance of 1e-9: a mean of 0.2 and 0.4 is 0.30000000000000004, and
# "cost of S <= 0.3" must not fail on rounding.
_EPS = 1e-9
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b - _EPS,
    ">": lambda a, b: a > b + _EPS,
    "<=": lambda a, b: a <= b + _EPS,
    "<": lambda a, b: a < b - _EPS,
    "==": lambda a, b: abs(a - b) <= _EPS,
}
_UNIT = (0.0, 1.0)
Kind = Literal["not worse than", "better than", "threshold"]


@dataclass(frozen=True, slots=True)
class Gate:
    """A parsed gate. ``metric``: "pass_rate" / "mean_score" for comparisons; "pass@K", "pass^K",
    "pass_rate", "mean_score", "cost" or "excluded" for thresholds."""

    expression: str
    kind: Kind
    treatment: str
    metric: str
    baseline: str = ""
    op: str = ""
    value: float = math.nan
    margin: float = DEFAULT_MARGIN
    """"not worse than": the largest loss (a fraction: 0.05 is 5 points) the gate accepts."""


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: Gate
    passed: bool
    message: str
    """What was measured and why the gate passed or failed."""
    scope: str = ""
    """The scope of the inference that answered a comparison ("across tasks", "on these tasks"); empty
    for a threshold, or a gate that could not be decided."""

    def to_dict(self) -> dict[str, object]:
        """The gate's row of gates.json."""
        gate = self.gate
        row: dict[str, object] = {"expression": gate.expression, "kind": gate.kind, "treatment": gate.treatment}
        if gate.kind != "threshold":
            row["baseline"] = gate.baseline
        if gate.kind == "not worse than":
            row["margin"] = gate.margin
        return {**row, "metric": gate.metric, "scope": self.scope, "passed": self.passed, "message": self.message}


def parse_gate(expression: str) -> Gate:
    """Parse one expression; GateError naming it and the accepted forms when it does not parse."""
    if m := _COMPARISON.match(expression):
        kind: Kind = "not worse than" if m["kind"].lower().startswith("not") else "better than"
        metric = "mean_score" if (m["metric"] or "").lower() == "score" else "pass_rate"
        if m["margin"] is not None and kind != "not worse than":
            raise GateError(f"--gate {expression!r}: a margin ('by more than N points') goes with 'not worse than'")
        margin = float(m["margin"]) / 100.0 if m["margin"] is not None else DEFAULT_MARGIN
        if not 0 < margin < 1:
            raise GateError(f"--gate {expression!r}: the margin must be above 0 and below 100 points")
        return Gate(expression, kind, m["treatment"], metric, baseline=m["baseline"], margin=margin)
    if m := _THRESHOLD.match(expression):
        name = " ".join(m["metric"].lower().split())
        metric = {"pass rate": "pass_rate", "score": "mean_score"}.get(name, name)
        if metric[:5] in ("pass@", "pass^") and int(metric[5:]) < 1:
            raise GateError(f"--gate {expression!r}: k must be at least 1 in {m['metric']}")
        value = float(m["number"]) / (100.0 if m["percent"] else 1.0)
        return Gate(expression, "threshold", m["treatment"], metric, op=m["op"], value=value)
    raise GateError(
        f"--gate {expression!r} does not parse; write 'SKILL not worse than CONTROL [by more than 5 points]', "
        f"'SKILL better than CONTROL [on score]' or 'pass@1 of SKILL >= 0.8' "
        f"(metrics: pass@K, pass^K, pass rate, score, cost, excluded; operators: >= > <= < ==)"
    )


def evaluate_gates(gates: Iterable[Gate], analysis: Analysis) -> tuple[GateResult, ...]:
    return tuple(_evaluate(gate, analysis) for gate in gates)


def _report(analysis: Analysis, name: str) -> TreatmentReport | None:
    return next((r for r in analysis.reports if r.name == name), None)


def _evaluate(gate: Gate, analysis: Analysis) -> GateResult:
    missing = [n for n in (gate.treatment, gate.baseline) if n and _report(analysis, n) is None]
    if missing:
        known = ", ".join(analysis.treatments) or "none"
        return GateResult(gate, False, f"no trials of {missing[0]!r} (treatments found: {known}); the gate fails")
    if gate.kind == "threshold":
        return _threshold(gate, analysis)
    return _comparison(gate, analysis)


def _comparison(gate: Gate, analysis: Analysis) -> GateResult:
    treatment, baseline = _report(analysis, gate.treatment), _report(analysis, gate.baseline)
    assert treatment is not None and baseline is not None  # checked by the caller
    if treatment.identity is not None and baseline.identity is not None:
        found = mismatch(gate.baseline, baseline.identity, gate.treatment, treatment.identity)
        if found is not None:
            return GateResult(gate, False, f"{found.label} ({found.describe()}); a comparison gate fails")
    verdict = analysis.verdict(gate.treatment) if gate.baseline == analysis.baseline else None
    if verdict is not None and gate.metric == "pass_rate":
        return _follow(gate, verdict)
    summaries = [*baseline.analysis.tasks, *treatment.analysis.tasks]
    metric: Metric = "pass_rate" if gate.metric == "pass_rate" else "mean_score"
    result = compare_treatments(summaries, gate.baseline, gate.treatment, metric, min_tasks=MIN_TASKS)
    what = "pass rate" if metric == "pass_rate" else "weighted score"
    if isinstance(result, Insufficient):
        return GateResult(gate, False, f"{result.reason}; a gate without enough clean data fails")
    label = label_of(result, analysis.alpha)
    figures = (
        f"{what} difference {result.mean_difference:+.3f} per task "
        f"[{result.low:+.3f}, {result.high:+.3f}], p = {result.p_value:.3g}, {result.n} paired tasks"
    )
    if gate.kind == "not worse than":
        passed = label != "regression" and result.low > -gate.margin
        message = f"{_margin_head(passed, label, result.low, gate.margin)}: {figures}"
        return GateResult(gate, passed, message, "across tasks")
    passed = label == "improvement"
    head = "significant improvement" if passed else "no significant improvement"
    return GateResult(gate, passed, f"{head}: {figures}", "across tasks")


def _follow(gate: Gate, verdict: TreatmentVerdict) -> GateResult:
    """The gate answered by the verdict on pass rates (the module docstring)."""
    said = f"verdict {verdict.label!r} ({verdict.scope}): {verdict.reason}"
    if gate.kind == "better than":
        passed = verdict.label == "improvement"
        head = "significant improvement" if passed else "no significant improvement"
        return GateResult(gate, passed, f"{head}; {said}", verdict.scope)
    decisive = verdict.pass_rate if verdict.scope == "across tasks" else verdict.on_tasks
    low = decisive.low if isinstance(decisive, (PairedComparison, OnTasksComparison)) else math.nan
    bounds = verdict.exclusions
    if verdict.sequential is not None:
        # A run until decided: the fixed-design interval is not valid after its data-dependent stop; the
        # anytime-valid one is (already the lowest of the analysis set and both exclusion extremes).
        low = verdict.sequential.low
    elif bounds is not None and bounds.imputed and isinstance(bounds.worst, (PairedComparison, OnTasksComparison)):
        low = min(low, bounds.worst.low)  # the treatment's excluded trials as failures, the baseline's as passes
    answered = verdict.label in ("improvement", "no significant difference")
    passed = answered and math.isfinite(low) and low > -gate.margin
    return GateResult(gate, passed, f"{_margin_head(passed, verdict.label, low, gate.margin)}; {said}", verdict.scope)


def _margin_head(passed: bool, label: str, low: float, margin: float) -> str:
    """The first words of a non-inferiority gate's message."""
    if label == "regression":
        return "significant regression"
    bound = f"lower bound of the difference {low:+.1%}" if math.isfinite(low) else "no interval"
    if passed:
        return f"not worse by more than {margin:.0%}: {bound} > -{margin:.0%}"
    return f"not shown to be worse by less than {margin:.0%}: {bound}, margin -{margin:.0%}"


def _threshold(gate: Gate, analysis: Analysis) -> GateResult:
    report = _report(analysis, gate.treatment)
    assert report is not None
    value, basis = _measure(gate.metric, report)
    shown = gate.expression.split(" of ")[0].strip()
    if not math.isfinite(value):
        return GateResult(gate, False, f"{shown} of {gate.treatment} cannot be computed ({basis}); the gate fails")
    passed = _OPS[gate.op](value, gate.value)
    return GateResult(
        gate, passed, f"{shown} of {gate.treatment} = {value:.4g} ({basis}); needs {gate.op} {gate.value:.4g}"
    )


def _measure(metric: str, report: TreatmentReport) -> tuple[float, str]:
    tasks = [t for t in report.analysis.tasks if t.scored > 0]
    if metric.startswith(("pass@", "pass^")):
        k = int(metric[5:])
        per_task = [t.pass_at_k(k) if metric[4] == "@" else t.pass_hat_k(k) for t in tasks]
        short = [t.task for t in tasks if t.scored < k]
        if short:
            return math.nan, f"{len(short)} task(s) have fewer than {k} scored trials, e.g. {short[0]!r}"
        estimate = mean_over_tasks(per_task, bounds=_UNIT)
        return estimate.mean, f"mean over {estimate.n} task(s)" if estimate.n else "no scored task"
    if metric in ("pass_rate", "mean_score"):
        estimate = report.analysis.pass_rate if metric == "pass_rate" else report.analysis.mean_score
        return estimate.mean, f"mean over {estimate.n} task(s)" if estimate.n else "no scored task"
    if metric == "cost":
        mean = report.spend.mean_cost_usd
        if mean is None:
            return math.nan, "no trial reported a cost"
        return mean, f"mean USD over {report.spend.cost_trials} trial(s)"
    counts = report.counts
    return counts.excluded_share, f"{counts.excluded} of {counts.trials} trials excluded"
