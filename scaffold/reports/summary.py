"""``summary.md``: the verdicts and pass@k first, then per-treatment and task x treatment tables.

Rendered from the analysis model alone (scaffold.reports.model), like every other report. Its tables are
of the raw set, pooled (``RawTotals``): the plain counts of what ran, beside comparison_report.md's
per-task statistics of the analysis set.
"""

from __future__ import annotations

from collections.abc import Sequence

from scaffold.reports.comparison import ROW_LIMIT
from scaffold.reports.gates import GateResult
from scaffold.reports.markdown import render
from scaffold.reports.model import JUDGE_REASONS, Analysis

__all__ = ["render_summary"]


def render_summary(analysis: Analysis, title: str, gates: Sequence[GateResult] = ()) -> str:
    """summary.md of *analysis*, titled with the experiment id(s) *title*, with the *gates*' answers."""
    trials = analysis.trials
    return render(
        "summary.md.j2",
        title=title,
        a=analysis,
        gates=gates,
        # Treatments by name here (the comparison report lists the baseline first).
        reports=sorted(analysis.reports, key=lambda r: r.name),
        treatments=sorted(analysis.treatments),
        failed=[t for t in trials if t.verdict == "failed"],
        errors=[t for t in trials if t.verdict == "error"],
        noisy=[t for t in trials if t.category != "included"],
        row_limit=ROW_LIMIT,
        judge_reasons=JUDGE_REASONS,
    )
