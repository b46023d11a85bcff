"""``comparison_report.md``: every section of the original Comet eval's comparison report, rendered from an
``Analysis``."""

from __future__ import annotations

from collections.abc import Sequence

from scaffold.reports.gates import GateResult
from scaffold.reports.markdown import render
from scaffold.reports.model import JUDGE_REASONS, Analysis
from scaffold.reports.verdicts import EXCLUDED_SHARE_LIMIT, MIN_TASKS

__all__ = ["ROW_LIMIT", "render_comparison"]

# Excluded, flagged and failure rows shown at most; results.jsonl lists every trial. Keeps the report
# readable (and small) at 100,000 trials.
ROW_LIMIT = 200


def render_comparison(analysis: Analysis, title: str = "", gates: Sequence[GateResult] = ()) -> str:
    """The Markdown comparison report of *analysis* (baseline against every other treatment)."""
    return render(
        "comparison_report.md.j2",
        analysis=analysis,
        gates=gates,
        title=title,
        confidence=0.95,
        min_tasks=MIN_TASKS,
        excluded_limit=EXCLUDED_SHARE_LIMIT,
        row_limit=ROW_LIMIT,
        judge_reasons=JUDGE_REASONS,
    )
