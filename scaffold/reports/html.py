"""``report.html``: one self-contained page built from an ``Analysis`` (scaffold.reports.analysis).

The page is the verdict first, then the treatment comparison with 95% intervals, the task x treatment
matrix coloured by pass rate, cost against quality, rubric dimension differences to the baseline, the LLM
judge when records carry one (statuses, rule vs judge, its cost, its calibration), spend and runtime, data
quality, failure attribution, and the links to the trials. Inline CSS and inline SVG
only: no JavaScript, no fonts, images or styles fetched from anywhere, so it opens offline, in a CI
artifact viewer or from a mail attachment, and prints (print styles keep the colours and drop the
scroll boxes).

Links to trials, and why they are aggregated
    Every cell of the matrix links to its row in the "Trials" section. When the report covers at most
    ``INLINE_TRIALS`` trials, that row links every trial's transcript (``transcript.html`` in the trial
    folder, scaffold.reports.transcript), its ``record.json`` and its raw streams, each named by what it
    is ("turn 1", "turn 1 stderr", "version", "stdout"). Above it, a link per trial would make the page
    tens of megabytes at 100,000 trials (about 250 bytes per trial), so each row links the folder(s)
    holding the cell's trial folders, names the folder pattern (``<task>-<treatment>-r<N>``, the runner's
    case id) whose folders each hold a transcript, and links at most ``CELL_SAMPLE`` trials worth a look
    first: excluded, then errored, flagged, failed. Lists of excluded and flagged trials stop at
    ``LIST_LIMIT`` entries with the count of the rest; the counts per reason are always complete.

Nothing to draw is said in one line, never drawn as an empty chart: cost against quality when no
treatment has both a cost and a pass rate, a rubric dimension when no treatment has a difference to
the baseline (for example skill_invocation, N/A in every trial without a required skill).

Pure: no files, pytest, docker or subprocess; ``render_html`` returns the text, the caller writes it.
"""

from __future__ import annotations

import heapq
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from scaffold.experiment import TRANSCRIPT_FILE
from scaffold.records import STREAM_PREFIX
from scaffold.reports.format import (
    UNIT,
    known,
    money,
    no_spread,
    number,
    paired_difference,
    percent,
    short_number,
    signed_points,
)
from scaffold.reports.format import interval as interval_of
from scaffold.reports.gates import GateResult
from scaffold.reports.jinja import bytecode_cache
from scaffold.reports.model import (
    JUDGE_REASONS,
    Analysis,
    Cell,
    DimensionStats,
    FailureCause,
    TreatmentVerdict,
    TrialLink,
)
from scaffold.reports.svg import Point, Row, clean, interval_chart, scatter_chart, symmetric_domain
from scaffold.stats import Estimate, Insufficient, PairedComparison
from scaffold.stats.heterogeneity import Heterogeneity, TaskEffect
from scaffold.stats.paired import MONTE_CARLO_DRAWS

__all__ = ["CELL_SAMPLE", "INLINE_TRIALS", "LIST_LIMIT", "render_html", "stream_label"]

INLINE_TRIALS = 3000
CELL_SAMPLE = 3
LIST_LIMIT = 50
EFFECT_ROWS = 50  # per-task effects listed per treatment: the page stays small at 100 tasks x 10 treatments

# Order in which trials are "worth a look" when a cell cannot list them all.
_LOOK_FIRST = {"excluded": 0, "error": 1, "flagged": 2, "failed": 3, "passed": 4}
_TONE = {
    "improvement": "good",
    "regression": "bad",
    "no significant difference": "neutral",
    "Insufficient clean data": "warn",
    "Inconclusive due to data quality": "warn",
}
_MARK = {"passed": "✓", "failed": "✗", "error": "!"}


def href(path: str) -> str:
    """A link target for a file path: percent-quoted, so no character of a task name can turn it into a
    scheme ("a:b"), a network path ("//host"), a query or a fragment."""
    quoted = quote(path, safe="/")
    return "/" + quoted.lstrip("/") if quoted.startswith("//") else quoted


def num(value: float | None, spec: str = ".3f") -> str:
    return number(value, spec)


def interval(est: Estimate, fmt: str = "pct") -> str:
    """ "62% [55%, 70%]", "62%" without an interval, "N/A" without a value: a pass rate (or a weighted
    score, *fmt* "num"), so the interval is held to [0, 1]."""
    return interval_of(est, percent if fmt == "pct" else num, UNIT)


_SEPARATORS = re.compile(r"([_\-./:])")


def breakable(name: str) -> Markup:
    """*name* escaped, with a line-break opportunity (``<wbr>``) after each separator (``_ - . / :``): a
    long treatment name wraps at its parts instead of being cut."""
    return Markup("<wbr>").join(escape(part) for part in _SEPARATORS.sub("\\1\0", clean(name)).split("\0"))


def bin_of(rate: float | None) -> str:
    """CSS class of a pass rate: b0 (0%) ... b10 (100%) by tenths, ``na`` when there is none."""
    v = known(rate)
    # Half up (25% -> b3), not Python's round-half-to-even, so equal steps land in distinct bins.
    return "na" if v is None else f"b{int(min(max(v, 0.0), 1.0) * 10 + 0.5)}"


# --- view model ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerdictRow:
    verdict: TreatmentVerdict
    tone: str
    pass_rate: str
    score: str
    p_value: str
    flips: str
    power: str
    quality: str = ""
    """Bounds of the excluded trials, the strict-set label, the interval floor; "" when none applies."""


@dataclass(frozen=True, slots=True)
class MatrixCell:
    css: str
    text: str
    title: str
    anchor: str


@dataclass(frozen=True, slots=True)
class FileLink:
    text: str
    href: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class TrialEntry:
    """One trial in the Trials section: its name and outcome, then its files (transcript first)."""

    label: FileLink
    """"r2 ✗" with the trial's outcome as the title (no link: the files follow)."""
    files: tuple[FileLink, ...]
    """transcript, record, then the raw streams; () when no file of the trial is known."""


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One cell's entry in the Trials section."""

    anchor: str
    task: str
    treatment: str
    summary: str
    folders: tuple[FileLink, ...]
    pattern: str
    trials: tuple[TrialEntry, ...]
    more: int
    """Trials of the cell not listed individually."""


@dataclass(frozen=True, slots=True)
class DimensionView:
    """One rubric dimension's chart, or the one line that says why there is none."""

    name: str
    chart: Markup | None
    note: str = ""


def _comparison(c: PairedComparison | Insufficient | None, fmt: str = "pct") -> str:
    if c is None:
        return "baseline"
    if isinstance(c, Insufficient):
        return "insufficient data"
    show = signed_points if fmt == "pct" else (lambda v: num(v, "+.3f"))
    return paired_difference(c, show)


def _verdict_row(v: TreatmentVerdict) -> VerdictRow:
    c = v.pass_rate
    p_value = flips = "—"
    if isinstance(c, PairedComparison):
        # "(MC)": p from random sign patterns (more than EXACT_MAX_TASKS tasks), not all of them.
        p_value = f"{c.p_value:.3g}" + ("" if c.exact else " (MC)")
        flips = f"{c.improved} / {c.regressed} / {c.unchanged}"
    power = ""
    if v.power is not None:
        # The cell is a number (it never wraps); why there is none goes in the row under it.
        power = f"{v.power.needed} tasks" if v.power.needed is not None else "not estimated"
    if v.trials is not None:
        power += f"; {v.trials.needed} trials per treatment on one task" if v.trials.needed is not None else ""
    return VerdictRow(
        verdict=v,
        tone=_TONE.get(v.label, "warn" if v.mismatch else "neutral"),
        pass_rate=_comparison(c),
        score=_comparison(v.score, "score"),
        p_value=p_value,
        flips=flips,
        power=power,
        quality=_quality(v),
    )


def _quality(v: TreatmentVerdict) -> str:
    """What noisy trials could do to the verdict: the bounds of the excluded trials, the flagged ones."""
    parts = []
    x = v.exclusions
    if x is not None and x.imputed:
        parts.append(
            f"excluded trials: {x.baseline_excluded} of {x.baseline_trials} {v.baseline}, {x.treatment_excluded} of "
            f"{x.treatment_trials} {v.treatment} (Fisher's exact p = {number(x.rate_p_value, '.3g')}); counted as "
            f"failures of {v.treatment} and passes of {v.baseline}: {x.worst_label}; "
            f"the other way round: {x.best_label}"
        )
    if v.strict_label != v.label:
        parts.append(f"without flagged trials: {v.strict_label}")
    if isinstance(v.pass_rate, PairedComparison) and v.pass_rate.floored:
        parts.append("interval at the binomial floor: the tasks vary less than their trials' own noise allows")
    if v.power is not None and v.power.needed is None and v.power.note:
        parts.append(f"tasks needed not estimated: {v.power.note}")
    return f" ({'; '.join(parts)})" if parts else ""


def _difference_row(label: str, c: PairedComparison | Insufficient | None) -> Row:
    if isinstance(c, PairedComparison):
        if no_spread(c):
            # Every paired difference the same: a point "interval" would claim certainty (format.paired_difference).
            return Row(label, c.mean_difference, note=f"n={c.n}, the same on every task: no spread, no interval")
        return Row(label, c.mean_difference, c.low, c.high, note=f"n={c.n}")
    return Row(label, None, note="insufficient data" if isinstance(c, Insufficient) else "")


def _cell_title(cell: Cell) -> str:
    parts = [f"{cell.task} × {cell.treatment}: {cell.passed}/{cell.scored} passed ({percent(cell.pass_rate)})"]
    if cell.scored:
        parts.append(f"95% CI {percent(cell.wilson.low)}–{percent(cell.wilson.high)}")
    parts.append(f"mean score {num(cell.mean_score, '.2f')}")
    if cell.excluded or cell.flagged:
        parts.append(f"{cell.excluded} excluded, {cell.flagged} flagged")
    return "; ".join(parts)


def _matrix(a: Analysis) -> list[tuple[str, list[MatrixCell]]]:
    rows = []
    for i, task in enumerate(a.tasks):
        cells = []
        for j, treatment in enumerate(a.treatments):
            cell = a.cells.get((task, treatment))
            anchor = f"c{i}-{j}"
            if cell is None:
                cells.append(MatrixCell("na", "—", f"{task} × {treatment}: no trials", ""))
                continue
            noisy = "*" if cell.excluded or cell.flagged else ""
            text = "N/A" if known(cell.pass_rate) is None else f"{cell.pass_rate * 100:.0f}"
            cells.append(MatrixCell(bin_of(cell.pass_rate), text + noisy, _cell_title(cell), anchor))
        rows.append((task, cells))
    return rows


_TURN = re.compile(r"turn-(\d+)")
_STREAM_SUFFIXES = (".jsonl", ".log")


def stream_label(path: str) -> str:
    """What a raw stream file is, from its name (scaffold.agents.cli and oracle name them):
    agent.turn-1.jsonl "turn 1", agent.turn-1.stderr.log "turn 1 stderr", agent.version.log "version",
    agent.stdout.log "stdout"; any other agent.* file by its name without the prefix and suffix."""
    name = posixpath.basename(path)
    stem = name.removeprefix(STREAM_PREFIX)
    for suffix in _STREAM_SUFFIXES:
        stem = stem.removesuffix(suffix)
    words = [_TURN.sub(r"turn \1", part) for part in stem.split(".") if part]
    return " ".join(words) or name


def _trial_links(link: TrialLink, with_experiment: bool) -> TrialEntry:
    name = f"{link.experiment_id}/r{link.trial}" if with_experiment else f"r{link.trial}"
    title = f"trial {link.trial} of {link.experiment_id}: {link.verdict}, {link.category}"
    if link.reason:
        title += f" ({link.reason})"
    if link.changed_files is not None:
        title += f"; {link.changed_files} file(s) changed by the agent"
    text = f"{name} {_MARK.get(link.verdict, '?')}" + ("*" if link.category != "included" else "")
    if link.files is None:
        return TrialEntry(FileLink(text, "", title + "; no record file known"), ())
    record = link.files.record
    files = (
        FileLink(
            "transcript",
            href(link.files.transcript),
            "" if link.changed_files is None else f"{link.changed_files} file(s) changed",
        ),
        FileLink("record", href(record)),
        *(FileLink(stream_label(path), href(path), posixpath.basename(path)) for path in link.files.streams),
    )
    return TrialEntry(FileLink(text, "", title), files)


def _folder(path: str) -> str:
    """The folder that holds a trial's folder (``.../trials/``)."""
    return posixpath.dirname(posixpath.dirname(path)) or "."


def _trial_rows(a: Analysis) -> tuple[list[TrialRow], bool]:
    total = sum(len(c.links) for c in a.cells.values())
    inline = total <= INLINE_TRIALS
    several = len(a.experiments) > 1
    rows = []
    for i, task in enumerate(a.tasks):
        for j, treatment in enumerate(a.treatments):
            cell = a.cells.get((task, treatment))
            if cell is None:
                continue
            links = list(cell.links)
            if not inline:
                links = heapq.nsmallest(
                    CELL_SAMPLE, links, key=lambda t: (_LOOK_FIRST.get(_state(t), 9), t.experiment_id, t.trial)
                )
            # One folder per experiment: a cell's trials of one experiment share their trials/ folder.
            first = {t.experiment_id: t.files for t in reversed(cell.links) if t.files is not None}
            folders = sorted({_folder(files.record) for files in first.values()})
            rows.append(
                TrialRow(
                    anchor=f"c{i}-{j}",
                    task=task,
                    treatment=treatment,
                    summary=f"{cell.passed}/{cell.scored} passed, {len(cell.links)} trials",
                    folders=tuple(FileLink(f + "/", href(f + "/")) for f in folders),
                    pattern=f"{task}-{treatment}-r*/{TRANSCRIPT_FILE}" if not inline else "",
                    trials=tuple(_trial_links(t, several) for t in links),
                    more=len(cell.links) - len(links),
                )
            )
    return rows, inline


def _state(link: TrialLink) -> str:
    return link.category if link.category in ("excluded", "flagged") and link.verdict != "failed" else link.verdict


def _listed(links: Sequence[TrialLink], with_experiment: bool) -> list[tuple[TrialLink, TrialEntry]]:
    return [(t, _trial_links(t, with_experiment)) for t in links[:LIST_LIMIT]]


def _charts(a: Analysis) -> dict[str, Markup | None]:
    reports = a.reports
    base = next((r for r in reports if r.is_baseline), None)
    points = [
        Point(
            r.name,
            r.spend.mean_cost_usd,
            r.analysis.pass_rate.mean,
            r.analysis.pass_rate.low,
            r.analysis.pass_rate.high,
        )
        for r in reports
    ]
    charts: dict[str, Markup | None] = {
        "pass_rate": interval_chart(
            [
                Row(r.name, r.analysis.pass_rate.mean, r.analysis.pass_rate.low, r.analysis.pass_rate.high)
                for r in reports
            ],
            ident="chart-pass-rate",
            title="Pass rate per treatment (mean over tasks, 95% interval; analysis set)",
            reference=base.analysis.pass_rate.mean if base else None,
        ),
        "score": interval_chart(
            [
                Row(r.name, r.analysis.mean_score.mean, r.analysis.mean_score.low, r.analysis.mean_score.high)
                for r in reports
            ],
            ident="chart-score",
            title="Weighted score per treatment (mean over tasks, 95% interval; analysis set)",
            fmt=lambda v: num(v, ".2f"),
            reference=base.analysis.mean_score.mean if base else None,
        ),
        # Nothing placeable: the template says so in one line instead of an empty plot.
        "cost": scatter_chart(
            points,
            ident="chart-cost",
            title="Cost per trial against pass rate, per treatment (95% interval on the pass rate)",
            x_label="mean cost per trial (USD)",
            y_label="pass rate",
            x_fmt=lambda v: f"${short_number(v)}",
        )
        if any(known(p.x) is not None and known(p.y) is not None for p in points)
        else None,
    }
    diff_rows = [_difference_row(v.treatment, v.pass_rate) for v in a.verdicts]
    charts["verdict"] = interval_chart(
        diff_rows,
        ident="chart-verdict",
        title=f"Pass rate difference to {a.baseline} (paired over tasks, 95% interval)",
        domain=symmetric_domain(diff_rows),
        fmt=signed_points,
        tick_fmt=lambda v: signed_points(v).replace(".0 pts", ""),
        reference=0.0,
    )
    return charts


def _dimension_views(a: Analysis) -> list[DimensionView]:
    views = []
    for k, name in enumerate(a.dimensions):
        stats = [d for d in a.dimension_stats if d.dimension == name]
        compared = [d for d in stats if d.treatment != a.baseline]
        rows = [_difference_row(d.treatment, d.difference) for d in compared]
        if not any(known(r.value) is not None for r in rows):
            views.append(DimensionView(name, None, _no_difference(a.baseline, stats, compared)))
            continue
        chart = interval_chart(
            rows,
            ident=f"chart-dim-{k}",
            title=f"{name}: difference to {a.baseline} (paired over tasks, 95% interval)",
            domain=symmetric_domain(rows),
            fmt=lambda v: num(v, "+.2f"),
            reference=0.0,
        )
        views.append(DimensionView(name, chart))
    return views


def _no_difference(baseline: str, stats: Sequence[DimensionStats], compared: Sequence[DimensionStats]) -> str:
    """Why a dimension has no difference to chart, in one line."""
    if not any(d.n for d in stats):
        return "not applicable: no trial has a score (N/A in every trial), so there is nothing to compare"
    if not compared:
        return f"no treatment to compare with {baseline}"
    if not any(d.n for d in stats if d.treatment == baseline):
        return f"not compared: {baseline} has no score (N/A in every trial); the table gives each treatment's mean"
    return f"not compared: too few tasks are scored under both {baseline} and a treatment (insufficient data)"


def _title(a: Analysis) -> str:
    if not a.experiments:
        return "Comparison report"
    shown = ", ".join(a.experiments[:3]) + (f" and {len(a.experiments) - 3} more" if len(a.experiments) > 3 else "")
    return f"Comparison report: {shown}"


_ENV = Environment(
    loader=PackageLoader("scaffold.reports", "templates"),
    bytecode_cache=bytecode_cache("html"),
    undefined=StrictUndefined,
    autoescape=True,  # every name in the page comes from task folders and treatment files: never trusted
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters.update(
    pct=percent, num=num, money=money, interval=interval, clean=clean, signed_pct=signed_points, breakable=breakable
)
_ENV.globals.update(comparison=_comparison, bin_of=bin_of)


def render_html(analysis: Analysis, gates: Sequence[GateResult] = ()) -> str:
    """The complete report.html for *analysis*: one self-contained document (see the module docstring)."""
    a = analysis
    trial_rows, inline = _trial_rows(a)
    several = len(a.experiments) > 1
    return _ENV.get_template("report.html.j2").render(
        a=a,
        gates=gates,
        title=_title(a),
        verdicts=[_verdict_row(v) for v in a.verdicts],
        charts=_charts(a),
        dimension_views=_dimension_views(a),
        monte_carlo=any(isinstance(v.pass_rate, PairedComparison) and not v.pass_rate.exact for v in a.verdicts),
        matrix=_matrix(a),
        bins=[(f"b{k}", f"{k * 10}%") for k in range(11)],
        trial_rows=trial_rows,
        inline=inline,
        inline_limit=INLINE_TRIALS,
        cell_sample=CELL_SAMPLE,
        excluded=_listed(a.excluded, several),
        flagged=_listed(a.flagged, several),
        list_limit=LIST_LIMIT,
        dims_by_name={name: [d for d in a.dimension_stats if d.dimension == name] for name in a.dimensions},
        failures=_top_failures(a.failures),
        total_trials=sum(len(c.links) for c in a.cells.values()),
        mc_draws=MONTE_CARLO_DRAWS,
        transcript_file=TRANSCRIPT_FILE,
        judge_reasons=JUDGE_REASONS,
        row_limit=EFFECT_ROWS,
        shown_effects=_shown_effects,
    )


def _shown_effects(h: Heterogeneity) -> list[TaskEffect]:
    """The per-task effects the page lists, the largest first: all of them, or the half of
    ``EFFECT_ROWS`` the treatment helped most and the half it hurt most."""
    ranked = sorted(h.effects, key=lambda e: (-e.difference, e.task))
    if len(ranked) <= EFFECT_ROWS:
        return ranked
    half = EFFECT_ROWS // 2
    return ranked[:half] + ranked[-half:]


def _top_failures(rows: Iterable[FailureCause]) -> list[FailureCause]:
    """The five commonest causes per treatment (rows come sorted by treatment, then most trials)."""
    seen: dict[str, int] = {}
    kept = []
    for row in rows:
        seen[row.treatment] = seen.get(row.treatment, 0) + 1
        if seen[row.treatment] <= 5:
            kept.append(row)
    return kept
