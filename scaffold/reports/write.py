"""Write the report files of a set of trial records into one folder, each atomically.

summary.md              verdicts, pass@k, per-treatment and task x treatment tables   (markdown)
comparison_report.md    every section of the seed's comparison report                 (markdown)
report.html             one self-contained page                                        (html)
results.jsonl           one line per trial (docs/results-schema.md)                    (always)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scaffold.records import TrialRecord, gc_paused
from scaffold.reports.analysis import Analysis, TrialFiles, build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.config import ReportOutputs
from scaffold.reports.results import result_lines
from scaffold.reports.summary import render_summary

__all__ = ["COMPARISON", "HTML", "RESULTS", "SUMMARY", "Written", "write_reports", "write_text_atomic"]

SUMMARY = "summary.md"
COMPARISON = "comparison_report.md"
HTML = "report.html"
RESULTS = "results.jsonl"


@dataclass(frozen=True, slots=True)
class Written:
    analysis: Analysis
    paths: tuple[Path, ...]


def write_reports(
    out_dir: Path,
    records: Sequence[TrialRecord],
    *,
    title: str,
    baseline: str = "CONTROL",
    problems: Sequence[str] = (),
    files: Mapping[tuple[str, str], TrialFiles] | None = None,
    outputs: ReportOutputs | None = None,
) -> Written:
    """Build the analysis once and write every chosen report into *out_dir* (created if needed)."""
    with gc_paused():  # millions of small acyclic objects: see scaffold.records.gc_paused
        return _write_reports(out_dir, records, title, baseline, problems, files, outputs or ReportOutputs())


def _write_reports(
    out_dir: Path,
    records: Sequence[TrialRecord],
    title: str,
    baseline: str,
    problems: Sequence[str],
    files: Mapping[tuple[str, str], TrialFiles] | None,
    outputs: ReportOutputs,
) -> Written:
    analysis = build_analysis(records, baseline=baseline, problems=problems, files=files)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    if outputs.markdown:
        paths.append(write_text_atomic(out_dir / SUMMARY, [render_summary(title, records, problems, analysis)]))
        paths.append(write_text_atomic(out_dir / COMPARISON, [render_comparison(analysis, title)]))
    if outputs.html:
        from scaffold.reports.html import render_html  # only when asked for: it has its own templates

        paths.append(write_text_atomic(out_dir / HTML, [render_html(analysis)]))
    paths.append(write_text_atomic(out_dir / RESULTS, result_lines(records, files)))
    return Written(analysis, tuple(paths))


def write_text_atomic(path: Path, chunks: Iterable[str]) -> Path:
    """Write *chunks* to a temporary file beside *path*, then rename it over *path*."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; reports are meant to be read (CI artifacts, browsers)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(chunks)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
