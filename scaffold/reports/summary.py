"""``summary.md``: per-treatment and task x treatment tables from an experiment's trial records."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import fmean

from scaffold.experiment import Experiment
from scaffold.records import TrialRecord, read_records
from scaffold.reports.analysis import Analysis, build_analysis, noise_of
from scaffold.reports.comparison import ROW_LIMIT
from scaffold.reports.markdown import render

__all__ = ["Group", "aggregate", "noise_of", "render_summary", "write_summary"]


@dataclass
class Group:
    """The trials of one treatment, or of one (task, treatment) pair.

    Figures are computed once, on first use (cached): the template asks for each several times, and
    at 100,000 trials every pass over the records counts. Fill ``records`` before reading any figure.
    """

    records: list[TrialRecord] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return len(self.records)

    @cached_property
    def _verdicts(self) -> Counter[str]:
        return Counter(r.verdict for r in self.records)

    @cached_property
    def _noise(self) -> Counter[str]:
        return Counter(str(noise_of(r).get("category", "included")) for r in self.records)

    def count(self, verdict: str) -> int:
        return self._verdicts[verdict]

    @cached_property
    def scored(self) -> list[TrialRecord]:
        """Trials that reached a verdict; errored ones are unscored, not failed."""
        return [r for r in self.records if r.verdict != "error"]

    @property
    def pass_rate(self) -> float | None:
        scored = self.scored
        return self.count("passed") / len(scored) if scored else None

    @cached_property
    def mean_score(self) -> float | None:
        return _mean(r.weighted_score for r in self.scored)

    @cached_property
    def mean_duration(self) -> float | None:
        return _mean(r.duration_s for r in self.records)

    def noise_count(self, category: str) -> int:
        return self._noise[category]

    def dimension_mean(self, name: str) -> float | None:
        return _mean(d.get("score") for r in self.scored for d in r.dimensions if d["name"] == name)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


@dataclass
class Aggregate:
    by_treatment: dict[str, Group]
    by_pair: dict[tuple[str, str], Group]
    tasks: list[str]
    treatments: list[str]


def aggregate(records: Sequence[TrialRecord]) -> Aggregate:
    by_treatment: dict[str, Group] = defaultdict(Group)
    by_pair: dict[tuple[str, str], Group] = defaultdict(Group)
    for record in records:
        by_treatment[record.treatment].records.append(record)
        by_pair[(record.task, record.treatment)].records.append(record)
    # Dimensions come from the analysis (its rubric order), not from another pass over every score.
    return Aggregate(
        dict(sorted(by_treatment.items())),
        dict(by_pair),
        sorted({r.task for r in records}),
        sorted(by_treatment),
    )


def render_summary(
    experiment_id: str,
    records: Sequence[TrialRecord],
    problems: Sequence[str] = (),
    analysis: Analysis | None = None,
) -> str:
    """summary.md: the verdicts and pass@k first, then per-treatment and per-task tables of the raw set.

    *analysis* is built from *records* (CONTROL as the baseline) when not given.
    """
    agg = aggregate(records)
    analysis = analysis if analysis is not None else build_analysis(records, problems=problems)
    errors = [r for r in records if r.verdict == "error"]
    failed = [r for r in records if r.verdict == "failed"]
    noisy = [(r, dict(noise_of(r))) for r in records]
    noisy = [(r, n) for r, n in noisy if n["category"] != "included"]
    return render(
        "summary.md.j2",
        experiment_id=experiment_id,
        analysis=analysis,
        records=records,
        agg=agg,
        errors=errors,
        failed=failed,
        noisy=noisy,
        problems=problems,
        row_limit=ROW_LIMIT,
    )


def write_summary(experiment: Experiment) -> Path:
    """Read every record of *experiment* and write its ``summary.md`` atomically."""
    records, problems = read_records(experiment.record_paths())
    text = render_summary(experiment.id, records, problems)
    path = experiment.summary_path
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
