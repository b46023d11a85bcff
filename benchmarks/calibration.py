"""Calibration benchmark: how often the verdict is right, by simulating thousands of experiments.

Each simulated experiment goes through the real decision path: the per-task summaries, trial counts and
excluded-trial counts that scaffold.reports.analysis builds from the records (``TaskSets``, ``Counts``),
handed to the real ``scaffold.reports.verdicts.decide``, which runs the real paired comparison, sign-flip
test, interval, bounds and power figure. Only the trial records themselves are skipped (their reading is
measured by benchmarks/reports.py): building 10^5 experiments of records would take hours, and the
verdict reads nothing of a record but its task, treatment, verdict and noise category.

The model (chosen so that every task's true difference equals the effect, and so the truth an interval
must cover is plain): each task has a baseline pass probability drawn uniformly from [0, 1 - effect];
the treatment adds the effect (0, +10 or +20 points). Each trial passes independently with its task's
probability. Easy tasks (all passing under both) and 1-trial tasks (differences of -1, 0, +1) are
common, which is where the statistics were wrong before.

Printed, per effect x tasks x trials, with Monte Carlo standard errors (sqrt(p(1-p)/R)):

* null (effect 0): the false-positive rate, any "improvement" or "regression"; goal **<= 5%**;
* effects: power (share "improvement") and the wrong-direction rate (share "regression");
* the coverage of the 95% interval of the mean per-task difference (the share of intervals containing
  the true effect); goal **95% +- 2 at >= 10 tasks**; beside it the coverage the plain t interval would
  have had without the binomial floor, computed from the same comparisons;
* the power at the recommended number of tasks: for each trial count, the true sd of per-task
  differences under the model goes into ``tasks_needed``, and experiments of that many tasks with a
  +10-point effect are simulated; goal **>= 0.80**. The old normal-approximation size is shown too;
* exclusion bias (item 13): the treatment's trials are excluded as noise with probability 5% when they
  would pass and 15% when they would fail (three times as likely), the baseline's 5% either way;
  recorded once with verdict ``error`` and once as ``failed``. Shares of each label, null and +20.

Informational: exits 0 whatever the figures (the goals are printed as PASS/MISS); exits 1 only when a
run fails. Deterministic for a given ``--seed`` and ``--reps`` (each scenario draws from its own
generator, so the worker count does not change the figures).

    .venv/bin/python benchmarks/calibration.py [--reps 2000] [--seed 11] [--workers 2] [--tiny]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

# One BLAS thread per process: the workers already use the cores, and on a busy machine OpenBLAS's
# spinning threads made one sign-flip product 5 to 40 times slower.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scaffold.reports.model import Counts  # noqa: E402
from scaffold.reports.verdicts import TaskSets, decide, label_of  # noqa: E402
from scaffold.stats import PairedComparison, TaskSummary, tasks_needed  # noqa: E402
from scaffold.stats.power import DEFAULT_EFFECT  # noqa: E402
from scaffold.stats.rates import t_quantile  # noqa: E402

BASELINE, TREATMENT = "CONTROL", "SKILL"
ALPHA = 0.05
EFFECTS = (0.0, 0.10, 0.20)
TASKS = (5, 10, 20, 50)  # 5 only to show the 5 tasks x 1 trial case; the coverage goal is for >= 10
TRIALS = (1, 3, 5, 10)
BIAS_TASKS = (10, 20, 50)
BIAS_TRIALS = 5
EXCLUDE_PASS, EXCLUDE_FAIL = 0.05, 0.15
FPR_GOAL, COVERAGE_GOAL, COVERAGE_TOLERANCE, POWER_GOAL = 0.05, 0.95, 0.02, 0.80


@dataclass(frozen=True)
class Scenario:
    kind: str  # "grid" | "power" | "bias"
    effect: float
    tasks: int
    trials: int
    reps: int
    seed: int
    recorded: str = ""  # bias only: the verdict excluded trials carry, "error" or "failed"
    label: str = ""  # power only: which recommendation the size came from


@dataclass
class Tally:
    scenario: Scenario
    labels: Counter[str] = field(default_factory=Counter)
    covered: int = 0
    covered_plain: int = 0
    intervals: int = 0
    # What the rule this replaced would have said (bias scenarios): Inconclusive when the raw set's label
    # differs from the analysis set's, else the analysis set's label.
    old_labels: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def _summary(task: str, treatment: str, trials: int, scored: int, passed: int) -> TaskSummary:
    # No weighted scores (as records without one): the verdict decides on pass rates alone, and the score
    # comparison it reports beside them would double the work of every experiment for nothing here.
    return TaskSummary(task, treatment, trials, scored, passed, 0, passed / scored if scored else math.nan, math.nan)


def _counts(trials: int, passed: int, failed: int, errored: int, excluded: int) -> Counts:
    return Counts(trials, passed, failed, errored, trials - excluded, 0, excluded, {}, {})


def run(scenario: Scenario) -> Tally:
    """R experiments of one scenario, each decided by the real ``decide``."""
    start = time.perf_counter()
    rng = np.random.default_rng(scenario.seed)
    r, t, m, effect = scenario.reps, scenario.tasks, scenario.trials, scenario.effect
    base = rng.uniform(0.0, 1.0 - effect, size=(r, t))
    passes = {BASELINE: rng.binomial(m, base), TREATMENT: rng.binomial(m, base + effect)}
    # Excluded trials per cell, split by what they would have been (bias scenarios only).
    gone_pass = {k: np.zeros((r, t), dtype=int) for k in passes}
    gone_fail = {k: np.zeros((r, t), dtype=int) for k in passes}
    if scenario.kind == "bias":
        for side, (q_pass, q_fail) in {
            BASELINE: (EXCLUDE_PASS, EXCLUDE_PASS),
            TREATMENT: (EXCLUDE_PASS, EXCLUDE_FAIL),
        }.items():
            gone_pass[side] = rng.binomial(passes[side], q_pass)
            gone_fail[side] = rng.binomial(m - passes[side], q_fail)
    names = [f"t{i:03d}" for i in range(t)]
    tally = Tally(scenario)
    t_crit = t_quantile(0.95, t - 1)
    for e in range(r):
        analysis: list[TaskSummary] = []
        raw: list[TaskSummary] = []
        excluded: dict[tuple[str, str], int] = {}
        counts: dict[str, Counts] = {}
        for side in (BASELINE, TREATMENT):
            p, gp, gf = passes[side][e], gone_pass[side][e], gone_fail[side][e]
            side_excluded = side_passed = 0
            for i, task in enumerate(names):
                gone = int(gp[i] + gf[i])
                kept_pass = int(p[i] - gp[i])
                if gone < m:  # a cell whose every trial was excluded is absent from the analysis set
                    analysis.append(_summary(task, side, m - gone, m - gone, kept_pass))
                if gone:
                    excluded[(task, side)] = gone
                # The raw set keeps excluded trials as recorded: "error" is unscored, "failed" a failure.
                raw_scored = m - gone if scenario.recorded != "failed" else m
                raw.append(_summary(task, side, m, raw_scored, kept_pass))
                side_excluded += gone
                side_passed += kept_pass
            trials = t * m
            errored = side_excluded if scenario.recorded != "failed" else 0
            counts[side] = _counts(trials, side_passed, trials - side_passed - errored, errored, side_excluded)
        analysis_set = tuple(analysis)
        # No flagged trials: the strict set is the analysis set.
        sets = TaskSets(analysis_set, tuple(raw), analysis_set, MappingProxyType(excluded))
        verdict = decide(sets, TREATMENT, BASELINE, True, counts, ALPHA, DEFAULT_EFFECT)
        tally.labels[verdict.label] += 1
        if scenario.kind == "bias":
            analysis_label = label_of(verdict.pass_rate, ALPHA)
            tally.old_labels[
                analysis_label if verdict.raw_label == analysis_label else "Inconclusive due to data quality"
            ] += 1
        c = verdict.pass_rate
        if isinstance(c, PairedComparison):
            tally.intervals += 1
            tally.covered += c.low <= effect <= c.high
            # The interval without the binomial floor, from the same comparison (for the comparison only).
            half = t_crit * c.sd / math.sqrt(c.n)
            tally.covered_plain += c.mean_difference - half <= effect <= c.mean_difference + half
    tally.seconds = time.perf_counter() - start
    return tally


def true_sd(trials: int, effect: float) -> float:
    """sd of one task's difference under the model: sqrt((E p(1-p) + E q(1-q)) / trials), q = p + effect."""

    def mean_pq(a: float, b: float) -> float:  # E[p(1-p)] for p uniform on [a, b]
        return (a + b) / 2.0 - (a * a + a * b + b * b) / 3.0

    top = 1.0 - effect
    return math.sqrt((mean_pq(0.0, top) + mean_pq(effect, 1.0)) / trials)


def normal_size(sd: float, effect: float) -> int:
    """What the report recommended before (z approximation), for the comparison."""
    z = 1.959963984540054 + 0.8416212335729143
    return max(6, math.ceil((z * sd / effect) ** 2 - 1e-9))


def scenarios(
    reps: int, seed: int, tasks: Sequence[int], trials: Sequence[int], bias_tasks: Sequence[int]
) -> list[Scenario]:
    out: list[Scenario] = []
    for effect in EFFECTS:
        for t in tasks:
            for m in trials:
                out.append(Scenario("grid", effect, t, m, reps, 0))
    for m in trials:
        sd = true_sd(m, DEFAULT_EFFECT)
        recommended = tasks_needed(sd, DEFAULT_EFFECT, ALPHA, trials=m).needed
        assert recommended is not None
        out.append(Scenario("power", DEFAULT_EFFECT, recommended, m, reps, 0, label="tasks_needed"))
        out.append(Scenario("power", DEFAULT_EFFECT, normal_size(sd, DEFAULT_EFFECT), m, reps, 0, label="z formula"))
    for recorded in ("error", "failed"):
        for effect in (0.0, 0.20):
            for t in bias_tasks:
                out.append(Scenario("bias", effect, t, BIAS_TRIALS, reps, 0, recorded=recorded))
    # One generator per scenario, seeded from its position: figures do not depend on the worker count.
    seeds = np.random.SeedSequence(seed).spawn(len(out))
    return [
        Scenario(s.kind, s.effect, s.tasks, s.trials, s.reps, int(ss.generate_state(1)[0]), s.recorded, s.label)
        for s, ss in zip(out, seeds, strict=True)
    ]


def share(count: int, total: int) -> tuple[float, float]:
    p = count / total if total else math.nan
    return p, math.sqrt(p * (1 - p) / total) if total else math.nan


def pct(count: int, total: int) -> str:
    p, se = share(count, total)
    return f"{p:6.1%} ±{se:4.1%}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(tallies: Sequence[Tally]) -> bool:
    """Print every table; True when every goal was met."""
    ok = True
    grid = [x for x in tallies if x.scenario.kind == "grid"]
    print("\nGrid (effect in pass-rate points; every task's true difference is the effect)")
    print(
        f"{'effect':>6} {'tasks':>5} {'trials':>6} | {'decisive: FPR / power':>22} {'wrong direction':>16} "
        f"| {'95% CI coverage':>16} {'goal':>4} | {'without floor':>13}"
    )
    for x in grid:
        s, n = x.scenario, x.scenario.reps
        improve, regress = x.labels["improvement"], x.labels["regression"]
        if s.effect == 0:
            decisive = pct(improve + regress, n)
            fpr = share(improve + regress, n)[0]
            good = fpr <= FPR_GOAL
            ok &= good
            decisive += f" {verdict(good)}"
            wrong = "—"
        else:
            decisive = pct(improve, n) + "     "
            wrong = pct(regress, n)
        cov, _ = share(x.covered, x.intervals)
        goal = "—"
        if s.tasks >= 10:
            good = abs(cov - COVERAGE_GOAL) <= COVERAGE_TOLERANCE
            ok &= good
            goal = verdict(good)
        print(
            f"{s.effect:>+6.0%} {s.tasks:>5} {s.trials:>6} | {decisive:>22} {wrong:>16} "
            f"| {pct(x.covered, x.intervals):>16} {goal:>4} | {share(x.covered_plain, x.intervals)[0]:>13.1%}"
        )

    print(
        f"\nPower at the recommended number of tasks (+{DEFAULT_EFFECT:.0%} points, alpha {ALPHA}); "
        f"goal >= {POWER_GOAL}"
    )
    print(f"{'trials':>6} {'true sd':>8} | {'size from':>12} {'tasks':>5} | {'power':>14} {'goal':>4}")
    for x in (x for x in tallies if x.scenario.kind == "power"):
        s = x.scenario
        p, _ = share(x.labels["improvement"], s.reps)
        goal = "—"
        if s.label == "tasks_needed":
            good = p >= POWER_GOAL
            ok &= good
            goal = verdict(good)
        print(
            f"{s.trials:>6} {true_sd(s.trials, s.effect):>8.3f} | {s.label:>12} {s.tasks:>5} "
            f"| {pct(x.labels['improvement'], s.reps):>14} {goal:>4}"
        )

    print(
        f"\nExclusion bias: the treatment's trials excluded with p {EXCLUDE_PASS:.0%} if they would pass, "
        f"{EXCLUDE_FAIL:.0%} if they would fail; the baseline's {EXCLUDE_PASS:.0%}; {BIAS_TRIALS} trials per task"
    )
    print(
        f"{'recorded':>8} {'effect':>6} {'tasks':>5} | {'improvement':>14} {'regression':>14} "
        f"{'inconclusive':>14} {'no difference':>14} | old rule: {'improvement':>11} {'inconclusive':>12}"
    )
    keys = ("improvement", "regression", "Inconclusive due to data quality", "no significant difference")
    for x in (x for x in tallies if x.scenario.kind == "bias"):
        s, n = x.scenario, x.scenario.reps
        cells = [pct(x.labels[k], n) for k in keys]
        old = [share(x.old_labels[k], n)[0] for k in (keys[0], keys[2])]
        print(
            f"{s.recorded:>8} {s.effect:>+6.0%} {s.tasks:>5} | "
            + " ".join(f"{c:>14}" for c in cells)
            + f" | {'':>9} {old[0]:>11.1%} {old[1]:>12.1%}"
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="experiments per scenario (default 2000)")
    parser.add_argument("--seed", type=int, default=11, help="seed of every generator (default 11)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--tiny", action="store_true", help="a few experiments of small scenarios (for tests)")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.workers < 1:
        parser.error("--reps and --workers must be at least 1")
    reps = 5 if args.tiny else args.reps
    todo = (
        scenarios(reps, args.seed, (5, 10), (1, 3), (10,))
        if args.tiny
        else scenarios(reps, args.seed, TASKS, TRIALS, BIAS_TASKS)
    )
    print(f"calibration: {len(todo)} scenarios x {reps} experiments, seed {args.seed}, {args.workers} worker(s)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    start = time.perf_counter()
    try:
        # Largest first, so the two workers finish together.
        order = sorted(range(len(todo)), key=lambda i: -todo[i].tasks * (3 if todo[i].kind == "bias" else 1))
        results: dict[int, Tally] = {}
        if args.workers == 1:
            results = {i: run(todo[i]) for i in order}
        else:
            with ProcessPoolExecutor(args.workers) as pool:
                results = dict(zip(order, pool.map(run, [todo[i] for i in order]), strict=True))
        tallies = [results[i] for i in range(len(todo))]
    except Exception as exc:  # any failure of a run: report it and exit 1
        print(f"FAILED: {exc!r}", file=sys.stderr)
        return 1
    ok = report(tallies)
    spent = sum(x.seconds for x in tallies)
    print(
        f"\n{'every goal met' if ok else 'some goal MISSED'}; "
        f"{time.perf_counter() - start:.0f} s wall, {spent:.0f} s of work"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
