"""The model every report renders: one frozen value of every figure, built by scaffold.reports.analysis.

The Markdown and HTML renderers read only this model, never the trial records, so every figure is
computed once and all reports agree. Sets of trials (the original Comet eval's "去噪口径"):

    raw set       every trial given.
    analysis set  raw minus the trials whose noise verdict is ``excluded`` (environment or runner
                  noise). Headline figures, pass@k, spend, runtime, dimensions and verdicts use it.
    strict set    analysis minus ``flagged`` trials; used only to test whether a verdict depends on
                  suspect trials.

Pure data: no files, pytest, docker or subprocess. The values are frozen msgspec Structs, as the trial
records are, rather than dataclasses: every session's end and every ``comet report`` imports this module,
and with its 23 classes as dataclasses (each generated method compiled on its own) the module took 23.5 ms
to import, 5.9 ms now (its own import time, median of 5).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import msgspec

from scaffold.experiment import TRANSCRIPT_FILE
from scaffold.experiment.sequential import SequentialVerdict
from scaffold.records import TrialError
from scaffold.records.noise import TASK_ERROR_REASONS
from scaffold.stats import (
    Calibration,
    Estimate,
    Insufficient,
    KPlan,
    PairedComparison,
    Rate,
    SampleSize,
    TreatmentStats,
)
from scaffold.stats.heterogeneity import Heterogeneity
from scaffold.stats.stratified import OnTasksComparison

__all__ = [
    "INCONCLUSIVE",
    "INSUFFICIENT",
    "JUDGE_REASONS",
    "Analysis",
    "Cell",
    "Counts",
    "DimensionStats",
    "DimensionWeight",
    "EvaluatedSkill",
    "ExclusionCheck",
    "FailureCause",
    "JudgeOverlay",
    "JudgeReason",
    "JudgeRow",
    "JudgeSpend",
    "JudgeStatusCounts",
    "Label",
    "Mismatch",
    "PassK",
    "RawTotals",
    "Retries",
    "SkillLeaks",
    "SkillUse",
    "Spend",
    "Timing",
    "TreatmentIdentity",
    "TreatmentReport",
    "TreatmentSkills",
    "TreatmentVerdict",
    "TrialFiles",
    "TrialLink",
    "UnreadableRecord",
    "shown_values",
]

Label = Literal[
    "improvement",
    "regression",
    "no significant difference",
    "Insufficient clean data",
    "Inconclusive due to data quality",
    # Treatments that differ in more than the treatment (scaffold.reports.comparable; --allow-mixed):
    "not comparable: agent differs",
    "not comparable: agent version differs",
    "not comparable: model differs",
    "not comparable: endpoint differs",
    "not comparable: backend differs",
    "not comparable: harness version differs",
    "not comparable: task content differs",
]
INSUFFICIENT: Final = "Insufficient clean data"
INCONCLUSIVE: Final = "Inconclusive due to data quality"


class UnreadableRecord(msgspec.Struct, frozen=True):
    """A record file that could not be read: left out of every figure, listed in every report."""

    file: str
    """The record's path, linked as the trial files are (relative to the report folder, or absolute)."""
    field: str | None
    """The field to blame (``$.weighted_score``, ``$.trajectory.tokens.input``); None when the file as a
    whole is (truncated, not JSON, another schema version)."""
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


class TreatmentIdentity(msgspec.Struct, frozen=True):
    """What produced one treatment's trials: every value seen, sorted, None (unknown) last when present.

    A treatment run by one agent has one value per field; two values are a treatment whose trials were
    not all run alike. None: the record did not say (no trajectory, or written before the field existed).
    """

    agent: tuple[str | None, ...]
    agent_version: tuple[str | None, ...]
    model: tuple[str | None, ...]
    endpoint: tuple[str | None, ...]
    """``none`` (no model), ``local`` (this machine's loopback), ``remote`` (scaffold.records.Endpoint)."""
    backend: tuple[str | None, ...]
    harness_version: tuple[str | None, ...]
    task_hashes: tuple[tuple[str, str | None], ...]
    """(task, content hash) pairs seen, sorted."""

    def text(self, name: str) -> str:
        """A field as every report shows it: "nop"; "2.0.1, 2.0.2"; "unknown" ("default" for the model)."""
        values: tuple[str | None, ...] = getattr(self, name)
        return shown_values(values, default=name == "model")


def shown_values(values: Iterable[str | None], *, default: bool = False) -> str:
    """Values as reports show them; None is "unknown", or "default" where it means the agent's default."""
    missing = "default" if default else "unknown"
    return ", ".join(missing if v is None else v for v in values) or missing


class Mismatch(msgspec.Struct, frozen=True):
    """The first thing other than the treatment that differs between two treatments' trials."""

    field: str
    """What differs, as reports name it: "agent", "agent version", "model", "endpoint", "backend",
    "harness version" or "task content"."""
    baseline: str
    treatment: str
    baseline_value: str
    """The value(s) seen under the baseline, as shown ("nop"; "2.0.1, 2.0.2"; "unknown")."""
    treatment_value: str

    @property
    def label(self) -> str:
        return f"not comparable: {self.field} differs"

    def describe(self) -> str:
        return (
            f"{self.field} differs: {self.baseline} ran {self.baseline_value}, "
            f"{self.treatment} ran {self.treatment_value}"
        )


class TrialFiles(msgspec.Struct, frozen=True):
    """Where one trial's files are, as the caller wants them linked (relative to the report, or absolute)."""

    record: str
    """Path of the trial's ``record.json``."""
    streams: tuple[str, ...] = ()
    """Paths of what the agent printed (``agent.*`` files of the trial folder), sorted."""

    @property
    def transcript(self) -> str:
        """Path of the trial's ``transcript.html``: beside the record, given the same way."""
        return posixpath.join(posixpath.dirname(self.record), TRANSCRIPT_FILE)


class TrialLink(msgspec.Struct, frozen=True):
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
    """Noise reason (scaffold.records.noise reasons; "" for plain included trials)."""
    source: str
    """What decided the noise verdict: "structured" or "text"."""
    evidence: Mapping[str, Any]
    """The signal that decided the noise verdict (error, failure event, matched text, ...)."""
    files: TrialFiles | None
    """The trial's record and raw streams; None when the records were not read from files."""
    hard_failures: tuple[str, ...] = ()
    """The rubric's hard failures of the trial."""
    failed_checks: tuple[str, ...] = ()
    """Names of the validation checks that failed (a failed trial's only; others have none listed)."""
    errors: tuple[TrialError, ...] = ()
    """The harness errors of an errored trial."""
    changed_files: int | None = None
    """Files the agent added, modified or deleted (changes.json); None when not recorded."""


SKILLS_SHOWN: Final = 10
"""Skills a report names per treatment; results.jsonl and the records name every one."""
TASKS_SHOWN: Final = 20
"""Tasks whose skill use a report lists per treatment."""


class EvaluatedSkill(msgspec.Struct, frozen=True):
    """A skill a treatment installed, as every report names it: one per (name, content hash, source)."""

    name: str
    content_hash: str | None
    """The record configuration's hash of the skill folder (``sha256:<hex>``); None when not recorded."""
    source: str | None
    """Where it came from (``TrialRecord.skill_sources``: the folder given, ``snapshot BASE/SKILL (...)``,
    ``task skills (...)``); None in records written before it was recorded."""
    trials: int
    """Trials (raw set) that installed it."""

    @property
    def text(self) -> str:
        """``my-skill`` from /skills/my-skill, content sha256:0123456789ab"""
        digest = self.content_hash or "unknown"
        algorithm, _, hexdigest = digest.partition(":")
        short = f"{algorithm}:{hexdigest[:12]}" if hexdigest else digest[:19]
        return f"{self.name} from {self.source or 'a source not recorded'}, content {short}"


class SkillUse(msgspec.Struct, frozen=True):
    """How often trials invoked the skills they were expected to (``TrialRecord.expected_skills``), over
    the scored analysis-set trials that were expected to invoke any: trials whose agent can invoke skills,
    of a task that requires a skill the treatment installs or under a treatment of skills under test.
    Each trial is counted once, in the first that fits of: used (every expected skill, or ``partial``:
    some), ``wrong`` (another skill instead), ``failed`` (an expected call failed), none."""

    trials: int
    """The trials counted (y of "used in x of y")."""
    used: int
    """Trials that invoked at least one expected skill, and the call succeeded."""
    failed: int
    """Trials that invoked no skill, but called an expected one and the call failed (``skills_attempted``)."""
    partial: int = 0
    """Of the trials that used the skills, those that loaded some of the expected skills but not all."""
    wrong: int = 0
    """Trials that invoked none of the expected skills but another one."""
    used_passed: int = 0
    """Trials that used the skills and passed."""
    unused_passed: int = 0
    """Trials that did not use them and passed."""

    @property
    def none(self) -> int:
        """Trials that loaded no skill at all and tried none."""
        return self.trials - self.used - self.wrong - self.failed

    @property
    def text(self) -> str:
        """As the reports say it: ``skill used in 3 of 4 trials; 1 more attempted it and the call failed``,
        the other outcomes and the pass rates with and without (observational)."""
        if not self.trials:
            return "skill use not scored: no trial was expected to invoke a skill (its agent cannot, or none is needed)"
        text = f"skill used in {self.used} of {self.trials} trials"
        if self.partial:
            text += f" ({self.partial} of them loaded only some of the expected skills)"
        if self.wrong:
            text += f"; {self.wrong} loaded another skill instead"
        if self.failed:
            text += f"; {self.failed} more attempted it and the call failed"
        if self.none and self.none != self.trials - self.used:
            text += f"; {self.none} loaded none"
        return text + self.pass_rates

    @property
    def pass_rates(self) -> str:
        """``; passed 5 of 6 when it was used, 1 of 4 when not (observational: ...)`` when both kinds exist."""
        unused = self.trials - self.used
        if not self.used or not unused:
            return ""
        return (
            f"; passed {self.used_passed} of {self.used} ({self.used_passed / self.used:.0%}) when it was used, "
            f"{self.unused_passed} of {unused} ({self.unused_passed / unused:.0%}) when not (observational: the "
            f"trials chose whether to use it, so this is not the skill's effect; the verdict is)"
        )

    @property
    def short(self) -> str:
        """``3 of 4``, and ``(1 with a failed call)`` when some trials called a skill and the call failed."""
        notes = [
            f"{n} {what}"
            for n, what in (
                (self.partial, "partial"),
                (self.wrong, "another skill"),
                (self.failed, "with a failed call"),
            )
            if n
        ]
        return f"{self.used} of {self.trials}" + (f" ({', '.join(notes)})" if notes else "")


class SkillLeaks(msgspec.Struct, frozen=True):
    """Skills loaded under a treatment that installs none (CONTROL): each one is a leak, a skill the agent
    found elsewhere (its user folder, a plugin), which makes the baseline something other than "without"."""

    trials: int
    """Analysis-set trials whose agent reports the skills it uses."""
    leaked: int
    """Of them, trials that loaded a skill."""
    names: tuple[str, ...]
    """The skills loaded, most often first."""

    @property
    def text(self) -> str:
        if not self.leaked:
            return f"installs no skill, and none was loaded in {self.trials} trial(s) that would show it: no leak"
        return (
            f"installs no skill, yet {self.leaked} of {self.trials} trials loaded one ({', '.join(self.names)}): "
            f'a leak; this baseline is not "without the skill"'
        )


class TreatmentSkills(msgspec.Struct, frozen=True):
    """The skills one treatment installed, and how often its trials used the ones they were expected to."""

    skills: tuple[EvaluatedSkill, ...]
    """Sorted by name, source and hash."""
    use: SkillUse
    """Over every task."""
    by_task: Mapping[str, SkillUse]
    """Per task, sorted by name: the tasks with at least one trial counted."""
    leaks: SkillLeaks | None = None
    """Under a treatment that installs no skill, whether its trials loaded one; None otherwise."""

    @property
    def shown(self) -> tuple[EvaluatedSkill, ...]:
        """The skills a report lists (TASK_SKILLS of a large benchmark has hundreds); the rest are counted."""
        return self.skills[:SKILLS_SHOWN]

    @property
    def unshown(self) -> int:
        return len(self.skills) - len(self.shown)

    def tasks_text(self, limit: int = TASKS_SHOWN) -> str:
        """``fix-median 2 of 2, wordcount-cli 1 of 2``: the first *limit* tasks, then how many more."""
        shown = [f"{task} {use.short}" for task, use in list(self.by_task.items())[:limit]]
        more = len(self.by_task) - limit
        return ", ".join(shown) + (f" and {more} more task(s)" if more > 0 else "")


class Counts(msgspec.Struct, frozen=True):
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

    @property
    def task_error_reasons(self) -> dict[str, int]:
        """The excluded reasons that are harness or task errors (scaffold.records.noise.TASK_ERROR_REASONS:
        an image that cannot be built, ...), with their trials; shown apart from environment noise."""
        return {reason: n for reason, n in self.excluded_reasons.items() if reason in TASK_ERROR_REASONS}

    @property
    def task_errors(self) -> int:
        """Excluded trials a harness or task error left unmeasured: out of the analysis set, as noise is."""
        return sum(self.task_error_reasons.values())

    @property
    def noise(self) -> int:
        """Excluded trials that are environment or runner noise (excluded minus task errors)."""
        return self.excluded - self.task_errors

    @property
    def noise_reasons(self) -> dict[str, int]:
        """The excluded reasons that are environment or runner noise, with their trials."""
        return {reason: n for reason, n in self.excluded_reasons.items() if reason not in TASK_ERROR_REASONS}


class Retries(msgspec.Struct, frozen=True):
    """The trials of one treatment run again after an attempt excluded as noise (``--retry-excluded``), and
    their outcomes beside those of the trials that counted at their first attempt: retries can shift the
    distribution (the trials that meet rate limits or timeouts need not be a random sample of them all).
    A trial counts once, as its final attempt; only those still excluded reach the verdict's bounds."""

    trials: int = 0
    """Trials of the treatment (raw set)."""
    retried: int = 0
    """Trials with at least one earlier attempt."""
    recovered: int = 0
    """Retried trials whose final attempt was not excluded: they are in the analysis set."""
    still_excluded: int = 0
    """Retried trials excluded at their final attempt too (their retries ran out)."""
    attempts: int = 0
    """Attempts made in all: every trial's final one and the earlier ones."""
    first_passed: int = 0
    first_scored: int = 0
    """Passed and scored trials of the analysis set that counted at their first attempt."""
    retried_passed: int = 0
    retried_scored: int = 0
    """Passed and scored trials among the recovered ones."""
    p_value: float | None = None
    """Fisher's exact test (two-sided) of "first-try and recovered trials pass at the same rate", pooled
    over tasks (a warning sign, not a rule); None when nothing was retried or a side has nothing scored."""
    earlier_cost_usd: float | None = None
    """What the earlier attempts cost as their agents reported it (never in Spend, which counts each
    trial's final attempt); None when none reported a cost."""

    @property
    def first_pass_rate(self) -> float | None:
        return self.first_passed / self.first_scored if self.first_scored else None

    @property
    def retried_pass_rate(self) -> float | None:
        return self.retried_passed / self.retried_scored if self.retried_scored else None


class RawTotals(msgspec.Struct, frozen=True):
    """The trials of one treatment, or of one task under one treatment, on the raw set and pooled (every
    trial weighs the same): the plain counts of summary.md, beside the per-task statistics."""

    trials: int
    passed: int
    failed: int
    errored: int
    mean_score: float | None
    """Mean weighted score of the scored trials that have one; None when none has."""
    mean_duration_s: float | None
    """Mean seconds per trial, errored ones included; None without trials."""

    @property
    def scored(self) -> int:
        """Trials that reached a verdict; errored ones are unscored, not failed."""
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        """passed / scored; None when nothing was scored."""
        return self.passed / self.scored if self.scored else None


class PassK(msgspec.Struct, frozen=True):
    """pass@k and pass^k (both forms) of one treatment at one k: means over tasks with intervals."""

    k: int
    pass_at_k: Estimate
    """At least one of k trials passes (HumanEval's unbiased estimator per task, then the task mean)."""
    pass_hat_k: Estimate
    """All k trials pass, unbiased C(c,k)/C(n,k) per task (tau-bench)."""
    pass_hat_k_observed: Estimate
    """The original Comet eval's observed pass^k per task: 1 when every scored trial passed, else 0."""


class Spend(msgspec.Struct, frozen=True):
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


class Timing(msgspec.Struct, frozen=True):
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


class TreatmentReport(msgspec.Struct, frozen=True):
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
    runtime: Timing
    totals: RawTotals
    """Pooled raw-set totals (summary.md's "By treatment")."""
    identity: TreatmentIdentity | None = None
    """The agent, version, model, endpoint, backend and harness that produced the treatment's trials."""
    retries: Retries = Retries()
    """Its trials run again after an attempt excluded as noise, and their outcomes beside the others'."""
    skills: TreatmentSkills | None = None
    """The skills the treatment installed and how often its trials used them; None when it installed none."""

    @property
    def pass_rate_shift(self) -> float:
        """Analysis minus raw mean pass rate (the sensitivity to excluding noise); NaN when either is."""
        return self.analysis.pass_rate.mean - self.raw.pass_rate.mean


class Cell(msgspec.Struct, frozen=True):
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
    totals: RawTotals
    """Pooled raw-set totals of the cell (summary.md's task x treatment table)."""


class DimensionStats(msgspec.Struct, frozen=True):
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


class DimensionWeight(msgspec.Struct, frozen=True):
    """The weight a profile gives a dimension, and its share of the profile's total weight."""

    dimension: str
    profile: str
    weight: float
    share: float


class FailureCause(msgspec.Struct, frozen=True):
    """Why analysis-set trials of one treatment failed or errored: one row per (kind, name)."""

    treatment: str
    kind: str
    """"hard_failure" (rubric), "check" (a failed validation check), "error" (errored trial, by error
    type) or "unexplained" (failed with no failed check or hard failure recorded)."""
    name: str
    trials: int
    examples: tuple[str, ...]
    """Up to five case ids, for finding the trials."""


class JudgeRow(msgspec.Struct, frozen=True):
    """One judge dimension under one treatment (analysis set, scored trials the judge scored)."""

    treatment: str
    dimension: str
    n: int
    mean: float
    sd: float
    rule_dimension: str | None = None
    """The rule dimension this judge dimension re-scores: the same name (the comet judge's
    artifact_quality, spec_drift, main_flow), ``completion`` for the generic judge's ``task_completion``;
    None when no record has such a rule dimension (output_quality, custom_0, ...)."""
    paired: int = 0
    """Judged trials that also have a rule score of ``rule_dimension`` (N/A rule scores left out)."""
    rule_mean: float = math.nan
    """Mean rule score over the ``paired`` trials; NaN without any."""
    judge_mean_paired: float = math.nan
    """Mean judge score over the same ``paired`` trials (``gap`` compares like with like)."""
    spread: float = math.nan
    """Mean over trials of the judge's own spread (sd of its ``--judge-samples`` answers); NaN when no
    trial was judged twice or more."""
    spread_trials: int = 0
    difference: PairedComparison | Insufficient | None = None
    """Treatment minus baseline of per-task judge means, paired over tasks, as rule dimensions get it;
    None for the baseline itself (and without a baseline)."""

    @property
    def gap(self) -> float:
        """Judge minus rule over the paired trials (positive: the judge is more generous); NaN without."""
        return self.judge_mean_paired - self.rule_mean if self.paired else math.nan


class JudgeStatusCounts(msgspec.Struct, frozen=True):
    """Judge statuses of one treatment's trials (or of all, ``treatment`` ""), raw set: every trial."""

    treatment: str
    trials: int
    successful: int
    """``enabled_and_successful``."""
    skipped: int
    failed: int

    @property
    def not_judged(self) -> int:
        """Trials whose record carries no judge information (the judge was not enabled for them)."""
        return self.trials - self.successful - self.skipped - self.failed


JUDGE_REASONS: Final = 5
"""Distinct skipped or failed judge reasons a report lists (failed ones carry HTTP bodies, so they vary);
the rest are counted, and every trial's reason is in results.jsonl."""


class JudgeReason(msgspec.Struct, frozen=True):
    """Why trials' judging was skipped or failed: one row per (status, reason), most trials first."""

    status: str
    reason: str
    trials: int

    @property
    def text(self) -> str:
        """As the record and every report say it: "skipped - BENCH_JUDGE_MODEL is required ..."."""
        return f"{self.status} - {self.reason}" if self.reason else self.status


class JudgeSpend(msgspec.Struct, frozen=True):
    """The judge's own tokens, cost and latency for one treatment's trials (raw set), never part of the
    agent's ``Spend``: the judge is the harness's expense, not the treatment's."""

    treatment: str
    trials: int
    """Trials whose record carries judge information."""
    token_trials: int
    input_tokens: int
    output_tokens: int
    cost_trials: int
    cost_usd: float | None
    """Total; None when no trial reported a judge cost."""
    latency_trials: int
    latency_s: float
    """Total seconds of the judge calls that reported one."""

    @property
    def mean_cost_usd(self) -> float | None:
        return self.cost_usd / self.cost_trials if self.cost_usd is not None and self.cost_trials else None

    @property
    def mean_latency_s(self) -> float | None:
        return self.latency_s / self.latency_trials if self.latency_trials else None

    def mean_tokens(self, kind: str) -> float | None:
        """Mean per reporting trial of "input" or "output" tokens."""
        total: int = getattr(self, f"{kind}_tokens")
        return total / self.token_trials if self.token_trials else None


class JudgeOverlay(msgspec.Struct, frozen=True):
    """LLM-judge scores shown beside the rule-based scores, never replacing them. Judge dimensions are
    the record dimensions marked ``"source": "judge"``; they are left out of the rubric tables. Present
    when any record carries judge information or a judge score."""

    dimensions: tuple[str, ...]
    rows: tuple[JudgeRow, ...]
    """One per (judge dimension, treatment), in ``dimensions`` x ``Analysis.treatments`` order."""
    status: tuple[JudgeStatusCounts, ...] = ()
    """One per treatment, in ``Analysis.treatments`` order."""
    total: JudgeStatusCounts = JudgeStatusCounts("", 0, 0, 0, 0)
    reasons: tuple[JudgeReason, ...] = ()
    """Skipped reasons first, then failed ones; within each most trials first."""
    spend: tuple[JudgeSpend, ...] = ()
    """One per treatment, in ``Analysis.treatments`` order."""
    calibration: Calibration | None = None
    """The judge's ``task_completion`` against the validators' verdict over every analysis trial having
    both; None when no trial has a judge ``task_completion`` (the comet judge gives none)."""
    samples: int = 0
    """The most answers the judge gave one trial (``--judge-samples``)."""

    @property
    def overlaid(self) -> tuple[JudgeRow, ...]:
        """Rows of judge dimensions that have a rule twin: the "rule vs judge" table."""
        return tuple(r for r in self.rows if r.rule_dimension is not None)

    @property
    def spread_shown(self) -> bool:
        return any(r.spread_trials for r in self.rows)

    @property
    def spend_shown(self) -> bool:
        """Some judge call reported tokens, a cost or a latency (never when every judge was skipped)."""
        return any(s.token_trials or s.cost_trials or s.latency_trials for s in self.spend)

    @property
    def all_skipped(self) -> bool:
        """Every trial's judge was skipped (so no judge was called at all)."""
        return self.total.trials > 0 and self.total.skipped == self.total.trials

    def reasons_of(self, status: str) -> tuple[JudgeReason, ...]:
        return tuple(r for r in self.reasons if r.status == status)


class TreatmentVerdict(msgspec.Struct, frozen=True):
    """The answer for one treatment against the baseline (the rules: scaffold.reports.verdicts)."""

    treatment: str
    baseline: str
    label: Label
    reason: str
    """One sentence with the figures that decided the label."""
    pass_rate: PairedComparison | Insufficient
    """Paired per-task pass-rate comparison across tasks on the analysis set (decides the label when
    ``scope`` is "across tasks")."""
    score: PairedComparison | Insufficient
    """Paired per-task mean weighted score comparison on the analysis set (reported beside it)."""
    raw_label: Label
    """The label the raw set would give (excluded trials kept)."""
    strict_label: Label
    """The label the strict set would give (flagged trials dropped too)."""
    power: SampleSize | None
    """Tasks needed to detect ``Analysis.effect`` at ``alpha`` and power 0.8 with the paired t test
    the verdict uses (noncentral t), from the observed spread of per-task differences; ``needed`` is
    None when no spread was observed. None when there was no comparison."""
    trials: SampleSize | None = None
    """Trials per treatment of one task to detect ``Analysis.effect`` from the baseline's mean pass
    rate (two proportions); None when there was no comparison."""
    exclusions: ExclusionCheck | None = None
    """The verdict with excluded trials imputed at both extremes, and the test of the exclusion rates;
    None when there was no comparison."""
    mismatch: Mismatch | None = None
    """What differs between the two treatments besides the treatment, when something does: the label is
    then "not comparable: <field> differs" (reports only made with --allow-mixed)."""
    scope: str = "across tasks"
    """Which inference decided the label: "across tasks" (tasks like these, the task as the unit) or
    "on these tasks" (the tasks run, their trials as the units): scaffold.reports.verdicts."""
    on_tasks: OnTasksComparison | Insufficient | None = None
    """The pass-rate comparison on these tasks (scaffold.stats.stratified), decisive or not."""
    on_tasks_label: Label = INSUFFICIENT
    """What the comparison on these tasks alone says (without the data-quality rules when it does not
    decide)."""
    on_tasks_reason: str = ""
    """Its figures, when it does not decide (the reports show it beside an across-tasks verdict)."""
    sequential: SequentialVerdict | None = None
    """The anytime-valid tests of a run until decided, when the run was one (they gave the label)."""
    heterogeneity: Heterogeneity | None = None
    """Per-task effects, the within-task omnibus test and the tasks helped or hurt (scaffold.stats.
    heterogeneity), on the analysis set; None when no task was scored under both."""

    @property
    def headline(self) -> str:
        """The label with its scope, and how a run until decided stopped: the terminal's verdict line."""
        if self.mismatch is not None or self.label == INSUFFICIENT:
            return self.label
        stop = ""
        if self.sequential is not None:
            s = self.sequential
            stop = f"; decided at round {s.decided_at}" if s.decided_at else f"; undecided after {s.rounds} round(s)"
        return f"{self.label} ({self.scope}{stop})"

    @property
    def scope_note(self) -> str:
        """What the deciding scope's answer is about, for the reports."""
        if self.scope == "on these tasks":
            return "about these tasks only (their trials as the evidence), not about tasks like them"
        return "about tasks like these (the tasks as a sample), with the tasks as the unit"

    @property
    def decisive(self) -> bool:
        return self.label in ("improvement", "regression")

    @property
    def comparable(self) -> bool:
        return self.mismatch is None


class ExclusionCheck(msgspec.Struct, frozen=True):
    """How far excluded trials could move a verdict (scaffold.stats.exclusions), and whether the two
    treatments lost different shares of trials to exclusion."""

    worst: PairedComparison | OnTasksComparison | Insufficient
    """Pass-rate comparison (of the deciding scope) with the treatment's excluded trials as failures, the
    baseline's as passes."""
    best: PairedComparison | OnTasksComparison | Insufficient
    """The other extreme: the treatment's excluded trials as passes, the baseline's as failures."""
    worst_label: Label
    best_label: Label
    baseline_excluded: int
    baseline_trials: int
    treatment_excluded: int
    treatment_trials: int
    rate_p_value: float
    """Fisher's exact test (two-sided) of "both treatments lose the same share of trials to exclusion"."""
    baseline_excess: int = 0
    treatment_excess: int = 0
    """Recovered trials of the side beyond the other side's share, whose first attempts the extremes
    count as excluded too (scaffold.stats.exclusions.excess_recovered)."""

    @property
    def imputed(self) -> bool:
        """False when neither side excluded a trial (both extremes are then the analysis set)."""
        return bool(self.baseline_excluded or self.treatment_excluded or self.baseline_excess or self.treatment_excess)


class Analysis(msgspec.Struct, frozen=True):
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
    verdicts: tuple[TreatmentVerdict, ...]
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
    """None when no record carries judge information or judge dimensions."""
    trials: tuple[TrialLink, ...]
    """Every trial of the raw set, sorted by (task, treatment, trial, experiment, case id)."""
    problems: tuple[UnreadableRecord, ...]
    """Records that could not be read (passed in by the loader): left out of every figure, listed."""
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

    def verdict(self, treatment: str) -> TreatmentVerdict | None:
        """The verdict of *treatment* against the baseline; None for the baseline or an unknown name."""
        return next((v for v in self.verdicts if v.treatment == treatment), None)

    def dimension(self, name: str, treatment: str) -> DimensionStats | None:
        return next((d for d in self.dimension_stats if d.dimension == name and d.treatment == treatment), None)
