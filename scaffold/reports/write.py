"""Write the report files of a set of trial records into one folder, each atomically.

summary.md              verdicts, pass@k, per-treatment and task x treatment tables   (markdown)
comparison_report.md    every section of the original Comet eval's comparison report                 (markdown)
report.html             one self-contained page                                        (html)
results.jsonl           one line per trial (docs/results-schema.md)                    (always)
gates.json              every --gate: expression, scope, passed, why                   (with gates)
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from scaffold.errors import DiskFullError, ReportError
from scaffold.experiment.owner import folder_locked
from scaffold.experiment.sequential import Design, read_design
from scaffold.records import TrialRecord
from scaffold.records.files import gc_paused
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparable import Identities, refuse_mixed
from scaffold.reports.comparison import render_comparison
from scaffold.reports.config import ReportOutputs
from scaffold.reports.gates import Gate, GateResult, evaluate_gates
from scaffold.reports.load import Loaded, load_experiments, merged
from scaffold.reports.model import Analysis, TrialFiles, UnreadableRecord
from scaffold.reports.results import result_lines
from scaffold.reports.summary import render_summary
from scaffold.util.atomic import write_json_atomic, write_text_atomic

__all__ = [
    "COMPARISON",
    "GATES",
    "HTML",
    "RESULTS",
    "SUMMARY",
    "Reported",
    "Written",
    "disk_full_message",
    "report_experiments",
    "write_reports",
]

SUMMARY = "summary.md"
COMPARISON = "comparison_report.md"
HTML = "report.html"
RESULTS = "results.jsonl"
GATES = "gates.json"


@dataclass(frozen=True, slots=True)
class Written:
    analysis: Analysis
    paths: tuple[Path, ...]
    gate_results: tuple[GateResult, ...] = ()


@dataclass(frozen=True, slots=True)
class Reported:
    """What ``report_experiments`` read and wrote."""

    written: Written
    trials: int
    dirs: tuple[Path, ...]
    problems: tuple[UnreadableRecord, ...]
    loaded: Loaded | None = None
    """The records read, when asked to keep them (``keep_records``); otherwise freed before returning."""


def report_experiments(
    dirs: Sequence[Path],
    out_dir: Path,
    *,
    baseline: str = "CONTROL",
    outputs: ReportOutputs | None = None,
    title: str | None = None,
    allow_empty: bool = False,
    keep_records: bool = False,
    allow_mixed: bool = False,
    notes: Sequence[str] = (),
    gates: Sequence[Gate] = (),
    imported: Loaded | None = None,
) -> Reported:
    """Read every record of *dirs* and write their reports into *out_dir*: ``comet report`` and session end.

    The cyclic garbage collector stays paused from the first record read until the records are freed.
    Resuming it in between would make its next pass walk the millions of objects just built (about a
    second at 100,000 records), and nothing here needs it: records and reports hold no cycles.
    ReportError when there is no readable record, unless *allow_empty* (the reports then say so).
    *keep_records*: return the records in ``Reported.loaded`` rather than freeing them (a process about
    to end can skip freeing them one by one: see scaffold.cli.main.entry).
    MixedError, before any file is written, when treatments differ in more than the treatment (agent,
    model, backend, ...: scaffold.reports.comparable), unless *allow_mixed*. *notes*: sentences every
    report opens with (how the session that wrote them ended). *gates*: answered on the analysis and
    written into every report and into gates.json (``Written.gate_results``). *imported*: records read
    from other tools' results (scaffold.imports), reported with those of *dirs* (which may then be empty).
    """
    with gc_paused():
        if imported is None:
            loaded = load_experiments(dirs, link_base=out_dir)
        else:
            loaded = merged(load_experiments(dirs, link_base=out_dir), imported) if dirs else imported
        if not loaded.records and not allow_empty:
            raise ReportError(
                f"no readable trial records in {', '.join(str(d) for d in dirs) or 'the results given'}"
                + (f" ({len(loaded.problems)} unreadable: {loaded.problems[0]})" if loaded.problems else "")
            )
        written = _write_reports(
            out_dir,
            loaded.records,
            title if title is not None else ", ".join(sorted({r.experiment_id for r in loaded.records})),
            baseline,
            loaded.problems,
            loaded.files,
            outputs or ReportOutputs(),
            allow_mixed,
            tuple(notes),
            tuple(gates),
            _sequential_design(loaded.dirs),
        )
        reported = Reported(
            written, len(loaded.records), loaded.dirs, loaded.problems, loaded if keep_records else None
        )
        if keep_records:
            # Kept until the process ends: out of the collector's sight, or its next pass when it resumes
            # would walk them all (they hold no cycles, so nothing is lost by never collecting them).
            gc.freeze()
        del loaded  # unless kept, freed by reference counting while the collector is still paused
    return reported


def write_reports(
    out_dir: Path,
    records: Sequence[TrialRecord],
    *,
    title: str,
    baseline: str = "CONTROL",
    problems: Sequence[UnreadableRecord] = (),
    files: Mapping[tuple[str, str], TrialFiles] | None = None,
    outputs: ReportOutputs | None = None,
    allow_mixed: bool = False,
) -> Written:
    """Build the analysis once and write every chosen report into *out_dir* (created if needed); MixedError
    as ``report_experiments`` raises it."""
    with gc_paused():  # millions of small acyclic objects: see scaffold.records.files.gc_paused
        return _write_reports(
            out_dir, records, title, baseline, problems, files, outputs or ReportOutputs(), allow_mixed, (), (), None
        )


def _write_reports(
    out_dir: Path,
    records: Sequence[TrialRecord],
    title: str,
    baseline: str,
    problems: Sequence[UnreadableRecord],
    files: Mapping[tuple[str, str], TrialFiles] | None,
    outputs: ReportOutputs,
    allow_mixed: bool,
    notes: tuple[str, ...],
    gates: tuple[Gate, ...],
    sequential: Design | None,
) -> Written:
    identities = Identities.of(records)
    if not allow_mixed:
        refuse_mixed(identities, baseline)  # before any file is written: no report pairs them
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    analysis = build_analysis(
        records, baseline=baseline, problems=problems, files=files, identities=identities, sequential=sequential
    )
    if notes:
        analysis = msgspec.structs.replace(analysis, notes=(*notes, *analysis.notes))
    results = evaluate_gates(gates, analysis)
    # One writer of a folder's reports at a time (two `comet report --out` into one folder mixed their
    # files): the folder's own lock, the one a session takes to claim an experiment.
    with folder_locked(out_dir):
        try:
            if outputs.markdown:
                paths.append(write_text_atomic(out_dir / SUMMARY, render_summary(analysis, title, results)))
                paths.append(write_text_atomic(out_dir / COMPARISON, render_comparison(analysis, title, results)))
            if outputs.html:
                from scaffold.reports.html import render_html  # only when asked for: its SVG charts, its template

                paths.append(write_text_atomic(out_dir / HTML, render_html(analysis, results)))
            paths.append(write_text_atomic(out_dir / RESULTS, result_lines(records, files, unreadable=problems)))
            if results:  # for a CI step to read: every gate, its scope, its answer and why
                rows = {"passed": all(r.passed for r in results), "gates": [r.to_dict() for r in results]}
                paths.append(write_json_atomic(out_dir / GATES, rows))
        except DiskFullError as exc:
            exc.written = tuple(paths)  # so the message can say what is there
            raise
    return Written(analysis, tuple(paths), results)


def _sequential_design(dirs: Sequence[Path]) -> Design | None:
    """The design of a run until decided, when every folder reported ran under the same one (a folder run
    otherwise, or under another design, makes the fixed-design verdict the answer: it is then the only
    one that covers every trial)."""
    designs = {read_design(d) for d in dirs}
    if len(designs) == 1:
        return designs.pop()
    return None


def disk_full_message(exc: DiskFullError, dirs: Sequence[Path]) -> str:
    """What a full disk cost a report: the file not written, what is kept, and the start of what to do
    (the caller ends the sentence with how to write the reports again)."""
    kept = f"Kept: every trial record in {', '.join(str(d) for d in dirs)} (a report never rewrites one)"
    if exc.written:
        kept += "; written before the disk filled: " + ", ".join(str(p) for p in exc.written)
    return f"{exc}. {kept}. Free space on that disk"
