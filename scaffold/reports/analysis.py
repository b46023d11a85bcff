"""One aggregated model of everything the reports show, built from trial records in one pass.

``build_analysis(records, baseline=...)`` returns a frozen ``Analysis``. The Markdown and HTML renderers
read only this model, never the records, so every figure is computed once and all reports agree.

Sets of trials (the seed's "去噪口径")
    raw set       every trial given.
    analysis set  raw minus the trials whose noise verdict is ``excluded`` (environment or runner
                  noise). Headline figures, pass@k, spend, runtime, dimensions and verdicts use it.
    strict set    analysis minus ``flagged`` trials; used only to test whether a verdict depends on
                  suspect trials.

Verdicts (one per treatment other than the baseline), decided in this order
    1. "Insufficient clean data": the baseline has no trials, or fewer than ``MIN_TASKS`` tasks have a
       pass rate under both treatments in the analysis set.
    2. "Inconclusive due to data quality": more than ``EXCLUDED_SHARE_LIMIT`` of either side's trials
       were excluded, or the label decided on the analysis set changes on the raw set (excluded trials
       kept) or on the strict set (flagged trials dropped): the answer depends on how noise is treated.
    3. "improvement" / "regression": the paired sign-flip test over tasks gives p <= ``alpha`` and the
       interval of the mean per-task pass-rate difference excludes 0 (both must agree); the sign names it.
    4. "no significant difference" otherwise. Never a fixed threshold on the drop.

Pure: no files, pytest, docker or subprocess. Linear in the number of trials, except the percentiles of
runtime (a sort per treatment) and the paired tests, whose cost depends on tasks, not trials.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from scaffold.noise import classify
from scaffold.records import TrialRecord
from scaffold.stats import (
    Estimate,
    Insufficient,
    KPlan,
    Metric,
    PairedComparison,
    Rate,
    SampleSize,
    TaskSummary,
    TreatmentStats,
    TrialOutcome,
    compare_treatments,
    summarize_tasks,
    summarize_treatments,
    tasks_needed,
)
from scaffold.stats.passk import DEFAULT_MAX_K
from scaffold.stats.power import DEFAULT_EFFECT

__all__ = [
    "EXCLUDED_SHARE_LIMIT",
    "INCONCLUSIVE",
    "INSUFFICIENT",
    "JUDGE_SOURCE",
    "MIN_TASKS",
    "Analysis",
    "Cell",
    "Counts",
    "DimensionStats",
    "DimensionWeight",
    "FailureCause",
    "JudgeOverlay",
    "JudgeRow",
    "Label",
    "PassK",
    "Runtime",
    "Spend",
    "TreatmentReport",
    "TrialFiles",
    "TrialLink",
    "Verdict",
    "build_analysis",
    "finite_number",
    "label_of",
    "noise_of",
]

Label = Literal[
    "improvement",
    "regression",
    "no significant difference",
    "Insufficient clean data",
    "Inconclusive due to data quality",
]
INSUFFICIENT: Final = "Insufficient clean data"
INCONCLUSIVE: Final = "Inconclusive due to data quality"
MIN_TASKS: Final = 3  # paired tasks below which no comparison is attempted (stats.compare_treatments)
# More than half of a side's trials lost to noise: whatever survives is not a fair sample of the tasks.
EXCLUDED_SHARE_LIMIT: Final = 0.5
JUDGE_SOURCE: Final = "judge"  # a record dimension with "source": "judge" is an LLM-judge score
_EXAMPLES: Final = 5
_DIMENSION_DRAWS: Final = 2_000


def noise_of(record: TrialRecord) -> Mapping[str, Any]:
    """The record's noise verdict; records written before classification existed are classified now."""
    return record.noise if record.noise else classify(record).to_dict()


# --- the model ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrialFiles:
    """Where one trial's files are, as the caller wants them linked (relative to the report, or absolute)."""

    record: str
    """Path of the trial's ``record.json``."""
    streams: tuple[str, ...] = ()
    """Paths of what the agent printed (``agent.*`` files of the trial folder), sorted."""


@dataclass(frozen=True, slots=True)
class TrialLink:
    """One trial as lists and links show it: identity, outcome, noise verdict and files."""

    experiment_id: str
    case_id: str
    """``<task>-<treatment>-r<N>``; unique within one experiment, not across merged experiments."""
    task: str
    treatment: str
    trial: int
    verdict: str
    """"passed", "failed" or "error" (error = unscored, never counted as failed)."""
    weighted_score: float | None
    category: str
    """Noise category: "included", "flagged" or "excluded"."""
    reason: str
    """Noise reason (scaffold.noise reasons; "" for plain included trials)."""
    source: str
    """What decided the noise verdict: "structured" or "text"."""
    evidence: Mapping[str, Any]
    """The signal that decided the noise verdict (error, failure event, matched text, ...)."""
    files: TrialFiles | None
    """The trial's record and raw streams; None when the records were not read from files."""


@dataclass(frozen=True, slots=True)
class Counts:
    """Trial counts of one treatment (or of everything) on the raw set."""

    trials: int
    passed: int
    failed: int
    errored: int
    """Trials whose verdict is "error": unscored, never failed."""
    included: int
    flagged: int
    excluded: int
    excluded_reasons: Mapping[str, int]
    """Excluded trials per noise reason, e.g. {"rate_limited": 3}."""
    flagged_reasons: Mapping[str, int]

    @property
    def analysis_trials(self) -> int:
        """Trials in the analysis set (raw minus excluded)."""
        return self.trials - self.excluded

    @property
    def excluded_share(self) -> float:
        """Excluded / raw trials; NaN without trials."""
        return self.excluded / self.trials if self.trials else math.nan


@dataclass(frozen=True, slots=True)
class PassK:
    """pass@k and pass^k (both forms) of one treatment at one k: means over tasks with intervals."""

    k: int
    pass_at_k: Estimate
    """At least one of k trials passes (HumanEval's unbiased estimator per task, then the task mean)."""
    pass_hat_k: Estimate
    """All k trials pass, unbiased C(c,k)/C(n,k) per task (tau-bench)."""
    pass_hat_k_observed: Estimate
    """The seed's observed pass^k per task: 1 when every scored trial passed, else 0."""


@dataclass(frozen=True, slots=True)
class Spend:
    """Tokens and cost on the analysis set. Only trials whose agent reported telemetry count: an agent
    without telemetry has unknown tokens (N/A), not zero."""

    trials: int
    """Trials in the set (the denominator of the reporting shares)."""
    token_trials: int
    """Trials that reported token usage; the token sums and means cover these only."""
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_trials: int
    """Trials that reported a cost; ``cost_usd`` and ``mean_cost_usd`` cover these only."""
    cost_usd: float | None
    """Total cost in USD; None when no trial reported one."""
    passed: int
    """Passed trials in the set, for ``cost_per_pass_usd``."""

    @property
    def mean_cost_usd(self) -> float | None:
        return self.cost_usd / self.cost_trials if self.cost_usd is not None and self.cost_trials else None

    @property
    def cost_per_pass_usd(self) -> float | None:
        """Total cost over passed trials (the price of one success); None without cost or passes."""
        return self.cost_usd / self.passed if self.cost_usd is not None and self.passed else None

    def mean_tokens(self, kind: str) -> float | None:
        """Mean per reporting trial of "input", "output", "cache_read" or "cache_write" tokens."""
        total: int = getattr(self, f"{kind}_tokens")
        return total / self.token_trials if self.token_trials else None


@dataclass(frozen=True, slots=True)
class Runtime:
    """Wall-clock seconds per trial on the analysis set; every figure None without trials."""

    trials: int
    total_s: float
    mean_s: float | None
    median_s: float | None
    p90_s: float | None
    """90th percentile (nearest-rank): the slow tail that decides CI time."""
    max_s: float | None
    phases: Mapping[str, float]
    """Mean seconds per phase (workspace_s, agent_s, validation_s, scoring_s, ...) over trials having it."""


@dataclass(frozen=True, slots=True)
class TreatmentReport:
    """Everything about one treatment."""

    name: str
    is_baseline: bool
    counts: Counts
    """Raw-set counts, with the noise categories."""
    analysis: TreatmentStats
    """Analysis-set statistics (``pass_rate``, ``mean_score``, pass@k maps, ``pooled`` Wilson, per-task
    summaries); its k plan is the one shared by all treatments (``Analysis.plan``)."""
    raw: TreatmentStats
    """The same on the raw set (excluded trials kept), for the sensitivity section."""
    passk: tuple[PassK, ...]
    """One row per k of ``Analysis.plan.ks`` (analysis set)."""
    spend: Spend
    runtime: Runtime

    @property
    def pass_rate_shift(self) -> float:
        """Analysis minus raw mean pass rate (the sensitivity to excluding noise); NaN when either is."""
        return self.analysis.pass_rate.mean - self.raw.pass_rate.mean


@dataclass(frozen=True, slots=True)
class Cell:
    """One task under one treatment. Statistics use the analysis set; ``links`` list every trial."""

    task: str
    treatment: str
    trials: int
    """Trials in the analysis set (excluded ones removed)."""
    scored: int
    """Analysis trials with a verdict (n of pass@k)."""
    passed: int
    """c of pass@k."""
    pass_rate: float
    """passed / scored; NaN when nothing was scored."""
    wilson: Rate
    """Wilson interval of the pass rate over this cell's trials."""
    mean_score: float
    """Mean weighted score of scored trials; NaN when none has a score."""
    excluded: int
    flagged: int
    pass_at_k: Mapping[int, float]
    """Per k of the shared plan; NaN when the cell has fewer than k scored trials."""
    pass_hat_k: Mapping[int, float]
    pass_hat_k_observed: Mapping[int, float]
    mean_duration_s: float | None
    mean_cost_usd: float | None
    links: tuple[TrialLink, ...]
    """Every trial of the cell, excluded ones too, sorted by (experiment, trial, case id)."""


@dataclass(frozen=True, slots=True)
class DimensionStats:
    """One rubric dimension under one treatment, over analysis trials where it applied (N/A left out)."""

    dimension: str
    treatment: str
    n: int
    """Trials where the dimension was scored."""
    not_applicable: int
    """Scored trials where the dimension was N/A."""
    mean: float
    """Mean over trials (descriptive); NaN when n == 0."""
    sd: float
    """Standard deviation over trials; NaN below two."""
    pass_share: float
    """Share of trials with full marks (score >= 1: every check of the dimension passed); NaN when n == 0."""
    difference: PairedComparison | Insufficient | None
    """Treatment minus baseline of per-task dimension means, paired over tasks, with interval and p;
    None for the baseline itself (and when there is no baseline). Above 16 tasks its p-value comes from
    2,000 Monte Carlo sign patterns (descriptive; verdicts use 20,000)."""


@dataclass(frozen=True, slots=True)
class DimensionWeight:
    """The weight a profile gives a dimension, and its share of the profile's total weight."""

    dimension: str
    profile: str
    weight: float
    share: float


@dataclass(frozen=True, slots=True)
class FailureCause:
    """Why analysis-set trials of one treatment failed or errored: one row per (kind, name)."""

    treatment: str
    kind: str
    """"hard_failure" (rubric), "check" (a failed validation check), "error" (errored trial, by error
    type) or "unexplained" (failed with no failed check or hard failure recorded)."""
    name: str
    trials: int
    examples: tuple[str, ...]
    """Up to five case ids, for finding the trials."""


@dataclass(frozen=True, slots=True)
class JudgeRow:
    """One judge dimension under one treatment (analysis set)."""

    treatment: str
    dimension: str
    n: int
    mean: float
    sd: float


@dataclass(frozen=True, slots=True)
class JudgeOverlay:
    """LLM-judge scores shown beside the rule-based scores, never replacing them. Judge dimensions are
    the record dimensions marked ``"source": "judge"``; they are left out of the rubric tables."""

    dimensions: tuple[str, ...]
    rows: tuple[JudgeRow, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer for one treatment against the baseline (see the module docstring for the rules)."""

    treatment: str
    baseline: str
    label: Label
    reason: str
    """One sentence with the figures that decided the label."""
    pass_rate: PairedComparison | Insufficient
    """Paired per-task pass-rate comparison on the analysis set (decides the label)."""
    score: PairedComparison | Insufficient
    """Paired per-task mean weighted score comparison on the analysis set (reported beside it)."""
    raw_label: Label
    """The label the raw set would give (excluded trials kept)."""
    strict_label: Label
    """The label the strict set would give (flagged trials dropped too)."""
    power: SampleSize | None
    """Tasks needed to detect ``Analysis.effect`` at ``alpha`` and power 0.8, from the observed spread
    of per-task differences; None when there was no comparison."""

    @property
    def decisive(self) -> bool:
        return self.label in ("improvement", "regression")


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything the reports show, aggregated. Treatments are listed baseline first, then by name."""

    baseline: str
    baseline_found: bool
    """False when no record has the baseline treatment: every verdict is then "Insufficient clean data"
    and ``notes`` says which treatments exist."""
    treatments: tuple[str, ...]
    tasks: tuple[str, ...]
    """All tasks of the raw set, sorted."""
    experiments: tuple[str, ...]
    """Experiment ids the records came from, sorted (more than one after merging shards)."""
    counts: Counts
    """Raw-set counts over all treatments."""
    plan: KPlan
    """The ks reported (shared by all treatments, analysis set) and why k was clamped, if it was."""
    reports: tuple[TreatmentReport, ...]
    """One per treatment, in ``treatments`` order."""
    cells: Mapping[tuple[str, str], Cell]
    """(task, treatment) -> Cell, for every pair with at least one trial (raw set)."""
    verdicts: tuple[Verdict, ...]
    """One per treatment other than the baseline, in ``treatments`` order."""
    dimensions: tuple[str, ...]
    """Rubric dimension names in rubric order (judge dimensions excluded)."""
    dimension_stats: tuple[DimensionStats, ...]
    """One per (dimension, treatment) in ``dimensions`` x ``treatments`` order."""
    weights: tuple[DimensionWeight, ...]
    """Dimension weights per profile, sorted by (profile, dimension)."""
    excluded: tuple[TrialLink, ...]
    """Excluded trials (left out of the analysis set) with reason and evidence."""
    flagged: tuple[TrialLink, ...]
    """Flagged trials (kept, but suspect) with reason and evidence."""
    failures: tuple[FailureCause, ...]
    """Failure attribution on the analysis set, sorted by treatment then most trials first."""
    judge: JudgeOverlay | None
    """None when no record carries judge dimensions."""
    problems: tuple[str, ...]
    """Messages about records that could not be read (passed in by the loader)."""
    notes: tuple[str, ...]
    """Plain sentences the reports must show (missing baseline, ...)."""
    alpha: float
    effect: float
    """Difference (pass-rate points as a fraction) the power figures are computed for."""

    def report(self, treatment: str) -> TreatmentReport:
        """The report of *treatment*; KeyError naming the known treatments when absent."""
        for r in self.reports:
            if r.name == treatment:
                return r
        raise KeyError(f"no treatment {treatment!r} in these records (known: {', '.join(self.treatments) or 'none'})")

    def verdict(self, treatment: str) -> Verdict | None:
        """The verdict of *treatment* against the baseline; None for the baseline or an unknown name."""
        return next((v for v in self.verdicts if v.treatment == treatment), None)

    def dimension(self, name: str, treatment: str) -> DimensionStats | None:
        return next((d for d in self.dimension_stats if d.dimension == name and d.treatment == treatment), None)


# --- building ---------------------------------------------------------------------------------------------


@dataclass
class _Acc:
    """Mutable accumulators of one pass over the records."""

    raw: list[TrialOutcome] = field(default_factory=list)
    analysis: list[TrialOutcome] = field(default_factory=list)
    strict: list[TrialOutcome] = field(default_factory=list)
    verdicts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    categories: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    excluded_reasons: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    flagged_reasons: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    links: dict[tuple[str, str], list[TrialLink]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0]))
    costs: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    phases: dict[str, dict[str, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    cell_durations: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    cell_costs: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    dim_order: dict[str, int] = field(default_factory=dict)
    # Nested by treatment (and task) rather than keyed by tuples: each record looks its dicts up once,
    # not once per dimension, in the hottest loop of the analysis.
    # treatment -> dimension -> [not applicable, n, sum, sum of squares, full marks]
    dim_sums: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    # (task, treatment) -> dimension -> [n, sum]
    dim_tasks: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)
    judge: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    judge_names: dict[str, None] = field(default_factory=dict)
    # profile -> dimension -> weight (the first finite weight seen)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: dict[tuple[str, str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    analysis_passed: Counter[str] = field(default_factory=Counter)
    excluded: list[TrialLink] = field(default_factory=list)
    flagged: list[TrialLink] = field(default_factory=list)
    experiments: set[str] = field(default_factory=set)


def build_analysis(
    records: Iterable[TrialRecord],
    *,
    baseline: str = "CONTROL",
    problems: Sequence[str] = (),
    files: Mapping[tuple[str, str], TrialFiles] | None = None,
    alpha: float = 0.05,
    effect: float = DEFAULT_EFFECT,
    max_k: int = DEFAULT_MAX_K,
) -> Analysis:
    """Aggregate *records* into an ``Analysis`` against *baseline*.

    *files* maps (experiment_id, case_id) to the trial's files for links. Never raises on data: no
    records, a missing baseline, one task or every trial excluded give "Insufficient clean data"
    verdicts and NaN figures with the reason in the model.
    """
    files = files or {}
    acc = _Acc()
    for record in records:
        _add(acc, record, files.get((record.experiment_id, record.case_id)))

    treatments = sorted({o.treatment for o in acc.raw}, key=lambda t: (t != baseline, t))
    baseline_found = baseline in treatments
    tasks = tuple(sorted({o.task for o in acc.raw}))
    analysis_stats = {s.treatment: s for s in summarize_treatments(acc.analysis, max_k)}
    raw_stats = {s.treatment: s for s in summarize_treatments(acc.raw, max_k)}
    plan = next(iter(analysis_stats.values())).plan if analysis_stats else _empty_plan(max_k)
    task_summaries = {(s.task, s.treatment): s for st in analysis_stats.values() for s in st.tasks}

    counts = {t: _counts(acc, (t,)) for t in treatments}
    reports = tuple(
        TreatmentReport(
            name=t,
            is_baseline=t == baseline,
            counts=counts[t],
            analysis=analysis_stats.get(t) or _empty_stats(t, plan),
            raw=raw_stats[t],
            passk=_passk(analysis_stats.get(t), plan),
            spend=_spend(acc, t),
            runtime=_runtime(acc, t),
        )
        for t in treatments
    )
    cells = {key: _cell(acc, key, task_summaries.get(key), plan) for key in sorted(acc.links)}
    notes: list[str] = []
    if not acc.raw:
        notes.append("no trial records were found, so there is nothing to compare")
    elif not baseline_found:
        notes.append(
            f"baseline {baseline!r} has no trials in these records (treatments found: {', '.join(treatments)}); "
            f"choose one of them as the baseline (--baseline NAME)"
        )
    sets = _Sets(
        tuple(task_summaries.values()),
        tuple(s for st in raw_stats.values() for s in st.tasks),
        summarize_tasks(acc.strict) if acc.excluded or acc.flagged else (),
    )
    verdicts = tuple(
        _verdict(sets, t, baseline, baseline_found, counts, alpha, effect) for t in treatments if t != baseline
    )
    # Rubric order (a dimension's position in the records' lists), then name: independent of record order.
    dim_names = tuple(sorted(acc.dim_order, key=lambda name: (acc.dim_order[name], name)))
    return Analysis(
        baseline=baseline,
        baseline_found=baseline_found,
        treatments=tuple(treatments),
        tasks=tasks,
        experiments=tuple(sorted(acc.experiments)),
        counts=_counts(acc, treatments),
        plan=plan,
        reports=reports,
        cells=MappingProxyType(cells),
        verdicts=verdicts,
        dimensions=dim_names,
        dimension_stats=_dimension_stats(acc, dim_names, treatments, baseline, baseline_found),
        weights=_weights(acc),
        excluded=tuple(sorted(acc.excluded, key=_link_order)),
        flagged=tuple(sorted(acc.flagged, key=_link_order)),
        failures=_failures(acc, treatments),
        judge=_judge(acc, treatments),
        problems=tuple(problems),
        notes=tuple(notes),
        alpha=alpha,
        effect=effect,
    )


def finite_number(value: Any) -> float | None:
    """*value* as a finite float, else None (unknown): NaN, infinities, booleans and non-numbers included."""
    if type(value) is float:  # the common case, checked first: this runs for every score of every trial
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _add(acc: _Acc, record: TrialRecord, files: TrialFiles | None) -> None:
    noise = noise_of(record)
    category = str(noise.get("category", "included"))
    reason = str(noise.get("reason", ""))
    treatment, task = record.treatment, record.task
    link = TrialLink(
        record.experiment_id,
        record.case_id,
        task,
        treatment,
        record.trial,
        record.verdict,
        finite_number(record.weighted_score),
        category,
        reason,
        str(noise.get("source", "structured")),
        noise.get("evidence") or {},
        files,
    )
    acc.experiments.add(record.experiment_id)
    key = (task, treatment)
    acc.links[key].append(link)
    acc.verdicts[treatment][record.verdict] += 1
    acc.categories[treatment][category] += 1
    scored = record.verdict != "error"
    # An errored trial is unscored on both counts (stats.outcomes_from_records does the same).
    outcome = (
        TrialOutcome(task, treatment, record.trial, record.verdict == "passed", link.weighted_score)
        if scored
        else TrialOutcome(task, treatment, record.trial, None, None)
    )
    acc.raw.append(outcome)
    if category == "excluded":
        acc.excluded_reasons[treatment][reason] += 1
        acc.excluded.append(link)
        return
    if category == "flagged":
        acc.flagged_reasons[treatment][reason] += 1
        acc.flagged.append(link)
    else:
        acc.strict.append(outcome)
    acc.analysis.append(outcome)
    acc.analysis_passed[treatment] += record.verdict == "passed"
    _add_spend(acc, record, treatment, key)
    if scored:
        _add_dimensions(acc, record, treatment, key)
    _add_failures(acc, record, treatment)


def _add_spend(acc: _Acc, record: TrialRecord, treatment: str, key: tuple[str, str]) -> None:
    duration = record.duration_s
    if type(duration) is not float:
        duration = float(duration)
    acc.durations[treatment].append(duration)
    acc.cell_durations[key].append(duration)
    phases = acc.phases[treatment]
    for name, seconds in record.phases.items():
        if (value := finite_number(seconds)) is not None:
            phases[name].append(value)
    traj = record.trajectory
    if not traj:
        return
    tokens = traj.get("tokens")
    if isinstance(tokens, Mapping):
        sums = acc.tokens[treatment]
        sums[0] += 1
        sums[1] += int(tokens.get("input") or 0)
        sums[2] += int(tokens.get("output") or 0)
        sums[3] += int(tokens.get("cache_read") or 0)
        sums[4] += int(tokens.get("cache_write") or 0)
    cost = finite_number(traj.get("cost_usd"))
    if cost is not None:
        acc.costs[treatment].append(cost)
        acc.cell_costs[key].append(cost)


def _add_dimensions(acc: _Acc, record: TrialRecord, treatment: str, key: tuple[str, str]) -> None:
    # The hottest loop at 100,000 trials (several dimensions each): plain sums, no objects per score, and
    # the per-treatment and per-cell dicts looked up once per record.
    t_sums = acc.dim_sums.setdefault(treatment, {})
    cell = acc.dim_tasks.setdefault(key, {})
    order = acc.dim_order
    weights = acc.weights.setdefault(record.profile, {}) if record.profile is not None else None
    for position, dim in enumerate(record.dimensions):
        name = dim.get("name", "")
        if type(name) is not str:
            name = str(name)
        score = dim.get("score")
        if type(score) is not float or not math.isfinite(score):
            score = finite_number(score)
        if dim.get("source") == JUDGE_SOURCE:
            acc.judge_names.setdefault(name)
            if score is not None:
                acc.judge[(name, treatment)].append(score)
            continue
        if position < order.get(name, position + 1):
            order[name] = position
        if weights is not None and name not in weights and (weight := finite_number(dim.get("weight"))) is not None:
            weights[name] = weight
        sums = t_sums.get(name)
        if sums is None:
            sums = t_sums[name] = [0, 0, 0.0, 0.0, 0]
        if score is None:
            sums[0] += 1
            continue
        sums[1] += 1
        sums[2] += score
        sums[3] += score * score
        sums[4] += score >= 1.0
        per_task = cell.get(name)
        if per_task is None:
            per_task = cell[name] = [0, 0.0]
        per_task[0] += 1
        per_task[1] += score


def _add_failures(acc: _Acc, record: TrialRecord, treatment: str) -> None:
    if record.verdict == "passed":
        return
    causes: list[tuple[str, str]] = []
    if record.verdict == "error":
        causes = [("error", str(e.get("type") or "error")) for e in record.errors] or [("error", "unknown")]
    else:
        causes = [("hard_failure", h) for h in record.hard_failures]
        causes += [("check", str(c.get("name"))) for c in record.checks if c.get("status") == "failed"]
        causes = causes or [("unexplained", "no failed check or hard failure recorded")]
    for kind, name in dict.fromkeys(causes):
        acc.failures[(treatment, kind, name)].append(record.case_id)


def _link_order(link: TrialLink) -> tuple[str, str, str, int, str]:
    return (link.treatment, link.task, link.experiment_id, link.trial, link.case_id)


def _counts(acc: _Acc, treatments: Iterable[str]) -> Counts:
    verdicts: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    for t in treatments:
        verdicts.update(acc.verdicts[t])
        categories.update(acc.categories[t])
        excluded.update(acc.excluded_reasons[t])
        flagged.update(acc.flagged_reasons[t])
    return Counts(
        trials=sum(verdicts.values()),
        passed=verdicts["passed"],
        failed=verdicts["failed"],
        errored=verdicts["error"],
        included=categories["included"],
        flagged=categories["flagged"],
        excluded=categories["excluded"],
        excluded_reasons=dict(sorted(excluded.items())),
        flagged_reasons=dict(sorted(flagged.items())),
    )


def _empty_plan(max_k: int) -> KPlan:
    return KPlan((), max_k, "no task has a scored trial in the analysis set, so no pass@k can be estimated")


def _empty_stats(treatment: str, plan: KPlan) -> TreatmentStats:
    """A treatment whose every trial was excluded: all figures NaN, no tasks."""
    nothing = Estimate(math.nan, math.nan, math.nan, math.nan, 0)
    return TreatmentStats(treatment, (), plan, nothing, nothing, {}, {}, {}, Rate(0, 0, math.nan, math.nan, math.nan))


def _passk(stats: TreatmentStats | None, plan: KPlan) -> tuple[PassK, ...]:
    nothing = Estimate(math.nan, math.nan, math.nan, math.nan, 0)
    if stats is None:
        return tuple(PassK(k, nothing, nothing, nothing) for k in plan.ks)
    return tuple(
        PassK(
            k,
            stats.pass_at_k.get(k, nothing),
            stats.pass_hat_k.get(k, nothing),
            stats.pass_hat_k_observed.get(k, nothing),
        )
        for k in plan.ks
    )


def _spend(acc: _Acc, treatment: str) -> Spend:
    sums = acc.tokens.get(treatment, [0, 0, 0, 0, 0])
    costs = acc.costs.get(treatment, [])
    analysis = acc.categories[treatment]
    return Spend(
        trials=analysis["included"] + analysis["flagged"],
        token_trials=sums[0],
        input_tokens=sums[1],
        output_tokens=sums[2],
        cache_read_tokens=sums[3],
        cache_write_tokens=sums[4],
        cost_trials=len(costs),
        cost_usd=math.fsum(costs) if costs else None,
        passed=acc.analysis_passed[treatment],
    )


def _runtime(acc: _Acc, treatment: str) -> Runtime:
    durations = sorted(acc.durations.get(treatment, []))
    phases = {name: math.fsum(v) / len(v) for name, v in acc.phases.get(treatment, {}).items() if v}
    if not durations:
        return Runtime(0, 0.0, None, None, None, None, phases)
    n = len(durations)
    total = math.fsum(durations)
    return Runtime(
        trials=n,
        total_s=total,
        mean_s=total / n,
        median_s=statistics.median(durations),
        p90_s=durations[max(0, math.ceil(0.9 * n) - 1)],
        max_s=durations[-1],
        phases=phases,
    )


def _cell(acc: _Acc, key: tuple[str, str], summary: TaskSummary | None, plan: KPlan) -> Cell:
    task, treatment = key
    links = tuple(sorted(acc.links[key], key=_link_order))
    durations = acc.cell_durations.get(key, [])
    costs = acc.cell_costs.get(key, [])
    n = summary.scored if summary else 0
    c = summary.passed if summary else 0
    nan_map = dict.fromkeys(plan.ks, math.nan)
    return Cell(
        task=task,
        treatment=treatment,
        trials=summary.trials if summary else 0,
        scored=n,
        passed=c,
        pass_rate=summary.pass_rate if summary else math.nan,
        wilson=summary.wilson() if summary else Rate(0, 0, math.nan, math.nan, math.nan),
        mean_score=summary.mean_score if summary else math.nan,
        excluded=sum(link.category == "excluded" for link in links),
        flagged=sum(link.category == "flagged" for link in links),
        pass_at_k={k: summary.pass_at_k(k) for k in plan.ks} if summary else nan_map,
        pass_hat_k={k: summary.pass_hat_k(k) for k in plan.ks} if summary else nan_map,
        pass_hat_k_observed={k: summary.pass_hat_k_observed(k) for k in plan.ks} if summary else nan_map,
        mean_duration_s=math.fsum(durations) / len(durations) if durations else None,
        mean_cost_usd=math.fsum(costs) / len(costs) if costs else None,
        links=links,
    )


def label_of(comparison: PairedComparison | Insufficient, alpha: float) -> Label:
    """The label of one paired comparison alone (without the data-quality rules of a verdict)."""
    if isinstance(comparison, Insufficient):
        return INSUFFICIENT
    # Both the test and the interval must exclude "no difference"; near the boundary they can disagree,
    # and then the honest answer is that no difference was shown.
    if comparison.p_value <= alpha and (comparison.low > 0 or comparison.high < 0):
        return "improvement" if comparison.mean_difference > 0 else "regression"
    return "no significant difference"


def _compare(
    summaries: Sequence[TaskSummary], baseline: str, treatment: str, metric: Metric
) -> PairedComparison | Insufficient:
    return compare_treatments(summaries, baseline, treatment, metric, min_tasks=MIN_TASKS)


@dataclass(frozen=True, slots=True)
class _Sets:
    """Per-task summaries of the three sets, computed once for all verdicts."""

    analysis: tuple[TaskSummary, ...]
    raw: tuple[TaskSummary, ...]
    strict: tuple[TaskSummary, ...]


def _verdict(
    sets: _Sets,
    treatment: str,
    baseline: str,
    baseline_found: bool,
    counts: Mapping[str, Counts],
    alpha: float,
    effect: float,
) -> Verdict:
    if not baseline_found:
        missing = Insufficient(f"baseline {baseline!r} has no trials", 0, MIN_TASKS)
        return Verdict(
            treatment,
            baseline,
            INSUFFICIENT,
            f"baseline {baseline!r} has no trials to compare {treatment!r} with; choose a baseline (--baseline NAME)",
            missing,
            missing,
            INSUFFICIENT,
            INSUFFICIENT,
            None,
        )
    pass_rate = _compare(sets.analysis, baseline, treatment, "pass_rate")
    score = _compare(sets.analysis, baseline, treatment, "mean_score")
    label = label_of(pass_rate, alpha)
    noisy = any(counts[t].excluded or counts[t].flagged for t in (baseline, treatment))
    raw_label = label_of(_compare(sets.raw, baseline, treatment, "pass_rate"), alpha) if noisy else label
    strict_label = label_of(_compare(sets.strict, baseline, treatment, "pass_rate"), alpha) if noisy else label
    power = tasks_needed(pass_rate.sd, effect, alpha) if isinstance(pass_rate, PairedComparison) else None
    lost = {t: counts[t].excluded_share for t in (baseline, treatment)}
    worst = max(lost, key=lambda t: (lost[t], t))
    if isinstance(pass_rate, Insufficient):
        excluded = ", ".join(f"{counts[t].excluded} of {counts[t].trials} {t} trials" for t in (baseline, treatment))
        reason = f"{pass_rate.reason}; excluded as noise: {excluded}"
    elif lost[worst] > EXCLUDED_SHARE_LIMIT:
        label = INCONCLUSIVE
        reason = (
            f"{counts[worst].excluded} of {counts[worst].trials} {worst} trials were excluded as noise "
            f"(more than {EXCLUDED_SHARE_LIMIT:.0%}); the rest are not a fair sample of the tasks"
        )
    elif label != raw_label or label != strict_label:
        reason = (
            f"on the analysis set the answer is {label!r}, but with excluded trials kept it is {raw_label!r} "
            f"and without flagged trials it is {strict_label!r}: the conclusion depends on noisy trials"
        )
        label = INCONCLUSIVE
    else:
        reason = _figures(pass_rate, alpha, label)
    return Verdict(treatment, baseline, label, reason, pass_rate, score, raw_label, strict_label, power)


def _figures(c: PairedComparison, alpha: float, label: Label) -> str:
    why = (
        f"p = {c.p_value:.3g} <= {alpha} and the interval excludes 0"
        if label in ("improvement", "regression")
        else f"p = {c.p_value:.3g} (alpha {alpha}) or the interval includes 0"
    )
    return (
        f"pass rate {c.mean_difference:+.1%} per task on average "
        f"({c.confidence:.0%} CI {c.low:+.1%} to {c.high:+.1%}) over {c.n} paired tasks "
        f"({c.improved} improved, {c.regressed} regressed, {c.unchanged} unchanged); {why}"
    )


def _dimension_stats(
    acc: _Acc, names: Sequence[str], treatments: Sequence[str], baseline: str, baseline_found: bool
) -> tuple[DimensionStats, ...]:
    per_task: dict[str, list[TaskSummary]] = defaultdict(list)
    # By (treatment, task): the order the paired comparisons have always seen their tasks in.
    for (task, treatment), cell in sorted(acc.dim_tasks.items(), key=lambda item: (item[0][1], item[0][0])):
        for name, (n, total) in cell.items():
            per_task[name].append(TaskSummary(task, treatment, n, 0, 0, n, math.nan, total / n))
    rows = []
    for name in names:
        for t in treatments:
            na, n, total, squares, full = acc.dim_sums.get(t, {}).get(name, (0, 0, 0.0, 0.0, 0))
            mean = total / n if n else math.nan
            # Scores lie in [0, 1], so the sum-of-squares form loses nothing that matters here.
            sd = math.sqrt(max(0.0, (squares - n * mean * mean) / (n - 1))) if n > 1 else math.nan
            difference: PairedComparison | Insufficient | None = None
            if baseline_found and t != baseline:
                # Dimension differences show size and interval; their p-values are descriptive, so fewer
                # Monte Carlo draws (above 16 tasks) keep many dimensions x treatments fast.
                difference = compare_treatments(
                    per_task[name], baseline, t, "mean_score", min_tasks=MIN_TASKS, draws=_DIMENSION_DRAWS
                )
            rows.append(DimensionStats(name, t, n, na, mean, sd, full / n if n else math.nan, difference))
    return tuple(rows)


def _weights(acc: _Acc) -> tuple[DimensionWeight, ...]:
    rows: list[DimensionWeight] = []
    for profile, weights in sorted(acc.weights.items()):
        total = sum(weights.values())
        rows.extend(
            DimensionWeight(name, profile, weight, weight / total if total else math.nan)
            for name, weight in sorted(weights.items())
        )
    return tuple(rows)


def _failures(acc: _Acc, treatments: Sequence[str]) -> tuple[FailureCause, ...]:
    order = {t: i for i, t in enumerate(treatments)}
    rows = [
        FailureCause(t, kind, name, len(cases), tuple(sorted(cases)[:_EXAMPLES]))
        for (t, kind, name), cases in acc.failures.items()
    ]
    return tuple(sorted(rows, key=lambda r: (order[r.treatment], -r.trials, r.kind, r.name)))


def _judge(acc: _Acc, treatments: Sequence[str]) -> JudgeOverlay | None:
    if not acc.judge_names:
        return None
    rows = []
    names = tuple(sorted(acc.judge_names))
    for name in names:
        for t in treatments:
            values = acc.judge.get((name, t), [])
            n = len(values)
            rows.append(
                JudgeRow(
                    t,
                    name,
                    n,
                    math.fsum(values) / n if n else math.nan,
                    statistics.stdev(values) if n > 1 else math.nan,
                )
            )
    return JudgeOverlay(names, tuple(rows))
