"""One aggregated model of everything the reports show (scaffold.reports.model), built in one pass.

``build_analysis(records, baseline=...)`` returns a frozen ``Analysis``; the renderers read only it. The
sets of trials are described in scaffold.reports.model, the verdict rules in scaffold.reports.verdicts.

Pure: no files, pytest, docker or subprocess. Linear in the number of trials, except the percentiles of
runtime (a sort per treatment), the order of the trial list (already sorted when read by the loader,
so close to linear) and the paired tests, whose cost depends on tasks, not trials.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, cast

import msgspec

from scaffold.experiment.sequential import Design, sequential_verdicts
from scaffold.records import JudgeInfo, TrialRecord
from scaffold.reports.comparable import Identities, mismatch
from scaffold.reports.format import known
from scaffold.reports.model import (
    Analysis,
    Cell,
    Counts,
    DimensionStats,
    DimensionWeight,
    FailureCause,
    JudgeOverlay,
    JudgeReason,
    JudgeRow,
    JudgeSpend,
    JudgeStatusCounts,
    Label,
    PassK,
    RawTotals,
    Spend,
    Timing,
    TreatmentReport,
    TreatmentVerdict,
    TrialFiles,
    TrialLink,
    UnreadableRecord,
)
from scaffold.reports.retries import RetryTally
from scaffold.reports.skills import SkillTally
from scaffold.reports.verdicts import MIN_TASKS, TaskSets, decide_all, decide_sequential
from scaffold.rubrics import JUDGE_SOURCE
from scaffold.stats import (
    Estimate,
    Insufficient,
    KPlan,
    PairedComparison,
    Rate,
    TaskSummary,
    TreatmentStats,
    TrialOutcome,
    calibrate,
    compare_treatments,
    summarize_tasks,
    summarize_treatments,
)
from scaffold.stats.passk import DEFAULT_MAX_K
from scaffold.stats.power import DEFAULT_EFFECT

__all__ = ["build_analysis"]

_EXAMPLES: Final = 5
_DIMENSION_DRAWS: Final = 2_000
# The rule dimension a judge dimension re-scores when their names differ: the generic judge's
# task_completion is the rule rubric's completion seen by a model. Otherwise a judge dimension is
# compared with the rule dimension of its own name (the comet judge's artifact_quality, spec_drift,
# main_flow), when the records have one.
_RULE_TWIN: Final = {"task_completion": "completion"}
_CALIBRATED: Final = "task_completion"
_JUDGE_STATUSES: Final = ("skipped", "failed")  # the order reasons are listed in


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
    # The judge (scaffold.records.JudgeInfo), raw set: statuses and reasons, and its own spend:
    # treatment -> [trials, token trials, input, output, latency trials, latency s], and the costs.
    judge_seen: bool = False
    judge_status: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    judge_reasons: Counter[tuple[str, str]] = field(default_factory=Counter)
    judge_spend: dict[str, list[Any]] = field(default_factory=dict)
    judge_costs: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    judge_samples: int = 0
    # Judge scores of analysis trials: (task, treatment) -> dimension -> [n, sum] for the paired
    # comparison; (dimension, treatment) -> [paired n, judge sum, rule sum] against the rule twin, and
    # the per-trial spreads; task_completion against the validators' verdict, trial by trial.
    judge_tasks: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)
    judge_pairs: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    judge_spread: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    calibration: list[tuple[float, bool]] = field(default_factory=list)
    # profile -> dimension -> weight (the first finite weight seen)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: dict[tuple[str, str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    analysis_passed: Counter[str] = field(default_factory=Counter)
    excluded: list[TrialLink] = field(default_factory=list)
    flagged: list[TrialLink] = field(default_factory=list)
    experiments: set[str] = field(default_factory=set)
    trials: list[TrialLink] = field(default_factory=list)
    # Pooled raw-set totals, per treatment and per (task, treatment): the weighted scores of scored
    # trials that have one and every trial's duration, summed exactly (math.fsum) at the end.
    raw_scores: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    raw_durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cell_raw_scores: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    cell_raw_durations: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    cell_verdicts: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    retries: RetryTally = field(default_factory=RetryTally)
    skills: SkillTally = field(default_factory=SkillTally)


def build_analysis(
    records: Iterable[TrialRecord],
    *,
    baseline: str = "CONTROL",
    problems: Sequence[UnreadableRecord | str] = (),
    files: Mapping[tuple[str, str], TrialFiles] | None = None,
    alpha: float = 0.05,
    effect: float = DEFAULT_EFFECT,
    max_k: int = DEFAULT_MAX_K,
    identities: Identities | None = None,
    sequential: Design | None = None,
) -> Analysis:
    """Aggregate *records* into an ``Analysis`` against *baseline*.

    *sequential*: the design of a run until decided (scaffold.experiment.sequential); its anytime-valid
    decisions then give the verdicts, and the fixed-design figures stay beside them as descriptions.

    *files* maps (experiment_id, case_id) to the trial's files for links. Never raises on data: no
    records, a missing baseline, one task or every trial excluded give "Insufficient clean data"
    verdicts and NaN figures with the reason in the model. Treatments that differ in more than the
    treatment (scaffold.reports.comparable) get "not comparable: <field> differs" verdicts.
    """
    files = files or {}
    acc = _Acc()
    # *identities*: already gathered from the same records (scaffold.reports.write checks them first).
    gathered, identities = identities is not None, identities or Identities()
    for record in records:
        _add(acc, record, files.get((record.experiment_id, record.case_id)))
        if not gathered:
            identities.add(record)

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
            totals=_totals(acc.verdicts[t], acc.raw_scores[t], acc.raw_durations[t]),
            identity=identities.identity(t),
            retries=acc.retries.report(t),
            skills=acc.skills.report(t),
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
    sets = TaskSets(
        tuple(task_summaries.values()),
        tuple(s for st in raw_stats.values() for s in st.tasks),
        summarize_tasks(acc.strict) if acc.excluded or acc.flagged else (),
        # Per (task, treatment): the bounds put these trials back as passes and as failures.
        MappingProxyType(dict(Counter((link.task, link.treatment) for link in acc.excluded))),
        MappingProxyType(dict(acc.retries.recovered)),
    )
    # Held to alpha as a family when several treatments are compared with one baseline (Holm).
    verdicts = decide_all(sets, treatments, baseline, baseline_found, counts, alpha, effect)
    if sequential is not None and baseline_found:
        codes = {
            (o.task, o.treatment, o.trial): ("E" if o.passed is None else "P" if o.passed else "F") for o in acc.raw
        }
        codes.update({(link.task, link.treatment, link.trial): "X" for link in acc.excluded})
        decided = sequential_verdicts(
            sequential, {"\t".join(map(str, k)): c for k, c in codes.items()}, tasks, treatments
        )
        verdicts = tuple(decide_sequential(v, decided[v.treatment], sequential, counts) for v in verdicts)
        notes.append(
            f"this run stopped as soon as it was decided (--until-decided, at most {sequential.max_count} trials per "
            f"task and treatment): the verdicts are those of the anytime-valid tests; the fixed-design p-values and "
            f"intervals in the tables describe the trials run and are not valid after a data-dependent stop"
        )
    verdicts = tuple(_comparable(v, identities) for v in verdicts)
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
        judge=_judge(acc, treatments, baseline, baseline_found),
        trials=tuple(sorted(acc.trials, key=_record_order)),
        problems=tuple(p if isinstance(p, UnreadableRecord) else _unreadable(p) for p in problems),
        notes=tuple(notes),
        alpha=alpha,
        effect=effect,
    )


def _comparable(verdict: TreatmentVerdict, identities: Identities) -> TreatmentVerdict:
    """*verdict*, or "not comparable: <field> differs" when more than the treatment differs between the two
    sides (scaffold.reports.comparable). No label that claims an effect survives, not the raw or strict
    set's, nor the exclusion bounds'; the measured figures stay in the model, under a reason that says
    they are not the treatment's effect."""
    found = mismatch(
        verdict.baseline,
        identities.identity(verdict.baseline),
        verdict.treatment,
        identities.identity(verdict.treatment),
    )
    if found is None:
        return verdict
    label = cast(Label, found.label)
    return msgspec.structs.replace(
        verdict,
        label=label,
        on_tasks_label=label,
        on_tasks_reason="",
        reason=f"{found.describe()}; the difference measured is not the treatment's effect, so no verdict is given",
        raw_label=label,
        strict_label=label,
        exclusions=None,
        mismatch=found,
    )


def _unreadable(message: str) -> UnreadableRecord:
    """A problem given as a message ("file: reason") rather than as the loader's UnreadableRecord."""
    file, _, reason = message.partition(": ")
    return UnreadableRecord(file, None, reason or message)


def _add(acc: _Acc, record: TrialRecord, files: TrialFiles | None) -> None:
    noise = record.noise
    category, reason = noise.category, noise.reason
    treatment, task, verdict = record.treatment, record.task, record.verdict
    failed = verdict == "failed"
    link = TrialLink(
        record.experiment_id,
        record.case_id,
        task,
        treatment,
        record.trial,
        verdict,
        known(record.weighted_score),
        category,
        reason,
        noise.source,
        noise.evidence,
        files,
        record.hard_failures,
        tuple(c.name for c in record.checks if c.status == "failed") if failed else (),
        record.errors,
        record.changes.total if record.changes is not None else None,
    )
    acc.experiments.add(record.experiment_id)
    acc.retries.add(record)
    acc.skills.add(record, analysed=category != "excluded")
    acc.trials.append(link)
    key = (task, treatment)
    acc.links[key].append(link)
    acc.verdicts[treatment][verdict] += 1
    acc.cell_verdicts[key][verdict] += 1
    acc.categories[treatment][category] += 1
    scored = verdict != "error"
    duration = float(record.duration_s)
    acc.raw_durations[treatment].append(duration)
    acc.cell_raw_durations[key].append(duration)
    if scored and record.weighted_score is not None:
        # Kept as it is (NaN included: the pooled mean is then N/A, as it always was in summary.md).
        acc.raw_scores[treatment].append(record.weighted_score)
        acc.cell_raw_scores[key].append(record.weighted_score)
    # An errored trial is unscored on both counts (stats.outcomes_from_records does the same).
    outcome = (
        TrialOutcome(task, treatment, record.trial, verdict == "passed", link.weighted_score)
        if scored
        else TrialOutcome(task, treatment, record.trial, None, None)
    )
    acc.raw.append(outcome)
    if record.judge is not None:
        _add_judge_run(acc, record.judge, treatment)
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
    acc.analysis_passed[treatment] += verdict == "passed"
    _add_spend(acc, record, treatment, key, duration)
    if scored:
        _add_dimensions(acc, record, treatment, key)
    _add_failures(acc, link, treatment)


def _add_spend(acc: _Acc, record: TrialRecord, treatment: str, key: tuple[str, str], duration: float) -> None:
    acc.durations[treatment].append(duration)
    acc.cell_durations[key].append(duration)
    phases = acc.phases[treatment]
    for name, seconds in record.phases.items():
        if (value := known(seconds)) is not None:
            phases[name].append(value)
    traj = record.trajectory
    if traj is None:
        return
    tokens = traj.tokens
    if tokens is not None:
        sums = acc.tokens[treatment]
        sums[0] += 1
        sums[1] += tokens.input
        sums[2] += tokens.output
        sums[3] += tokens.cache_read
        sums[4] += tokens.cache_write
    cost = known(traj.cost_usd)
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
    judged: dict[str, float] | None = None
    for position, dim in enumerate(record.dimensions):
        name = dim.name
        score = dim.score
        if score is not None and not math.isfinite(score):
            score = None
        if dim.source == JUDGE_SOURCE:
            acc.judge_names.setdefault(name)
            if score is not None:
                acc.judge[(name, treatment)].append(score)
                judged = judged if judged is not None else {}
                judged[name] = score
            continue
        if position < order.get(name, position + 1):
            order[name] = position
        if weights is not None and name not in weights and (weight := known(dim.weight)) is not None:
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
    if judged:
        _add_judge_scores(acc, record, judged, treatment, key)


def _add_judge_run(acc: _Acc, judge: JudgeInfo, treatment: str) -> None:
    """The judge's status and its own spend, for every trial (raw set): what it did and what it cost."""
    acc.judge_seen = True
    acc.judge_status[treatment][judge.status] += 1
    if judge.status in _JUDGE_STATUSES:
        acc.judge_reasons[(judge.status, judge.reason)] += 1
    acc.judge_samples = max(acc.judge_samples, judge.samples)
    sums = acc.judge_spend.get(treatment)
    if sums is None:
        sums = acc.judge_spend[treatment] = [0, 0, 0, 0, 0, 0.0]
    sums[0] += 1
    if judge.input_tokens is not None or judge.output_tokens is not None:
        sums[1] += 1
        sums[2] += judge.input_tokens or 0
        sums[3] += judge.output_tokens or 0
    if (cost := known(judge.cost_usd)) is not None:
        acc.judge_costs[treatment].append(cost)
    if (latency := known(judge.latency_s)) is not None:
        sums[4] += 1
        sums[5] += latency


def _add_judge_scores(
    acc: _Acc, record: TrialRecord, judged: Mapping[str, float], treatment: str, key: tuple[str, str]
) -> None:
    """One scored analysis trial's judge scores: per task (paired comparison), against the rule twin on the
    same trial, the judge's spread, and task_completion against the validators. Only records with judge
    scores come here, so the rule scores are gathered a second time only for them."""
    rule = {
        d.name: d.score
        for d in record.dimensions
        if d.source != JUDGE_SOURCE and d.score is not None and math.isfinite(d.score)
    }
    cell = acc.judge_tasks.setdefault(key, {})
    spread = record.judge.spread if record.judge is not None else {}
    for name, score in judged.items():
        per_task = cell.get(name)
        if per_task is None:
            per_task = cell[name] = [0, 0.0]
        per_task[0] += 1
        per_task[1] += score
        twin = rule.get(_RULE_TWIN.get(name, name))
        if twin is not None:
            pair = acc.judge_pairs.get((name, treatment))
            if pair is None:
                pair = acc.judge_pairs[(name, treatment)] = [0, 0.0, 0.0]
            pair[0] += 1
            pair[1] += score
            pair[2] += twin
        if (s := known(spread.get(name))) is not None:
            acc.judge_spread[(name, treatment)].append(s)
    if _CALIBRATED in judged:
        # The validators' verdict alone (every counted check passed), not the trial's verdict, which
        # hard failures of the rubric also decide: the judge is asked whether the task was done.
        counted = [c.status == "passed" for c in record.checks if c.status != "skipped"]
        if counted:
            acc.calibration.append((judged[_CALIBRATED], all(counted)))


def _add_failures(acc: _Acc, link: TrialLink, treatment: str) -> None:
    if link.verdict == "passed":
        return
    causes: list[tuple[str, str]] = []
    if link.verdict == "error":
        causes = [("error", e.type or "error") for e in link.errors] or [("error", "unknown")]
    else:
        causes = [("hard_failure", h) for h in link.hard_failures]
        causes += [("check", name) for name in link.failed_checks]
        causes = causes or [("unexplained", "no failed check or hard failure recorded")]
    for kind, name in dict.fromkeys(causes):
        acc.failures[(treatment, kind, name)].append(link.case_id)


def _record_order(link: TrialLink) -> tuple[str, str, int, str, str]:
    """The order records are read in (scaffold.reports.load): task, treatment, trial, experiment."""
    return (link.task, link.treatment, link.trial, link.experiment_id, link.case_id)


def _totals(verdicts: Counter[str], scores: Sequence[float], durations: Sequence[float]) -> RawTotals:
    return RawTotals(
        trials=sum(verdicts.values()),
        passed=verdicts["passed"],
        failed=verdicts["failed"],
        errored=verdicts["error"],
        mean_score=math.fsum(scores) / len(scores) if scores else None,
        mean_duration_s=math.fsum(durations) / len(durations) if durations else None,
    )


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


def _runtime(acc: _Acc, treatment: str) -> Timing:
    durations = sorted(acc.durations.get(treatment, []))
    phases = {name: math.fsum(v) / len(v) for name, v in acc.phases.get(treatment, {}).items() if v}
    if not durations:
        return Timing(0, 0.0, None, None, None, None, phases)
    n = len(durations)
    total = math.fsum(durations)
    return Timing(
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
        totals=_totals(acc.cell_verdicts[key], acc.cell_raw_scores.get(key, ()), acc.cell_raw_durations[key]),
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


def _judge(acc: _Acc, treatments: Sequence[str], baseline: str, baseline_found: bool) -> JudgeOverlay | None:
    if not acc.judge_names and not acc.judge_seen:
        return None  # no judge anywhere: every report stays as it is without one
    names = tuple(sorted(acc.judge_names))
    per_task: dict[str, list[TaskSummary]] = defaultdict(list)
    # By (treatment, task), as the rule dimensions' comparisons see their tasks.
    for (task, treatment), cell in sorted(acc.judge_tasks.items(), key=lambda item: (item[0][1], item[0][0])):
        for name, (n, total) in cell.items():
            per_task[name].append(TaskSummary(task, treatment, n, 0, 0, n, math.nan, total / n))
    rows = []
    for name in names:
        twin = _RULE_TWIN.get(name, name)
        rule_dimension = twin if twin in acc.dim_order else None
        for t in treatments:
            values = acc.judge.get((name, t), [])
            n = len(values)
            paired, judge_sum, rule_sum = acc.judge_pairs.get((name, t), (0, 0.0, 0.0))
            spreads = acc.judge_spread.get((name, t), [])
            difference: PairedComparison | Insufficient | None = None
            if baseline_found and t != baseline:
                difference = compare_treatments(
                    per_task[name], baseline, t, "mean_score", min_tasks=MIN_TASKS, draws=_DIMENSION_DRAWS
                )
            rows.append(
                JudgeRow(
                    t,
                    name,
                    n,
                    math.fsum(values) / n if n else math.nan,
                    statistics.stdev(values) if n > 1 else math.nan,
                    rule_dimension=rule_dimension,
                    paired=paired,
                    rule_mean=rule_sum / paired if paired else math.nan,
                    judge_mean_paired=judge_sum / paired if paired else math.nan,
                    spread=math.fsum(spreads) / len(spreads) if spreads else math.nan,
                    spread_trials=len(spreads),
                    difference=difference,
                )
            )
    status = tuple(_judge_status(acc, t, (t,)) for t in treatments)
    reasons = sorted(
        (JudgeReason(st, reason, n) for (st, reason), n in acc.judge_reasons.items()),
        key=lambda r: (_JUDGE_STATUSES.index(r.status), -r.trials, r.reason),
    )
    pairs = acc.calibration
    return JudgeOverlay(
        names,
        tuple(rows),
        status=status,
        total=_judge_status(acc, "", treatments),
        reasons=tuple(reasons),
        spend=tuple(_judge_spend(acc, t) for t in treatments),
        calibration=calibrate([p[0] for p in pairs], [p[1] for p in pairs]) if _CALIBRATED in acc.judge_names else None,
        samples=acc.judge_samples,
    )


def _judge_status(acc: _Acc, label: str, treatments: Iterable[str]) -> JudgeStatusCounts:
    statuses: Counter[str] = Counter()
    trials = 0
    for t in treatments:
        statuses.update(acc.judge_status.get(t, {}))
        trials += sum(acc.verdicts[t].values())
    return JudgeStatusCounts(label, trials, statuses["enabled_and_successful"], statuses["skipped"], statuses["failed"])


def _judge_spend(acc: _Acc, treatment: str) -> JudgeSpend:
    trials, token_trials, input_tokens, output_tokens, latency_trials, latency = acc.judge_spend.get(
        treatment, (0, 0, 0, 0, 0, 0.0)
    )
    costs = acc.judge_costs.get(treatment, [])
    return JudgeSpend(
        treatment,
        trials,
        token_trials,
        input_tokens,
        output_tokens,
        len(costs),
        math.fsum(costs) if costs else None,
        latency_trials,
        latency,
    )
