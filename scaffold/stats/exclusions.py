"""Excluded trials: how far they could move a comparison, and whether one treatment lost more of them.

Excluding noise (rate limits, timeouts, container failures) is only harmless when what was excluded is
unrelated to the outcome. When exclusions are tied to it (a trial that would have failed is more likely
to hit a timeout), dropping them biases the comparison, and no amount of data in the analysis set can
show it. So the verdict is recomputed at the two extremes (``impute_excluded``): every excluded trial of
one side counted as a failure and every one of the other side as a pass, and the other way round. A
label that survives both is not an artefact of the exclusions, whatever they would have been.

``fisher_exact`` tests the other symptom: whether the share excluded differs between two treatments.

Retries recover excluded trials, but only half the problem: when a side's failing attempts are the
ones excluded, a retry redraws them and the side's trials that were never excluded keep their lean
towards passing (in benchmarks/calibration.py, failing attempts excluded three times as often as
passing ones on the treatment's side made the "not worse than" gate pass 6.4% of the time at its
margin). Exclusions at the same rate on both sides are taken as the environment's noise, which retries
may recover; ``excess_recovered`` finds the recovered trials of a side beyond the other side's share
(and beyond a standard error of chance), whose first attempts the bounds then count as excluded. It
costs little when exclusions are balanced (a 5% rate on both sides: a first attempt or two of 100 in
a sixth of the experiments) and bounds the lean where one side loses more.

Pure: counts in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from scaffold.stats.outcomes import TaskSummary

if TYPE_CHECKING:
    import numpy as np

__all__ = ["excess_recovered", "fisher_exact", "impute_at_rates", "impute_excluded"]

# Tables as likely as the observed one, up to rounding, count as "at least as extreme" (the tolerance
# scipy.stats.fisher_exact uses, so both give the same p-value).
_RELATIVE_TIE = 1e-7


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test of the 2x2 table [[a, b], [c, d]].

    Rows are the two treatments, columns (excluded, kept). With the margins fixed the top-left count is
    hypergeometric; p is the probability of every table no more likely than the observed one, as
    scipy.stats.fisher_exact computes it (tests hold the two to each other). 1.0 when a margin is 0.
    Written on scipy.special rather than imported from scipy.stats for start-up time only.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"a 2x2 table needs counts >= 0 (got {a}, {b}, {c}, {d})")
    row, other, column = a + b, c + d, a + c
    total = row + other
    if 0 in (row, other) or column in (0, total):
        return 1.0
    import numpy as np  # here, not at the top: see scaffold.stats.paired

    support = np.arange(max(0, column - other), min(row, column) + 1)

    def log_pmf(x: np.ndarray) -> np.ndarray:
        return np.asarray(
            _log_choose(row, x) + _log_choose(other, column - x) - _log_choose(total, np.asarray(column)), dtype=float
        )

    logs = log_pmf(support)
    observed = float(log_pmf(np.asarray([a]))[0])
    kept = logs[logs <= observed + math.log1p(_RELATIVE_TIE)]
    return min(1.0, float(np.exp(kept).sum()))


def _log_choose(n: int, k: np.ndarray) -> np.ndarray:
    import numpy as np

    # scipy.special, not scipy.stats: see scaffold.stats.rates (the import time of every `comet report`).
    from scipy.special import gammaln  # type: ignore[import-untyped]  # scipy ships no type stubs

    return np.asarray(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1), dtype=float)


def impute_excluded(
    summaries: Iterable[TaskSummary], excluded: Mapping[tuple[str, str], int], as_passed: Mapping[str, bool]
) -> tuple[TaskSummary, ...]:
    """The per-task summaries of the treatments in *as_passed* with their excluded trials put back as
    passes (True) or failures (False). *excluded* counts them per (task, treatment); a task whose every
    trial was excluded comes back with those trials alone. Other treatments are left out. Only the pass
    rate is imputed: the mean score of a summary stays that of its scored trials.
    """
    by_key = {(s.task, s.treatment): s for s in summaries if s.treatment in as_passed}
    for key, count in excluded.items():
        task, treatment = key
        if count and treatment in as_passed and key not in by_key:
            by_key[key] = TaskSummary(task, treatment, 0, 0, 0, 0, math.nan, math.nan)
    out = []
    for (task, treatment), s in sorted(by_key.items(), key=lambda item: (item[0][1], item[0][0])):
        count = excluded.get((task, treatment), 0)
        if count:
            scored, passed = s.scored + count, s.passed + (count if as_passed[treatment] else 0)
            s = replace(s, trials=s.trials + count, scored=scored, passed=passed, pass_rate=passed / scored)
        out.append(s)
    return tuple(out)


def impute_at_rates(
    summaries: Iterable[TaskSummary], excluded: Mapping[tuple[str, str], int], chance: Mapping[tuple[str, str], float]
) -> tuple[TaskSummary, ...]:
    """The per-task summaries of the (task, treatment) cells in *chance* with their excluded trials put
    back as passes in the proportion *chance* gives the cell (rounded to whole trials: the exact tests
    count trials). Cells not in *chance* are left out."""
    by_key = {(s.task, s.treatment): s for s in summaries if (s.task, s.treatment) in chance}
    out = []
    for key in sorted(chance, key=lambda k: (k[1], k[0])):
        s = by_key.get(key) or TaskSummary(key[0], key[1], 0, 0, 0, 0, math.nan, math.nan)
        count = excluded.get(key, 0)
        if count:
            passed = s.passed + round(count * min(max(chance[key], 0.0), 1.0))
            scored = s.scored + count
            s = replace(s, trials=s.trials + count, scored=scored, passed=passed, pass_rate=passed / scored)
        if s.scored:
            out.append(s)
    return tuple(out)


def excess_recovered(
    recovered: Mapping[tuple[str, str], int], trials: Mapping[str, int], baseline: str, treatment: str
) -> dict[tuple[str, str], int]:
    """Per (task, side): how many of the side's recovered trials (first attempt excluded, a retry scored)
    lie beyond the other side's share of them, less one standard error of the difference of the two
    shares under equal rates (the module docstring). Only the side with the larger share has any; they
    are spread over its tasks in proportion to its recovered trials there (largest remainders)."""
    sides = (baseline, treatment)
    counts = {t: sum(n for (_, side), n in recovered.items() if side == t) for t in sides}
    if not all(trials.get(t) for t in sides) or not any(counts.values()):
        return {}
    share = {t: counts[t] / trials[t] for t in sides}
    pooled = (counts[baseline] + counts[treatment]) / (trials[baseline] + trials[treatment])
    error = math.sqrt(pooled * (1 - pooled) * (1 / trials[baseline] + 1 / trials[treatment]))
    high, low = (treatment, baseline) if share[treatment] >= share[baseline] else (baseline, treatment)
    extra = min(counts[high], math.floor((share[high] - share[low] - error) * trials[high] + 1e-9))
    if extra <= 0:
        return {}
    cells = sorted(((task, side), n) for (task, side), n in recovered.items() if side == high and n)
    quotas = [(key, extra * n / counts[high]) for key, n in cells]
    out = {key: math.floor(q) for key, q in quotas}
    left = extra - sum(out.values())
    for key, _ in sorted(quotas, key=lambda kq: (math.floor(kq[1]) - kq[1], kq[0]))[:left]:
        out[key] += 1
    return {key: n for key, n in out.items() if n}
