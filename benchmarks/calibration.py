"""Calibration benchmark: how often the verdicts and gates are right, by simulating thousands of experiments.

Every simulated experiment goes through the path a user sees: trial records (``scaffold.records.
TrialRecord``; excluded and retried trials written as the runner writes them) into
``scaffold.reports.analysis.build_analysis``, whose verdicts (both scopes, the exclusion bounds, Holm's
procedure for several treatments, the per-task effects) are read, and the gates ``SKILL better than
CONTROL`` and ``SKILL not worse than CONTROL`` (``scaffold.reports.gates``, 5-point margin) answered on
that analysis. Runs until decided go through ``scaffold.experiment.sequential.sequential_verdicts`` with a
look after every round, and a share of them through ``build_analysis(..., sequential=Design(...))``.

The model: each task has a baseline pass probability p drawn uniformly from the range that keeps the
treatment's, p + effect, in [0, 1], so every task's true difference is the effect and the truth an
interval must cover is plain: across tasks, the mean per-task difference of tasks like these (the
effect); on these tasks, the mean of the true differences of the tasks run (the same number here). Each
trial passes independently with its task's probability. Mixed effects: +40 points on the first half of
the tasks, -40 on the others (mean 0). Several treatments: each with the same effect (0: the null) and
its own trials. Records carry no weighted score (the verdict decides on pass rates; the score comparison
beside it would only cost time).

Exclusions (``noise`` category "excluded", reason "rate_limited", verdict "error"): **random**, each
attempt of either side excluded with probability 5%; **linked** to the outcome, the treatment's
attempts excluded with probability 5% when they would pass and 15% when they would fail, the baseline's
5% either way. **Retries** (``--retry-excluded``): an excluded attempt is run again, a fresh outcome
and a fresh chance of exclusion, up to 2 more times; the last attempt's record counts and lists the
earlier ones in ``attempts``. Each experiment of an exclusion scenario is read five ways from the same
draws (none; each pattern without and with retries), so the differences between them are paired.

Sections (``--only NAME[,NAME]``); each prints a table, every share with its Monte Carlo standard error
(sqrt(p(1-p)/R); for a power loss, the standard error of the paired difference):

* ``scopes``: one treatment. At 2, 3 and 4 tasks (decided on these tasks) and 10 and 20 tasks (across
  tasks), 5 trials per task and treatment: effect 0 (false-positive rate of the verdict and of the
  ``better than`` gate), -5 points (the ``not worse than`` gate's margin: its false-pass rate), +20/+40
  (on these tasks) or +10/+20 (across) for power. At 3, 10 and 20 tasks with 1 and 3 trials: 0 and +20
  (and 3 tasks x 1 trial at -5). Beside each row: the coverage of the deciding scope's 95% interval
  (``pass_rate`` across tasks, ``on_tasks`` on these tasks) and of the on-these-tasks interval, and the
  share whose reason says "mixed rather than absent".
* ``exclusions``: 20 tasks (0, -5, +20 points) and 3 tasks (0, +40), 5 trials, each exclusion pattern
  with and without retries: labels, gates, coverage, the share of trials still excluded (and, with an
  effect, without exclusions: the same draws); then the power at +20 (20 tasks) with 5% random
  exclusions, without and with retries, against none (paired).
* ``mixed``: the +40/-40 skill at 4, 10 and 20 tasks beside the null: the share reading "no significant
  difference", the share whose reason says "mixed rather than absent", the rate at which the omnibus
  test rejects (``heterogeneity.omnibus_p <= 0.05``), the wrong claims, the coverage.
* ``family``: 3 and 5 treatments against one baseline under the null, at 3 and 10 tasks: the family-wise
  rate of any "improvement"/"regression", of any ``better than`` gate passing, and the rate per treatment.
* ``unequal``: trials per task and treatment drawn from 3..7, at 3 tasks (0, +40) and 10 tasks (0, -5,
  +20): labels, gates, coverage.
* ``sequential``: the fixed design is the one the report recommends for 80% power at the planned effect
  (+10 points) with 5 trials per task and treatment (``tasks_needed`` fed the true sd under the model:
  66 tasks; ``--seq-tasks`` to change it), decided through ``build_analysis``. The runs until decided on
  the same tasks (``Design(CONTROL, max_count)``: alpha 0.05, planned effect 10, equivalence margin 10)
  are simulated round by round up to 40 rounds at 0, +10 and +20 points; since a decision at round r
  depends on rounds 1..r only, one call over all rounds gives the stop of a look after every round, and
  the first 10 runs of each effect are also run literally (the verdicts worked out again after every
  round) to check it. Printed for every max count: false claims, equivalence stops, power, rounds. The
  comparison is at equal power: the max count whose power at the planned effect is closest to the fixed
  design's; there, the trials spent (mean, 10th, 50th, 90th percentiles) and the ratio of average trials,
  sequential over fixed, at the planned effect, at twice it and under the null (with the equivalence
  stop). Then a tenth of the runs (and a -5-point effect, for the ``not worse than`` gate) stop at that
  max count, and the records of the rounds they ran go through ``build_analysis(sequential=Design(...))``
  and the gates: the label must be the one the simulated decision gives ("agree"), the false-positive
  rates are measured there too, and the anytime-valid interval's coverage at the stop.

A final block "Goals" lists each goal with its measured figure, its Monte Carlo error and PASS/MISS, met
or missed on the figure measured (the error is printed so a near miss can be judged):

* false-positive rate <= 5% for every verdict and gate (the worst row of each group): in each scope,
  with each exclusion pattern with and without retries, family-wise with 3 and 5 treatments, with
  unequal trial counts, for the runs until decided (simulated and through the reports), and for the
  "mixed rather than absent" note under the null;
* interval coverage 95 +- 2% in each scope, pooled over the rows of ``scopes`` and ``unequal`` (and
  ``mixed`` on these tasks: across tasks its sample of tasks is always exactly half and half, not a
  random sample of tasks like these, so that interval over-covers by construction and is left out), and
  no row below 93%. A row above 97% is named but not a miss: with 2 tasks x 5 trials or 3 tasks x 1
  trial the estimate takes a handful of values, and an interval valid at every truth must over-cover
  at some; falling short would be the dishonest error, covering more the cautious one;
* the runs until decided at equal power spend no more trials on average than the fixed design at the
  planned effect, at least 60% fewer at twice it, at most 60% more under the null; the fixed design's
  power at the recommended number of tasks is at least 80%;
* the power lost to 5% random exclusions with retries, against none, is under 3 points.

Informational: exits 0 whatever the figures; exits 1 only when a run fails. Deterministic for a given
``--seed`` and ``--reps``: each scenario is cut into chunks of 50 experiments, each drawn from a
generator seeded from the seed, the scenario and the chunk's index, so neither the worker count nor
``--only`` changes a figure. At the defaults, about 1,300 s of CPU (some 11 minutes on 2 idle cores, 19
while other suites ran on the machine), measured before the omnibus test of the per-task effects stopped
trying its exact law on large designs, which took nearly two thirds of it. ``--tiny`` takes a few seconds.

    .venv/bin/python benchmarks/calibration.py [--reps 1000] [--seed 11] [--workers 2] [--only SECTIONS]
                                               [--seq-tasks N] [--timings] [--tiny]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# One BLAS thread per process: the workers already use the cores, and on a busy machine OpenBLAS's
# spinning threads made one sign-flip product 5 to 40 times slower.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scaffold.experiment.sequential import Design, sequential_verdicts  # noqa: E402
from scaffold.records import AttemptInfo, NoiseVerdict, TrialRecord  # noqa: E402
from scaffold.reports.analysis import build_analysis  # noqa: E402
from scaffold.reports.gates import DEFAULT_MARGIN, Gate, evaluate_gates, parse_gate  # noqa: E402
from scaffold.reports.model import INCONCLUSIVE, INSUFFICIENT, Analysis  # noqa: E402
from scaffold.reports.verdicts import ACROSS_TASKS  # noqa: E402
from scaffold.stats import PairedComparison, tasks_needed  # noqa: E402
from scaffold.stats.stratified import OnTasksComparison  # noqa: E402

BASELINE = "CONTROL"
ALPHA = 0.05
TRIALS = 5
MARGIN = DEFAULT_MARGIN  # "not worse than" must fail when the skill costs this much
ATTEMPTS = 3  # with retries: the first attempt and up to 2 more
EXCLUDE, EXCLUDE_FAIL = 0.05, 0.15
MIXED_EFFECT = 0.40
UNEQUAL = (3, 7)
SEQ_EFFECT, SEQ_MARGIN, SEQ_MAX = 0.10, 0.10, 40
SEQ_SHOWN = (5, 8, 10, 12, 15, 20, 30, 40)
LOOKS = 10  # reps per sequential scenario also run with a literal look after every round
CHUNK = 50  # experiments per job: the unit of work of a worker and of a generator
FPR_GOAL, COVERAGE_GOAL, COVERAGE_TOLERANCE = 0.05, 0.95, 0.02
FEWER_GOAL, MORE_GOAL, LOSS_GOAL = 0.40, 1.60, 0.03
SECTIONS = ("scopes", "exclusions", "mixed", "family", "unequal", "sequential")

LABELS = ("no significant difference", "improvement", "regression", INCONCLUSIVE, INSUFFICIENT)
NSD, IMPROVEMENT, REGRESSION, INCONCL, INSUFF, OTHER = range(6)
# Per verdict: its label, scope (0 across tasks, 1 on these tasks), whether the deciding scope's interval
# covers the truth, the across-tasks and on-these-tasks intervals (-1: no interval), the two gates, the
# "mixed rather than absent" note, the omnibus test rejecting (-1: none), and the experiment's excluded
# and total trials. For a run until decided: the anytime-valid interval and whether the label agreed.
F_LABEL, F_SCOPE, F_COVER, F_ACROSS, F_ON, F_BETTER, F_NOTWORSE, F_MIXED, F_OMNIBUS, F_EXCL, F_TRIALS, F_AGREE = range(
    12
)
FIELDS = 12
# The ways each experiment of an exclusion scenario is read: (pattern, retries).
VARIANTS = (("none", False), ("random", False), ("random", True), ("linked", False), ("linked", True))
DECISIONS = ("", "improvement", "regression", "equivalence")

INCLUDED = NoiseVerdict("included")
EXCLUDED = NoiseVerdict("excluded", "rate_limited")
EARLIER = tuple(
    tuple(AttemptInfo(i + 1, f"attempts/{i + 1}", "error", "rate_limited") for i in range(n)) for n in range(ATTEMPTS)
)
NO_CONFIG: dict[str, object] = {}


@dataclass(frozen=True)
class Scenario:
    kind: str  # "fixed" | "sequential" (simulated rounds) | "check" (a run until decided, via build_analysis)
    effect: float
    tasks: int
    trials: int = TRIALS  # 0: drawn per task and treatment from UNEQUAL
    treatments: int = 1
    mixed: bool = False
    exclusions: bool = False  # read five ways (VARIANTS) from the same draws
    max_count: int = 0  # sequential: rounds simulated; check: the design's --max-count

    def key(self) -> int:
        return zlib.crc32(repr(self).encode())

    @property
    def variants(self) -> int:
        return len(VARIANTS) if self.exclusions else 1

    def cost(self) -> float:
        """A guess of the seconds per experiment, to hand out the largest jobs first."""
        if self.kind == "sequential":
            return 0.0006 * self.tasks * (1 + self.max_count / 40)
        k = self.treatments
        return 0.0015 * self.tasks * self.variants * (1 + 1.6 * (k - 1)) + 0.002


@dataclass(frozen=True)
class Job:
    scenario: Scenario
    chunk: int
    reps: int
    seed: int
    looks: int = 0


@dataclass
class Tally:
    scenario: Scenario
    rows: np.ndarray  # (reps, variants, treatments, FIELDS): fixed and check scenarios
    stops: np.ndarray  # (reps, 2): the round decided at (0: not within max_count) and the decision's index
    looked: int = 0
    looks_agreed: int = 0
    seconds: float = 0.0
    cpu: float = 0.0


def true_sd(trials: int, effect: float) -> float:
    """sd of one task's difference under the model: sqrt((E p(1-p) + E q(1-q)) / trials), q = p + effect."""

    def mean_pq(a: float, b: float) -> float:  # E[p(1-p)] for p uniform on [a, b]
        return (a + b) / 2.0 - (a * a + a * b + b * b) / 3.0

    return math.sqrt((mean_pq(0.0, 1.0 - effect) + mean_pq(effect, 1.0)) / trials)


def recommended_tasks() -> int:
    """The tasks the report recommends for 80% power at the planned effect with TRIALS trials per task and
    treatment (``tasks_needed``, fed the true sd under the model): the fixed design of the comparison."""
    needed = tasks_needed(true_sd(TRIALS, SEQ_EFFECT), SEQ_EFFECT, ALPHA, trials=TRIALS).needed
    assert needed is not None
    return needed


def _names(n: int, prefix: str = "t") -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


def _treatments(k: int) -> list[str]:
    return ["SKILL"] if k == 1 else [f"SKILL{i + 1}" for i in range(k)]


def _rates(rng: np.random.Generator, s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Per task: the baseline's pass probability and the treatments' (every treatment the same)."""
    t = s.tasks
    effect = np.where(np.arange(t) < t // 2, MIXED_EFFECT, -MIXED_EFFECT) if s.mixed else np.full(t, s.effect)
    low, high = np.maximum(0.0, -effect), np.minimum(1.0, 1.0 - effect)
    base = low + (high - low) * rng.random(t)
    return base, np.clip(base + effect, 0.0, 1.0)


def _truth(s: Scenario, base: np.ndarray, treated: np.ndarray) -> tuple[float, float]:
    """What the intervals must cover: across tasks, the mean per-task difference of tasks like these (the
    model's); on these tasks, the mean over the tasks run of their true differences."""
    return (0.0 if s.mixed else s.effect), float(np.mean(treated - base))


def _record(task: str, side: str, trial: int, passed: bool | None, attempts: int) -> TrialRecord:
    """One trial's final record (*passed* None: excluded as noise), after *attempts* excluded attempts."""
    return TrialRecord(
        experiment_id="calibration",
        case_id=f"{task}-{side}-r{trial}",
        task=task,
        treatment=side,
        trial=trial,
        config=NO_CONFIG,
        config_hash="h",
        verdict="error" if passed is None else "passed" if passed else "failed",
        noise=EXCLUDED if passed is None else INCLUDED,
        streams=(),
        attempts=EARLIER[attempts],
    )


def _exclusion_rate(pattern: str, treated: bool, passed: bool) -> float:
    if pattern == "linked" and treated and not passed:
        return EXCLUDE_FAIL
    return 0.0 if pattern == "none" else EXCLUDE


def _final(
    pattern: str, retries: bool, treated: bool, outcomes: np.ndarray, draws: np.ndarray
) -> tuple[bool | None, int]:
    """The outcome of the attempt that counts (None: still excluded) and how many attempts came before."""
    tries = ATTEMPTS if retries else 1
    for a in range(tries):
        passed = bool(outcomes[a])
        if draws[a] >= _exclusion_rate(pattern, treated, passed):
            return passed, a
    return None, tries - 1


def _gates(treatments: Sequence[str]) -> list[Gate]:
    return [parse_gate(f"{t} {kind} {BASELINE}") for t in treatments for kind in ("better than", "not worse than")]


def _covers(c: object, truth: float) -> int:
    if isinstance(c, (PairedComparison, OnTasksComparison)):
        return int(c.low - 1e-12 <= truth <= c.high + 1e-12)
    return -1


def _read(analysis: Analysis, gates: Sequence[Gate], truth: tuple[float, float], out: np.ndarray) -> None:
    """The verdicts and gates of one analysis into *out* (treatments x FIELDS)."""
    passed = {(g.gate.treatment, g.gate.kind): g.passed for g in evaluate_gates(gates, analysis)}
    order = list(dict.fromkeys(g.treatment for g in gates))
    for v in analysis.verdicts:
        row = out[order.index(v.treatment)]
        row[F_LABEL] = LABELS.index(v.label) if v.label in LABELS else OTHER
        across = v.scope == ACROSS_TASKS
        row[F_SCOPE] = 0 if across else 1
        row[F_ACROSS] = _covers(v.pass_rate, truth[0])
        row[F_ON] = _covers(v.on_tasks, truth[1])
        row[F_COVER] = row[F_ACROSS] if across else row[F_ON]
        if v.sequential is not None:  # a run until decided: its anytime-valid interval
            r = v.sequential.analysis
            row[F_COVER] = int(r.low - 1e-12 <= truth[1] <= r.high + 1e-12)
        row[F_BETTER] = passed[(v.treatment, "better than")]
        row[F_NOTWORSE] = passed[(v.treatment, "not worse than")]
        row[F_MIXED] = "mixed rather than absent" in v.reason
        h = v.heterogeneity
        row[F_OMNIBUS] = -1 if h is None else int(h.omnibus_p <= ALPHA)
        row[F_EXCL], row[F_TRIALS] = analysis.counts.excluded, analysis.counts.trials


def run_fixed(job: Job) -> Tally:
    """Experiments of a fixed design: records, build_analysis, gates; every variant from the same draws."""
    s, rng = job.scenario, np.random.default_rng(job.seed)
    sides = [BASELINE, *_treatments(s.treatments)]
    tasks, gates = _names(s.tasks), _gates(sides[1:])
    rows = np.full((job.reps, s.variants, s.treatments, FIELDS), -1, dtype=np.int16)
    attempts = ATTEMPTS if s.exclusions else 1
    most = UNEQUAL[1] if s.trials == 0 else s.trials
    for e in range(job.reps):
        base, treated = _rates(rng, s)
        p = np.vstack([base] + [treated] * s.treatments)  # (sides, tasks)
        counts = rng.integers(UNEQUAL[0], UNEQUAL[1] + 1, size=p.shape) if s.trials == 0 else np.full(p.shape, s.trials)
        outcomes = rng.random((len(sides), s.tasks, most, attempts)) < p[:, :, None, None]
        draws = rng.random(outcomes.shape) if s.exclusions else np.ones(outcomes.shape)
        truth = _truth(s, base, treated)
        for v, (pattern, retries) in enumerate(VARIANTS[: s.variants]):
            if s.exclusions and pattern == "none" and s.effect <= 0:
                continue  # read only where a power loss is paired with it (the scopes show the rest)
            records = []
            for i, side in enumerate(sides):
                for k, task in enumerate(tasks):
                    for j in range(int(counts[i, k])):
                        passed, before = _final(pattern, retries, i > 0, outcomes[i, k, j], draws[i, k, j])
                        records.append(_record(task, side, j + 1, passed, before))
            _read(build_analysis(records, baseline=BASELINE), gates, truth, rows[e, v])
    return Tally(s, rows, np.zeros((job.reps, 2), dtype=np.int16))


def _outcomes(tasks: Sequence[str], rounds: np.ndarray, upto: int) -> dict[str, str]:
    """The sequential file's outcomes (task<TAB>treatment<TAB>trial -> P/F) of rounds 1..*upto*; *rounds*
    is (round, side, task) with side 0 the baseline."""
    out = {}
    for r in range(upto):
        for i, side in enumerate((BASELINE, "SKILL")):
            for k, task in enumerate(tasks):
                out[f"{task}\t{side}\t{r + 1}"] = "P" if rounds[r, i, k] else "F"
    return out


def _stop(design: Design, tasks: Sequence[str], rounds: np.ndarray, upto: int) -> tuple[int, int]:
    """(the round decided at, 0 if none within *upto*; the decision's index in DECISIONS), from one call
    over *upto* rounds: a decision at round r depends on rounds 1..r only, so it is the first look's."""
    v = sequential_verdicts(design, _outcomes(tasks, rounds, upto), tasks, [BASELINE, "SKILL"])["SKILL"]
    return (v.decided_at or 0), DECISIONS.index(v.decision)


def _looked(design: Design, tasks: Sequence[str], rounds: np.ndarray) -> tuple[int, int]:
    """The same stop found literally: the verdicts worked out again after every round, as the runner does."""
    for r in range(1, len(rounds) + 1):
        v = sequential_verdicts(design, _outcomes(tasks, rounds, r), tasks, [BASELINE, "SKILL"])["SKILL"]
        if v.decision:
            return r, DECISIONS.index(v.decision)
    return 0, 0


def _draw_rounds(rng: np.random.Generator, s: Scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base, treated = _rates(rng, s)
    p = np.vstack([base, treated])
    return rng.random((s.max_count, 2, s.tasks)) < p[None, :, :], base, treated


def run_sequential(job: Job) -> Tally:
    """Runs until decided, simulated round by round up to max_count: where each stopped and why."""
    s, rng = job.scenario, np.random.default_rng(job.seed)
    design = Design(BASELINE, s.max_count, ALPHA, SEQ_EFFECT, SEQ_MARGIN)
    tasks = _names(s.tasks)
    stops = np.zeros((job.reps, 2), dtype=np.int16)
    tally = Tally(s, np.zeros((job.reps, 1, 1, FIELDS), dtype=np.int16), stops)
    for e in range(job.reps):
        rounds, _, _ = _draw_rounds(rng, s)
        stops[e] = _stop(design, tasks, rounds, s.max_count)
        if e < job.looks:
            tally.looked += 1
            tally.looks_agreed += _looked(design, tasks, rounds) == tuple(stops[e])
    return tally


def run_check(job: Job) -> Tally:
    """Runs until decided stopped at the design's max count, their records through build_analysis with the
    design and the gates; F_AGREE: the label is the one the simulated decision gives."""
    s, rng = job.scenario, np.random.default_rng(job.seed)
    design = Design(BASELINE, s.max_count, ALPHA, SEQ_EFFECT, SEQ_MARGIN)
    tasks, gates = _names(s.tasks), _gates(["SKILL"])
    rows = np.full((job.reps, 1, 1, FIELDS), -1, dtype=np.int16)
    stops = np.zeros((job.reps, 2), dtype=np.int16)
    for e in range(job.reps):
        rounds, base, treated = _draw_rounds(rng, s)
        stops[e] = _stop(design, tasks, rounds, s.max_count)
        upto = int(stops[e, 0]) or s.max_count  # a decided run starts no trial of a later round
        records = [
            _record(task, side, r + 1, bool(rounds[r, i, k]), 0)
            for r in range(upto)
            for i, side in enumerate((BASELINE, "SKILL"))
            for k, task in enumerate(tasks)
        ]
        analysis = build_analysis(records, baseline=BASELINE, sequential=design)
        _read(analysis, gates, _truth(s, base, treated), rows[e, 0])
        decision = DECISIONS[stops[e, 1]]
        expected = decision if decision in ("improvement", "regression") else "no significant difference"
        rows[e, 0, 0, F_AGREE] = analysis.verdicts[0].label == expected
    return Tally(s, rows, stops)


def run(job: Job) -> Tally:
    start, cpu = time.perf_counter(), time.process_time()
    runner: Callable[[Job], Tally] = {"fixed": run_fixed, "sequential": run_sequential, "check": run_check}[
        job.scenario.kind
    ]
    tally = runner(job)
    tally.seconds, tally.cpu = time.perf_counter() - start, time.process_time() - cpu
    return tally


# --- the scenarios ------------------------------------------------------------------------------------------


@dataclass
class Plan:
    sections: tuple[str, ...]
    reps: int
    seq_reps: int
    check_reps: int
    seq_tasks: int
    seq_max: int
    looks: int
    scopes: list[tuple[int, int, tuple[float, ...]]] = field(default_factory=list)
    exclusions: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)
    mixed: tuple[int, ...] = ()
    family: list[tuple[int, int]] = field(default_factory=list)
    unequal: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)

    def scope_scenarios(self) -> list[Scenario]:
        return [Scenario("fixed", e, t, trials=m) for t, m, effects in self.scopes for e in effects]

    def exclusion_scenarios(self) -> list[Scenario]:
        return [Scenario("fixed", e, t, exclusions=True) for t, effects in self.exclusions for e in effects]

    def mixed_scenarios(self) -> list[Scenario]:
        return [Scenario("fixed", 0.0, t, mixed=True) for t in self.mixed]

    def mixed_nulls(self) -> list[Scenario]:
        return [Scenario("fixed", 0.0, t) for t in self.mixed]

    def family_scenarios(self) -> list[Scenario]:
        return [Scenario("fixed", 0.0, t, treatments=k) for k, t in self.family]

    def unequal_scenarios(self) -> list[Scenario]:
        return [Scenario("fixed", e, t, trials=0) for t, effects in self.unequal for e in effects]

    def fixed_design(self) -> list[Scenario]:
        return [Scenario("fixed", e, self.seq_tasks) for e in (0.0, SEQ_EFFECT, 2 * SEQ_EFFECT)]

    def sequential_scenarios(self) -> list[Scenario]:
        return [
            Scenario("sequential", e, self.seq_tasks, max_count=self.seq_max) for e in (0.0, SEQ_EFFECT, 2 * SEQ_EFFECT)
        ]

    def check_scenarios(self, max_count: int) -> list[Scenario]:
        return [
            Scenario("check", e, self.seq_tasks, max_count=max_count)
            for e in (0.0, -MARGIN, SEQ_EFFECT, 2 * SEQ_EFFECT)
        ]

    def groups(self) -> dict[str, Callable[[], list[Scenario]]]:
        return {
            "scopes": self.scope_scenarios,
            "exclusions": self.exclusion_scenarios,
            "mixed": lambda: self.mixed_scenarios() + self.mixed_nulls(),
            "family": self.family_scenarios,
            "unequal": self.unequal_scenarios,
            "sequential": lambda: self.fixed_design() + self.sequential_scenarios(),
        }

    def first_phase(self) -> list[Scenario]:
        found: list[Scenario] = []
        for name in self.sections:
            found.extend(s for s in self.groups()[name]() if s not in found)
        return found

    def reps_of(self, s: Scenario) -> int:
        if s.kind != "fixed":
            return self.seq_reps if s.kind == "sequential" else self.check_reps
        # The fixed design's null and twice the planned effect are only shown beside the sequential runs (its
        # trials do not vary, and its power at the planned effect is what sets the max count): a quarter.
        side = [x for x in self.fixed_design() if x.effect != SEQ_EFFECT]
        elsewhere = any(s in self.groups()[name]() for name in self.sections if name != "sequential")
        return max(self.reps // 4, 1) if s in side and not elsewhere else self.reps


def make_plan(args: argparse.Namespace) -> Plan:
    sections = tuple(SECTIONS if args.only is None else args.only)
    if args.tiny:
        return Plan(
            sections,
            reps=4,
            seq_reps=4,
            check_reps=2,
            seq_tasks=6,
            seq_max=8,
            looks=2,
            scopes=[(3, 5, (0.0, 0.40)), (10, 5, (0.0, -MARGIN, 0.20)), (10, 1, (0.0,))],
            exclusions=[(10, (0.0, 0.20))],
            mixed=(4,),
            family=[(3, 3)],
            unequal=[(3, (0.0,))],
        )
    return Plan(
        sections,
        reps=args.reps,
        seq_reps=args.reps,
        check_reps=max(args.reps // 10, 1),
        seq_tasks=args.seq_tasks or recommended_tasks(),
        seq_max=SEQ_MAX,
        looks=LOOKS,
        scopes=[(t, TRIALS, (0.0, -MARGIN, 0.20, 0.40)) for t in (2, 3, 4)]
        + [(t, TRIALS, (0.0, -MARGIN, 0.10, 0.20)) for t in (10, 20)]
        + [(t, m, (0.0, 0.20)) for t in (3, 10, 20) for m in (1, 3)]
        + [(3, 1, (-MARGIN,))],
        exclusions=[(20, (0.0, -MARGIN, 0.20)), (3, (0.0, 0.40))],
        mixed=(4, 10, 20),
        family=[(3, 3), (5, 3), (3, 10), (5, 10)],
        unequal=[(3, (0.0, 0.40)), (10, (0.0, -MARGIN, 0.20))],
    )


def jobs_of(scenarios: Iterable[Scenario], plan: Plan, seed: int) -> list[Job]:
    """Each scenario cut into chunks of CHUNK experiments, each chunk with its own generator (seeded from
    the seed, the scenario and the chunk's index: the same figures whatever the workers or sections)."""
    out = []
    for s in scenarios:
        reps = plan.reps_of(s)
        for c in range(math.ceil(reps / CHUNK)):
            n = min(CHUNK, reps - c * CHUNK)
            state = np.random.SeedSequence([seed, s.key(), c]).generate_state(1)[0]
            out.append(Job(s, c, n, int(state), plan.looks if c == 0 and s.kind == "sequential" else 0))
    return sorted(out, key=lambda j: -j.scenario.cost() * j.reps)


def execute(jobs: Sequence[Job], pool: ProcessPoolExecutor | None) -> dict[Scenario, Tally]:
    """Every job run (in *pool*, or here), the chunks of each scenario put back together in order."""
    if pool is None:
        done = [run(j) for j in jobs]
    else:
        futures: list[Future[Tally]] = [pool.submit(run, j) for j in jobs]
        done = [f.result() for f in futures]
    merged: dict[Scenario, Tally] = {}
    for job, tally in sorted(zip(jobs, done, strict=True), key=lambda x: (x[0].scenario.key(), x[0].chunk)):
        have = merged.get(job.scenario)
        if have is None:
            merged[job.scenario] = tally
            continue
        have.rows = np.concatenate([have.rows, tally.rows])
        have.stops = np.concatenate([have.stops, tally.stops])
        have.looked += tally.looked
        have.looks_agreed += tally.looks_agreed
        have.seconds += tally.seconds
        have.cpu += tally.cpu
    return merged


# --- the figures --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    hits: int
    n: int

    @property
    def p(self) -> float:
        return self.hits / self.n if self.n else math.nan

    @property
    def se(self) -> float:
        return math.sqrt(self.p * (1 - self.p) / self.n) if self.n else math.nan

    def __str__(self) -> str:
        if not self.n:
            return "—"
        return f"{self.p:5.1%}±{self.se:3.1%}"


def share(mask: np.ndarray, valid: np.ndarray | None = None) -> Share:
    valid = np.ones(mask.shape, dtype=bool) if valid is None else valid
    return Share(int(np.count_nonzero(mask & valid)), int(np.count_nonzero(valid)))


@dataclass
class Goal:
    text: str
    value: float
    se: float
    ok: bool
    note: str = ""
    percent: bool = True


@dataclass
class Report:
    goals: list[Goal] = field(default_factory=list)

    def goal(self, text: str, value: float, se: float, ok: bool, note: str = "", *, percent: bool = True) -> None:
        self.goals.append(Goal(text, value, se, ok, note, percent))

    def worst_share(self, text: str, shares: Sequence[tuple[str, Share]], limit: float = FPR_GOAL) -> None:
        """A false-positive goal over several rows: met when the largest measured rate is within *limit*."""
        if not shares:
            return
        where, worst = max(shares, key=lambda x: (x[1].p, -x[1].n))
        self.goal(text, worst.p, worst.se, worst.p <= limit, f"worst of {len(shares)}: {where}")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _col(rows: np.ndarray, f: int) -> np.ndarray:
    return rows[..., f]


def fixed_line(name: str, rows: np.ndarray) -> tuple[str, dict[str, Share]]:
    """One row of a fixed-design table: the shares of each label, the gates, the intervals; *rows* is
    (reps, FIELDS) for one treatment and one variant."""
    label = _col(rows, F_LABEL)
    shares = {
        "improvement": share(label == IMPROVEMENT),
        "regression": share(label == REGRESSION),
        "claims": share((label == IMPROVEMENT) | (label == REGRESSION)),
        "inconclusive": share(label == INCONCL),
        "better": share(_col(rows, F_BETTER) == 1),
        "not worse": share(_col(rows, F_NOTWORSE) == 1),
        "coverage": share(_col(rows, F_COVER) == 1, _col(rows, F_COVER) >= 0),
        "on tasks": share(_col(rows, F_ON) == 1, _col(rows, F_ON) >= 0),
        "across": share(_col(rows, F_ACROSS) == 1, _col(rows, F_ACROSS) >= 0),
        "mixed": share(_col(rows, F_MIXED) == 1),
    }
    cells = [
        shares[k]
        for k in ("improvement", "regression", "inconclusive", "better", "not worse", "coverage", "on tasks", "mixed")
    ]
    return f"{name} | " + " ".join(f"{c!s:>11}" for c in cells), shares


FIXED_HEAD = (
    f"{'improvement':>11} {'regression':>11} {'inconclus.':>11} {'gate better':>11} {'gate ¬worse':>11} "
    f"{'CI coverage':>11} {'on-tasks CI':>11} {'mixed note':>11}"
)


def scope_of(rows: np.ndarray) -> str:
    scope = _col(rows, F_SCOPE)
    on = np.count_nonzero(scope == 1)
    return "on these tasks" if on > scope.size / 2 else "across tasks"


def _fpr_entries(
    name: str, effect: float, shares: dict[str, Share], out: dict[str, list[tuple[str, Share]]], scope: str
) -> None:
    """Collect the false-positive figures of a row: claims and ``better than`` under the null, ``not worse
    than`` at minus the margin."""
    if effect == 0:
        out.setdefault(f"{scope}: verdicts", []).append((name, shares["claims"]))
        out.setdefault(f"{scope}: gate better than", []).append((name, shares["better"]))
    if math.isclose(effect, -MARGIN):
        out.setdefault(f"{scope}: gate not worse than (at -{MARGIN:.0%})", []).append((name, shares["not worse"]))


def report_scopes(
    tallies: dict[Scenario, Tally], plan: Plan, rep: Report, coverage: dict[str, list[tuple[str, Share]]]
) -> None:
    print(
        f"\nScopes: one treatment against {BASELINE}; every task's true difference is the effect. CI coverage: the "
        f"deciding scope's interval; on-tasks CI: the on-these-tasks interval (the deciding one below 6 tasks)"
    )
    print(f"{'effect':>6} {'tasks':>5} {'trials':>6} {'scope':>14} | {FIXED_HEAD}")
    fpr: dict[str, list[tuple[str, Share]]] = {}
    for s in sorted(plan.scope_scenarios(), key=lambda x: (x.tasks, -x.trials, x.effect != 0, x.effect)):
        rows = tallies[s].rows[:, 0, 0]
        scope = scope_of(rows)
        line, shares = fixed_line(f"{s.effect:>+6.0%} {s.tasks:>5} {s.trials:>6} {scope:>14}", rows)
        print(line)
        name = f"{s.tasks} tasks x {s.trials}, {s.effect:+.0%}"
        _fpr_entries(name, s.effect, shares, fpr, scope)
        coverage.setdefault(scope, []).append((f"scopes {name}", shares["coverage"]))
    for text, entries in fpr.items():
        rep.worst_share(f"false positives, {text}", entries)


def report_exclusions(tallies: dict[Scenario, Tally], plan: Plan, rep: Report) -> None:
    print(
        f"\nExclusions ({TRIALS} trials per task and treatment): random, {EXCLUDE:.0%} of either side's attempts; "
        f"linked, the treatment's {EXCLUDE:.0%} when they would pass and {EXCLUDE_FAIL:.0%} when they would fail, "
        f"the baseline's {EXCLUDE:.0%}; retries: up to {ATTEMPTS - 1} more attempts. Still excl.: share of trials "
        f"excluded after retries. None (no exclusions, the same draws) is read with an effect only"
    )
    print(f"{'effect':>6} {'tasks':>5} {'exclusions':>17} {'still excl.':>11} | {FIXED_HEAD}")
    fpr: dict[str, list[tuple[str, Share]]] = {}
    for s in plan.exclusion_scenarios():
        tally = tallies[s]
        for v, (pattern, retries) in enumerate(VARIANTS):
            rows = tally.rows[:, v, 0]
            gone = float(np.sum(rows[:, F_EXCL])) / max(float(np.sum(rows[:, F_TRIALS])), 1.0)
            if pattern == "none" and s.effect <= 0:
                continue
            what = "none" if pattern == "none" else f"{pattern}, {'retries' if retries else 'no retries'}"
            line, shares = fixed_line(f"{s.effect:>+6.0%} {s.tasks:>5} {what:>17} {gone:>11.2%}", rows)
            print(line)
            if pattern != "none":
                found: dict[str, list[tuple[str, Share]]] = {}
                _fpr_entries(f"{s.tasks} tasks", s.effect, shares, found, scope_of(rows))
                fpr.setdefault(what, []).extend((f"{k}, {n}", x) for k, entries in found.items() for n, x in entries)
    for text, entries in fpr.items():
        rep.worst_share(f"false positives with exclusions, {text} (verdicts and gates)", entries)
    _power_loss(tallies, plan, rep)


def _power_loss(tallies: dict[Scenario, Tally], plan: Plan, rep: Report) -> None:
    """Power with 5% random exclusions against none, from the same draws (paired): with and without retries."""
    candidates = [s for s in plan.exclusion_scenarios() if s.effect > 0 and s.tasks >= 6]
    if not candidates:
        return
    s = max(candidates, key=lambda x: (x.tasks, x.effect))
    rows = tallies[s].rows[:, :, 0]
    power = (rows[:, :, F_LABEL] == IMPROVEMENT).astype(float)
    print(f"\nPower lost to {EXCLUDE:.0%} random exclusions ({s.tasks} tasks, {s.effect:+.0%}), paired with none")
    print(f"{'':>17} {'power':>12} {'loss (points)':>16}")
    print(f"{'none':>17} {Share(int(power[:, 0].sum()), len(power))!s:>12} {'':>16}")
    without = float((power[:, 0] - power[:, 1]).mean())
    for v, label in ((1, "no retries"), (2, "retries")):
        d = power[:, 0] - power[:, v]
        loss, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
        print(f"{label:>17} {Share(int(power[:, v].sum()), len(power))!s:>12} {loss * 100:>+9.1f} ±{se * 100:4.1f}")
        if v == 2:
            rep.goal(
                f"power loss, {EXCLUDE:.0%} random exclusions with retries ({s.tasks} tasks, {s.effect:+.0%})",
                loss,
                se,
                loss < LOSS_GOAL,
                f"goal < {LOSS_GOAL * 100:.0f} points; without retries {without * 100:+.1f}",
            )


def report_mixed(
    tallies: dict[Scenario, Tally], plan: Plan, rep: Report, coverage: dict[str, list[tuple[str, Share]]]
) -> None:
    print(
        f"\nMixed effects: +{MIXED_EFFECT:.0%} on half the tasks, -{MIXED_EFFECT:.0%} on the others (mean 0); beside "
        f"each, the null (every task unchanged); {TRIALS} trials. Across tasks, the interval's truth is the mean "
        f"of tasks like these, but every sample here is exactly half and half: it over-covers by design of the model, "
        f"and is left out of the coverage goal"
    )
    print(
        f"{'tasks':>5} {'truth':>6} {'scope':>14} | {'no sig. diff.':>13} {'mixed note':>11} {'omnibus rej.':>12} "
        f"{'improvement':>11} {'regression':>11} {'CI coverage':>11}"
    )
    nulls: list[tuple[str, Share]] = []
    for s, null in zip(plan.mixed_scenarios(), plan.mixed_nulls(), strict=True):
        for truth, sc in (("mixed", s), ("null", null)):
            rows = tallies[sc].rows[:, 0, 0]
            label, omni = _col(rows, F_LABEL), _col(rows, F_OMNIBUS)
            cells = [
                share(label == NSD),
                share(_col(rows, F_MIXED) == 1),
                share(omni == 1, omni >= 0),
                share(label == IMPROVEMENT),
                share(label == REGRESSION),
                share(_col(rows, F_COVER) == 1, _col(rows, F_COVER) >= 0),
            ]
            scope = scope_of(rows)
            widths = (13, 11, 12, 11, 11, 11)
            print(
                f"{s.tasks:>5} {truth:>6} {scope:>14} | "
                + " ".join(f"{c!s:>{w}}" for c, w in zip(cells, widths, strict=True))
            )
            if truth == "null":
                nulls.append((f"{s.tasks} tasks", cells[1]))
            elif scope == "on these tasks":
                # Across tasks, the truth is the mean of tasks like these, of which a random sample would
                # not always be exactly half and half: that interval over-covers here by design of the model.
                coverage.setdefault(scope, []).append((f"mixed {s.tasks} tasks", cells[5]))
    rep.worst_share('false positives, "mixed rather than absent" under the null', nulls)


def report_family(tallies: dict[Scenario, Tally], plan: Plan, rep: Report) -> None:
    print(
        f"\nSeveral treatments against {BASELINE} under the null (Holm's step-down over the family), {TRIALS} trials: "
        f"any: the share of experiments where at least one treatment was labelled or passed"
    )
    print(
        f"{'treatments':>10} {'tasks':>5} {'scope':>14} | {'any claim':>11} {'any better':>11} "
        f"{'per treatment':>13} {'any ¬worse':>11}"
    )
    fpr: list[tuple[str, Share]] = []
    for s in plan.family_scenarios():
        rows = tallies[s].rows[:, 0]  # (reps, treatments, FIELDS)
        label = rows[:, :, F_LABEL]
        claims = (label == IMPROVEMENT) | (label == REGRESSION)
        any_claim = share(claims.any(axis=1))
        any_better = share((rows[:, :, F_BETTER] == 1).any(axis=1))
        each = share(claims.reshape(-1))
        scope = scope_of(rows.reshape(-1, FIELDS))
        print(
            f"{s.treatments:>10} {s.tasks:>5} {scope:>14} | {any_claim!s:>11} {any_better!s:>11} {each!s:>13} "
            f"{share((rows[:, :, F_NOTWORSE] == 1).any(axis=1))!s:>11}"
        )
        fpr += [
            (f"{s.treatments} treatments, {scope}, verdicts", any_claim),
            (f"{s.treatments} treatments, {scope}, gates better than", any_better),
        ]
    for k in sorted({s.treatments for s in plan.family_scenarios()}):
        rep.worst_share(
            f"family-wise false positives, {k} treatments (verdicts and gates)",
            [x for x in fpr if x[0].startswith(f"{k} ")],
        )


def report_unequal(
    tallies: dict[Scenario, Tally], plan: Plan, rep: Report, coverage: dict[str, list[tuple[str, Share]]]
) -> None:
    print(f"\nUnequal trial counts: trials per task and treatment drawn from {UNEQUAL[0]}..{UNEQUAL[1]}")
    print(f"{'effect':>6} {'tasks':>5} {'scope':>14} | {FIXED_HEAD}")
    fpr: dict[str, list[tuple[str, Share]]] = {}
    for s in plan.unequal_scenarios():
        rows = tallies[s].rows[:, 0, 0]
        scope = scope_of(rows)
        line, shares = fixed_line(f"{s.effect:>+6.0%} {s.tasks:>5} {scope:>14}", rows)
        print(line)
        name = f"{s.tasks} tasks, {s.effect:+.0%}"
        _fpr_entries(name, s.effect, shares, fpr, scope)
        coverage.setdefault(scope, []).append((f"unequal {name}", shares["coverage"]))
    rep.worst_share(
        "false positives, unequal trial counts (verdicts and gates)", [e for entries in fpr.values() for e in entries]
    )


@dataclass(frozen=True)
class Curve:
    """A sequential scenario's stops read at every max count."""

    at: np.ndarray  # round decided at, 0: not within the simulated rounds
    decision: np.ndarray

    def decided(self, m: int, which: Sequence[int]) -> Share:
        hit = (self.at >= 1) & (self.at <= m) & np.isin(self.decision, which)
        return share(hit)

    def rounds(self, m: int) -> np.ndarray:
        return np.where((self.at >= 1) & (self.at <= m), self.at, m).astype(float)


def choose_max_count(tallies: dict[Scenario, Tally], plan: Plan) -> int:
    """The max count whose power at the planned effect is closest to the fixed design's (equal power; the
    smaller one on a tie)."""
    fixed = tallies[Scenario("fixed", SEQ_EFFECT, plan.seq_tasks)].rows[:, 0, 0]
    target = share(_col(fixed, F_LABEL) == IMPROVEMENT).p
    seq = tallies[Scenario("sequential", SEQ_EFFECT, plan.seq_tasks, max_count=plan.seq_max)]
    curve = Curve(seq.stops[:, 0], seq.stops[:, 1])
    return min(range(1, plan.seq_max + 1), key=lambda m: (abs(curve.decided(m, [1]).p - target), m))


def report_sequential(
    tallies: dict[Scenario, Tally], checks: dict[Scenario, Tally], plan: Plan, chosen: int, rep: Report
) -> None:
    t = plan.seq_tasks
    print(
        f"\nRun until decided: {t} tasks, a look after every round (one trial of every task under both), planned "
        f"effect {SEQ_EFFECT:+.0%}, equivalence margin {SEQ_MARGIN:.0%}, alpha {ALPHA}; {plan.seq_reps} runs per "
        f"effect; rounds: mean ±MC error"
    )
    curves = {}
    for s in plan.sequential_scenarios():
        tally = tallies[s]
        curves[s.effect] = Curve(tally.stops[:, 0], tally.stops[:, 1])
        if tally.looked:
            print(
                f"  {s.effect:+.0%}: literal looks (verdicts worked out again after every round) stopped at the same "
                f"round with the same decision in {tally.looks_agreed} of {tally.looked} runs"
            )
    null, one, two = curves[0.0], curves[SEQ_EFFECT], curves[2 * SEQ_EFFECT]
    print(
        f"{'max':>4} | {'null: claims':>12} {'equivalence':>11} {'rounds':>11} | {'+10: power':>11} {'rounds':>11} "
        f"| {'+20: power':>11} {'rounds':>11}"
    )

    def mean_se(x: np.ndarray) -> str:
        return f"{x.mean():5.2f}±{x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else math.nan:4.2f}"

    for m in sorted({*(x for x in SEQ_SHOWN if x <= plan.seq_max), chosen}):
        mark = "*" if m == chosen else " "
        print(
            f"{m:>3}{mark} | {null.decided(m, [1, 2])!s:>12} {null.decided(m, [3])!s:>11} "
            f"{mean_se(null.rounds(m)):>11} | {one.decided(m, [1])!s:>11} {mean_se(one.rounds(m)):>11} "
            f"| {two.decided(m, [1])!s:>11} {mean_se(two.rounds(m)):>11}"
        )
    fixed = {e: tallies[Scenario("fixed", e, t)].rows[:, 0, 0] for e in (0.0, SEQ_EFFECT, 2 * SEQ_EFFECT)}
    f_null = share(np.isin(_col(fixed[0.0], F_LABEL), [IMPROVEMENT, REGRESSION]))
    f_one = share(_col(fixed[SEQ_EFFECT], F_LABEL) == IMPROVEMENT)
    f_two = share(_col(fixed[2 * SEQ_EFFECT], F_LABEL) == IMPROVEMENT)
    print(
        f"fixed | {f_null!s:>12} {'—':>11} {TRIALS:>11.2f} | {f_one!s:>11} {TRIALS:>11.2f} | {f_two!s:>11} "
        f"{TRIALS:>11.2f}   ({TRIALS} trials per task and treatment; {f_null.n}, {f_one.n} and {f_two.n} experiments)"
    )
    print(
        f"* max count {chosen}: the one whose power at {SEQ_EFFECT:+.0%} ({one.decided(chosen, [1])}) is closest to "
        f"the fixed design's ({f_one}): equal power"
    )
    print(f"\nTrials spent at max count {chosen} (both sides; fixed design: {2 * t * TRIALS} per experiment)")
    print(f"{'effect':>8} | {'mean':>7} {'p10':>5} {'p50':>5} {'p90':>5} | {'sequential / fixed':>18}")
    ratios = {}
    for name, curve in (("null", null), (f"{SEQ_EFFECT:+.0%}", one), (f"{2 * SEQ_EFFECT:+.0%}", two)):
        rounds = curve.rounds(chosen)
        trials = 2 * t * rounds
        ratio = rounds.mean() / TRIALS
        se = rounds.std(ddof=1) / math.sqrt(len(rounds)) / TRIALS if len(rounds) > 1 else math.nan
        ratios[name] = (ratio, se)
        p10, p50, p90 = np.percentile(trials, [10, 50, 90])
        print(f"{name:>8} | {trials.mean():>7.1f} {p10:>5.0f} {p50:>5.0f} {p90:>5.0f} | {ratio:>11.2f} ±{se:4.2f}")
    if t == recommended_tasks():
        rep.goal(
            f"power at the recommended number of tasks ({t} tasks x {TRIALS} trials, {SEQ_EFFECT:+.0%}; >= 80%)",
            f_one.p,
            f_one.se,
            f_one.p >= 0.80,
            "tasks_needed fed the true sd of per-task differences under the model",
        )
    note = (
        f"{t} tasks, max count {chosen}; powers {one.decided(chosen, [1]).p:.1%} (sequential) and {f_one.p:.1%} (fixed)"
    )
    r, se = ratios[f"{SEQ_EFFECT:+.0%}"]
    rep.goal("sequential / fixed trials at the planned effect (<= 1)", r, se, r <= 1.0, note, percent=False)
    r, se = ratios[f"{2 * SEQ_EFFECT:+.0%}"]
    rep.goal(f"sequential / fixed trials at twice it (<= {FEWER_GOAL})", r, se, r <= FEWER_GOAL, note, percent=False)
    r, se = ratios["null"]
    rep.goal(
        f"sequential / fixed trials under the null, equivalence stop (<= {MORE_GOAL})",
        r,
        se,
        r <= MORE_GOAL,
        note,
        percent=False,
    )
    rep.worst_share(
        "false positives, sequential (claims under the null, a look after every round)",
        [
            (f"max count {chosen}", null.decided(chosen, [1, 2])),
            (f"max count {plan.seq_max}", null.decided(plan.seq_max, [1, 2])),
        ],
    )
    _report_checks(checks, plan, chosen, rep)


def _report_checks(checks: dict[Scenario, Tally], plan: Plan, chosen: int, rep: Report) -> None:
    print(
        f"\nThrough the reports: runs until decided stopped at max count {chosen} (records of the rounds run), "
        f"build_analysis(sequential=Design(...)) and the gates; {plan.check_reps} runs per effect. CS coverage: the "
        f"anytime-valid interval at the stop"
    )
    print(
        f"{'effect':>6} | {'agree':>11} {'improvement':>11} {'regression':>11} {'no sig. d.':>11} {'inconclus.':>11} "
        f"{'gate better':>11} {'gate ¬worse':>11} {'CS coverage':>11}"
    )
    fpr: list[tuple[str, Share]] = []
    for s in plan.check_scenarios(chosen):
        rows = checks[s].rows[:, 0, 0]
        label = _col(rows, F_LABEL)
        cells = [
            share(_col(rows, F_AGREE) == 1),
            share(label == IMPROVEMENT),
            share(label == REGRESSION),
            share(label == NSD),
            share(label == INCONCL),
            share(_col(rows, F_BETTER) == 1),
            share(_col(rows, F_NOTWORSE) == 1),
            share(_col(rows, F_COVER) == 1, _col(rows, F_COVER) >= 0),
        ]
        print(f"{s.effect:>+6.0%} | " + " ".join(f"{c!s:>11}" for c in cells))
        if s.effect == 0:
            fpr += [("verdicts", share((label == IMPROVEMENT) | (label == REGRESSION))), ("gate better than", cells[5])]
        if math.isclose(s.effect, -MARGIN):
            fpr.append((f"gate not worse than at -{MARGIN:.0%}", cells[6]))
    rep.worst_share("false positives, sequential through the reports (verdicts and gates)", fpr)


def report_coverage(coverage: dict[str, list[tuple[str, Share]]], rep: Report) -> None:
    for scope in ("across tasks", "on these tasks"):
        rows = coverage.get(scope, [])
        if not rows:
            continue
        pooled = Share(sum(s.hits for _, s in rows), sum(s.n for _, s in rows))
        short = [(n, s) for n, s in rows if s.p < COVERAGE_GOAL - COVERAGE_TOLERANCE]
        wide = [n for n, s in rows if s.p > COVERAGE_GOAL + COVERAGE_TOLERANCE]
        lowest = min(rows, key=lambda x: x[1].p)
        highest = max(rows, key=lambda x: x[1].p)
        note = (
            f"pooled over {len(rows)} rows; lowest {lowest[1]} ({lowest[0]}), highest {highest[1]} ({highest[0]}); "
            f"{len(short)} row(s) below 93; over 97 (designs too discrete for 95): {', '.join(wide) or 'none'}"
        )
        ok = abs(pooled.p - COVERAGE_GOAL) <= COVERAGE_TOLERANCE and not short
        rep.goal(f"interval coverage, {scope} (95 ± 2 pooled, no row below 93)", pooled.p, pooled.se, ok, note)


def print_goals(rep: Report) -> bool:
    print("\nGoals")
    ok = True
    for g in rep.goals:
        ok &= g.ok
        figure = f"{g.value:6.1%} ±{g.se:4.1%}" if g.percent else f"{g.value:6.2f} ±{g.se:4.2f}"
        print(f"  {verdict(g.ok)}  {figure}  {g.text}" + (f"  [{g.note}]" if g.note else ""))
    return ok


def report_all(tallies: dict[Scenario, Tally], checks: dict[Scenario, Tally], plan: Plan, chosen: int) -> Report:
    """Every section's tables, in order; the goals they measured."""
    rep = Report()
    coverage: dict[str, list[tuple[str, Share]]] = {}
    if "scopes" in plan.sections:
        report_scopes(tallies, plan, rep, coverage)
    if "exclusions" in plan.sections:
        report_exclusions(tallies, plan, rep)
    if "mixed" in plan.sections:
        report_mixed(tallies, plan, rep, coverage)
    if "family" in plan.sections:
        report_family(tallies, plan, rep)
    if "unequal" in plan.sections:
        report_unequal(tallies, plan, rep, coverage)
    if "sequential" in plan.sections:
        report_sequential(tallies, checks, plan, chosen, rep)
    report_coverage(coverage, rep)
    return rep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000, help="experiments per fixed-design scenario (default 1000)")
    parser.add_argument("--seed", type=int, default=11, help="seed of every generator (default 11)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument(
        "--seq-tasks",
        type=int,
        default=0,
        help="tasks of the sequential comparison (default: the report's recommendation for 80%% power at +10 points "
        "with 5 trials, 66)",
    )
    parser.add_argument(
        "--only", type=lambda x: x.split(","), default=None, help=f"comma-separated sections: {', '.join(SECTIONS)}"
    )
    parser.add_argument("--tiny", action="store_true", help="a few experiments of small scenarios (for tests)")
    parser.add_argument("--timings", action="store_true", help="print the seconds each scenario took")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.workers < 1 or args.seq_tasks < 0:
        parser.error("--reps and --workers must be at least 1")
    if args.only is not None and (unknown := [x for x in args.only if x not in SECTIONS]):
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    plan = make_plan(args)
    first = plan.first_phase()
    print(
        f"calibration: sections {', '.join(plan.sections)}; {len(first)} scenarios, {plan.reps} experiments per "
        f"fixed-design scenario, seed {args.seed}, {args.workers} worker(s)"
    )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    start = time.perf_counter()
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        tallies = execute(jobs_of(first, plan, args.seed), pool)
        checks: dict[Scenario, Tally] = {}
        chosen = 0
        if "sequential" in plan.sections:
            chosen = choose_max_count(tallies, plan)
            checks = execute(jobs_of(plan.check_scenarios(chosen), plan, args.seed), pool)
        rep = report_all(tallies, checks, plan, chosen)
    except Exception as exc:  # any failure of a run: report it and exit 1
        print(f"FAILED: {exc!r}", file=sys.stderr)
        return 1
    finally:
        if pool is not None:
            pool.shutdown()
    ok = print_goals(rep)
    if args.timings:
        print("\nCPU seconds per scenario (per experiment), and the wall seconds of its jobs")
        for s, x in sorted([*tallies.items(), *checks.items()], key=lambda i: -i[1].cpu):
            print(f"  {x.cpu:7.1f} ({x.cpu / max(len(x.rows), 1) * 1000:6.1f} ms) {x.seconds:7.1f}  {s}")
    done = [*tallies.values(), *checks.values()]
    print(
        f"\n{'every goal met' if ok else 'some goal MISSED'}; {time.perf_counter() - start:.0f} s wall, "
        f"{sum(x.seconds for x in done):.0f} s of work in the workers, {sum(x.cpu for x in done):.0f} s of CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
