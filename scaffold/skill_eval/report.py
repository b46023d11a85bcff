"""The eval.yaml quality gates beside a session's reports: ``quality-gates.json`` and a summary.md section.

summary.md is written by scaffold.reports (the same for every session); the section is added after it, so
the reports of sessions without a manifest stay byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from scaffold.reports.gates import GateResult
from scaffold.reports.model import Analysis
from scaffold.skill_eval.manifest import Manifest
from scaffold.skill_eval.quality import QUALITY_FILE, QualityResult, assess, quality_json, quality_markdown
from scaffold.util.atomic import write_text_atomic

__all__ = ["write_quality"]

SUMMARY_FILE = "summary.md"


def write_quality(
    manifest: Manifest, analysis: Analysis, gate_results: Sequence[GateResult], folder: Path
) -> QualityResult:
    """Assess *manifest*'s quality gates (its ``gates`` among *gate_results*), write quality-gates.json in
    *folder* and the section into its summary.md (when there is one); the result."""
    own = set(manifest.quality_gates.gates)
    result = assess(
        manifest.quality_gates,
        analysis,
        manifest.baseline_treatments,
        [r for r in gate_results if r.gate.expression in own],
    )
    write_text_atomic(folder / QUALITY_FILE, json.dumps(quality_json(manifest.quality_gates, result), indent=2) + "\n")
    summary = folder / SUMMARY_FILE
    if summary.is_file():
        text = summary.read_text(encoding="utf-8")
        write_text_atomic(summary, text.rstrip("\n") + "\n\n" + quality_markdown(result))
    return result
