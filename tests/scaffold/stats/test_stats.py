"""scaffold.stats: known answers computed by hand, edge cases that must not raise, and properties."""

from __future__ import annotations

import ast
import itertools
import math
import random
from fractions import Fraction
from math import comb
from pathlib import Path
from unittest.mock import ANY

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2  # type: ignore[import-untyped]

import scaffold.stats as stats_pkg
from scaffold.records import TrialRecord
from scaffold.reports.verdicts import label_of
from scaffold.stats import (
    Insufficient,
    KPlan,
    PairedComparison,
    TaskSummary,
    TrialOutcome,
    binomial_floor,
    compare_treatments,
    fisher_exact,
    impute_excluded,
    k_ladder,
    mean_over_tasks,
    outcomes_from_records,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_observed,
    plan_ks,
    sign_flip_p_value,
    summarize_tasks,
    summarize_treatments,
    t_test_power,
    tasks_needed,
    trials_needed,
    wilson_interval,
)
from tests.support.factories import REPO
from tests.support.records import record_of

nan = math.nan


def trials(task: str, treatment: str, verdicts: str, scores: list[float | None] | None = None) -> list[TrialOutcome]:
    """'P' passed, 'F' failed, 'E' errored (unscored); scores default to 1.0 / 0.0 / None."""
    passed = {"P": True, "F": False, "E": None}
    default = {"P": 1.0, "F": 0.0, "E": None}
    scores = scores if scores is not None else [default[v] for v in verdicts]
    return [
        TrialOutcome(task, treatment, i + 1, passed[v], s)
        for i, (v, s) in enumerate(zip(verdicts, scores, strict=True))
    ]


def summary(task: str, treatment: str, pass_rate: float, mean_score: float = nan, n: int = 4) -> TaskSummary:
    return TaskSummary(task, treatment, n, n, round(pass_rate * n), n, pass_rate, mean_score)


# --- the package itself --------------------------------------------------------------------------------


def test_public_api_is_exactly_all() -> None:
    # Identifiers only: imported under pytest's assertion rewriting (first by a test module), the package
    # also holds the rewriter's helpers, "@py_builtins" and "@pytest_ar".
    public = {name for name in vars(stats_pkg) if name.isidentifier() and not name.startswith("_")} - {"annotations"}
    modules = {
        "aggregate",
        "agreement",
        "exclusions",
        "heterogeneity",
        "outcomes",
        "paired",
        "passk",
        "power",
        "rates",
        "sequential",
        "stratified",
    }
    assert set(stats_pkg.__all__) == public - modules
    assert stats_pkg.__all__ == sorted(stats_pkg.__all__)


@pytest.mark.parametrize("path", sorted((REPO / "scaffold/stats").glob("*.py")), ids=lambda p: p.name)
def test_stats_is_pure(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    assert not {n.split(".")[0] for n in names} & {"pytest", "_pytest", "docker", "subprocess", "pytest_comet"}


# --- pass@k and pass^k of one task ---------------------------------------------------------------------


def test_pass_at_k_by_hand_n5_c2() -> None:
    # 1 - C(3,k)/C(5,k): k=1 1-3/5, k=2 1-3/10, k=3 1-1/10, k>=4 C(3,k)=0
    expected = [0.4, 0.7, 0.9, 1.0, 1.0]
    assert [pass_at_k(5, 2, k) for k in range(1, 6)] == pytest.approx(expected, abs=1e-12)


def test_pass_hat_k_by_hand_n5_c2() -> None:
    # C(2,k)/C(5,k): k=1 2/5, k=2 1/10, k>=3 0; observed form: not every trial passed -> 0
    assert [pass_hat_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.1, 0.0, 0.0, 0.0], abs=1e-12)
    assert [pass_hat_k_observed(5, 2, k) for k in range(1, 6)] == [0.0] * 5
    assert [pass_hat_k_observed(5, 5, k) for k in range(1, 6)] == [1.0] * 5
    assert [pass_hat_k(5, 5, k) for k in range(1, 6)] == [1.0] * 5


def test_stable_forms_match_the_binomial_definitions_exactly() -> None:
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at = 1 - Fraction(comb(n - c, k), comb(n, k))
                hat = Fraction(comb(c, k), comb(n, k))
                assert pass_at_k(n, c, k) == pytest.approx(float(at), abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(float(hat), abs=1e-12)


def test_large_counts_do_not_overflow() -> None:
    # c = 1: pass@k = k/n exactly; c = n-1: pass^k = (n-k)/n
    assert pass_at_k(1_000_000, 1, 1000) == pytest.approx(0.001, rel=1e-9)
    assert pass_hat_k(1_000_000, 999_999, 1000) == pytest.approx(0.999, rel=1e-9)
    assert 0.0 < pass_at_k(5000, 17, 250) < 1.0


def test_too_few_trials_give_nan_not_an_error() -> None:
    for fn in (pass_at_k, pass_hat_k, pass_hat_k_observed):
        assert math.isnan(fn(0, 0, 1))  # no trial at all
        assert math.isnan(fn(3, 3, 5))  # n < k
        assert fn(3, 0, 3) == 0.0  # all failed
        assert fn(3, 3, 3) == 1.0  # all passed


def test_impossible_counts_are_usage_errors() -> None:
    for fn in (pass_at_k, pass_hat_k, pass_hat_k_observed):
        with pytest.raises(ValueError, match="0 <= c <= n"):
            fn(3, 4, 1)
        with pytest.raises(ValueError, match="k must be at least 1"):
            fn(3, 1, 0)


# --- the k plan --------------------------------------------------------------------------------------------


def test_k_ladder() -> None:
    assert k_ladder(0) == ()
    assert k_ladder(1) == (1,)
    assert k_ladder(10) == (1, 2, 5, 10)
    assert k_ladder(7) == (1, 2, 5)
    assert k_ladder(100) == (1, 2, 5, 10, 20, 50, 100)


def test_k_is_clamped_to_the_fewest_trials_and_says_why() -> None:
    rows = [summary("a", "CONTROL", 0.5, n=12), summary("b", "SKILL", 0.5, n=7), summary("c", "SKILL", 0.5, n=10)]
    plan = plan_ks(rows)
    assert (plan.ks, plan.clamped_from, plan.min_trials) == ((1, 2, 5), 10, 7)
    assert "'b'" in plan.reason and "SKILL" in plan.reason and "7" in plan.reason and "--count" in plan.reason
    full = plan_ks([summary("a", "CONTROL", 0.5, n=10)])
    assert full == KPlan((1, 2, 5, 10), None, full.reason, 10)
    assert plan_ks([summary("a", "C", 0.5, n=20)], max_k=20).ks == (1, 2, 5, 10, 20)
    assert plan_ks([summary("a", "C", 0.5, n=6)], max_k=7) == KPlan((1, 2, 5), None, ANY, 6)  # no k lost


def test_k_plan_leaves_out_unscored_tasks_and_survives_no_data() -> None:
    empty = TaskSummary("dead", "CONTROL", 3, 0, 0, 0, nan, nan)
    plan = plan_ks([empty, summary("a", "CONTROL", 0.5, n=2)])
    assert plan.ks == (1, 2) and plan.clamped_from == 10 and "'dead'" in plan.reason
    nothing = plan_ks([empty])
    assert nothing.ks == () and "no task has a scored trial" in nothing.reason
    assert plan_ks([]).ks == ()


# --- Wilson ------------------------------------------------------------------------------------------------


def test_wilson_7_of_10_matches_the_published_formula() -> None:
    # Wilson (1927) with z = 1.959963985: (0.396781, 0.892209)
    rate = wilson_interval(7, 10)
    assert rate.rate == 0.7
    assert rate.low == pytest.approx(0.3967781475, abs=1e-6)
    assert rate.high == pytest.approx(0.8922087326, abs=1e-6)
    # Independently: the bounds are the roots of (0.7 - x)^2 = z^2 x (1 - x) / 10.
    z2, n, p = 1.959963984540054**2, 10, 0.7
    a, b, c = 1 + z2 / n, -(2 * p + z2 / n), p * p
    roots = sorted((-b + s * math.sqrt(b * b - 4 * a * c)) / (2 * a) for s in (-1, 1))
    assert [rate.low, rate.high] == pytest.approx(roots, abs=1e-12)


def test_wilson_edges() -> None:
    zero = wilson_interval(0, 10)
    assert zero.low == 0.0 and 0.0 < zero.high < 0.35  # not degenerate like Wald
    full = wilson_interval(10, 10)
    assert full.high == 1.0 and 0.65 < full.low < 1.0
    empty = wilson_interval(0, 0)
    assert math.isnan(empty.rate) and math.isnan(empty.low) and math.isnan(empty.high)
    assert wilson_interval(7, 10, 0.99).low < wilson_interval(7, 10).low
    with pytest.raises(ValueError, match="successes <= trials"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 2, 1.5)


# --- across tasks --------------------------------------------------------------------------------------------


def test_clustered_standard_error_by_hand() -> None:
    # Tasks: a 3/4, b 2/4, c 1/4, d 1/2 (+2 errored, unscored). Per-task rates .75, .5, .25, .5.
    outcomes = [*trials("a", "S", "PPPF"), *trials("b", "S", "PPFF"), *trials("c", "S", "PFFF")]
    outcomes += trials("d", "S", "PEFE")
    (stat,) = summarize_treatments(outcomes)
    est = stat.pass_rate
    # mean 0.5; sd^2 = (.0625 + 0 + .0625 + 0) / 3; se = sd / sqrt(4) = 0.1020621
    assert est.n == 4 and est.mean == 0.5
    assert est.se == pytest.approx(math.sqrt(0.125 / 3) / 2, abs=1e-12)
    t3 = 3.182446305284263  # t_{0.975, 3}
    assert (est.low, est.high) == pytest.approx((0.5 - t3 * est.se, 0.5 + t3 * est.se), abs=1e-9)
    assert (est.low, est.high) == pytest.approx((0.175193, 0.824807), abs=1e-6)
    # Unscored is not failed: d counts as 1/2, and the pooled rate is 7/14 trials, not 7/16.
    assert stat.pooled.trials == 14 and stat.pooled.successes == 7
    assert stat.unscored_trials == 2 and stat.trials == 16
    # A mean of rates cannot leave [0, 1]: the interval is clipped.
    wide = mean_over_tasks([1.0, 0.5, 0.0, 0.5], bounds=(0.0, 1.0))
    assert (wide.low, wide.high) == (0.0, 1.0)


def test_per_task_means_se_equals_the_cluster_robust_formula_on_balanced_data() -> None:
    # Miller (2024): Var_CR = (1/N^2) sum_c (sum_i (s_ic - mean))^2; with m trials in each of T tasks the
    # per-task-means SE is the same up to sqrt(T / (T - 1)).
    tasks = {"a": [1, 1, 0], "b": [0, 0, 0], "c": [1, 1, 1], "d": [1, 0, 0], "e": [0, 1, 0]}
    cells = [v for vs in tasks.values() for v in vs]
    grand = sum(cells) / len(cells)
    var_cr = sum(sum(v - grand for v in vs) ** 2 for vs in tasks.values()) / len(cells) ** 2
    est = mean_over_tasks([sum(vs) / len(vs) for vs in tasks.values()])
    t_count = len(tasks)
    assert est.mean == pytest.approx(grand)
    assert est.se == pytest.approx(math.sqrt(var_cr * t_count / (t_count - 1)), rel=1e-12)


def test_mean_over_tasks_edges() -> None:
    empty = mean_over_tasks([])
    assert empty.n == 0 and math.isnan(empty.mean) and math.isnan(empty.se)
    one = mean_over_tasks([0.4, nan])
    assert one.n == 1 and one.mean == 0.4 and math.isnan(one.se) and math.isnan(one.low)
    flat = mean_over_tasks([0.3, 0.3, 0.3])
    assert (flat.se, flat.low, flat.high) == (0.0, 0.3, 0.3)
    unbounded = mean_over_tasks([1.0, 0.5, 0.0, 0.5])
    assert unbounded.low < 0.0  # scores are not clipped unless bounds are given


def test_score_intervals_stay_on_the_scale_of_scores() -> None:
    # Two tasks (t with one degree of freedom): the mean score 0.96 had the interval 0.49 to 1.44, a score
    # no trial can have. Clipped to [0, 1] (and a difference of scores to [-1, 1]), as pass rates are.
    outcomes = [
        *trials("a", "CONTROL", "PP", [0.0, 0.0]),
        *trials("b", "CONTROL", "PP", [1.0, 1.0]),
        *trials("c", "CONTROL", "PP", [0.0, 0.0]),
        *trials("a", "SKILL", "PP", [0.92, 0.92]),
        *trials("b", "SKILL", "PP", [1.0, 1.0]),
        *trials("c", "SKILL", "PP", [1.0, 1.0]),
    ]
    two = summarize_treatments([o for o in outcomes if o.task != "c"])
    skill = next(t for t in two if t.treatment == "SKILL").mean_score
    assert skill.mean == pytest.approx(0.96) and skill.high == 1.0 and 0.0 <= skill.low < 0.96
    difference = compare_treatments(summarize_tasks(outcomes), "CONTROL", "SKILL", "mean_score")
    assert isinstance(difference, PairedComparison)
    assert difference.mean_difference == pytest.approx(0.64) and difference.high == 1.0 and difference.low >= -1.0


# --- reducer and adapter ---------------------------------------------------------------------------------


def test_outcomes_from_records_make_errors_unscored() -> None:
    def rec(task: str, trial: int, verdict: str, score: float | None) -> TrialRecord:
        data = {"case_id": f"{task}-r{trial}", "task": task, "treatment": "CONTROL", "trial": trial}
        return record_of(
            {
                **data,
                "experiment_id": "e",
                "config": {},
                "config_hash": "h",
                "verdict": verdict,
                "weighted_score": score,
                "noise": {"category": "included"},
                "streams": (),
            }
        )

    records = [rec("b", 1, "passed", 0.9), rec("a", 2, "error", 0.5), rec("a", 1, "failed", None)]
    # Reading rejects a NaN score (or reads an old one as unknown); one built in memory is still unscored.
    records.append(msgspec.structs.replace(rec("a", 3, "failed", None), weighted_score=nan))
    assert outcomes_from_records(records) == (
        TrialOutcome("a", "CONTROL", 1, False, None),
        TrialOutcome("a", "CONTROL", 2, None, None),
        TrialOutcome("a", "CONTROL", 3, False, None),
        TrialOutcome("b", "CONTROL", 1, True, 0.9),
    )


def test_reducer_keeps_unscored_apart_and_is_order_independent() -> None:
    outcomes = trials("t", "S", "PFEP", [0.8, nan, None, 0.6]) + trials("dead", "S", "EE")
    rows = summarize_tasks(outcomes)
    assert [(r.task, r.trials, r.scored, r.passed, r.scores, r.unscored) for r in rows] == [
        ("dead", 2, 0, 0, 0, 2),
        ("t", 4, 3, 2, 2, 1),
    ]
    dead, t = rows
    assert math.isnan(dead.pass_rate) and math.isnan(dead.mean_score)  # unscored, not 0
    assert t.pass_rate == pytest.approx(2 / 3) and t.mean_score == pytest.approx(0.7)
    shuffled = outcomes[::-1]
    random.Random(1).shuffle(shuffled)
    assert repr(summarize_tasks(shuffled)) == repr(rows)
    assert t.wilson() == wilson_interval(2, 3)
    assert (t.pass_at_k(3), t.pass_hat_k(3), t.pass_hat_k_observed(3)) == (1.0, 0.0, 0.0)


def test_treatments_share_one_k_plan_and_survive_edge_cases() -> None:
    outcomes = trials("a", "CONTROL", "PFPFP") + trials("a", "SKILL", "PPP") + trials("b", "SKILL", "EEE")
    control, skill = summarize_treatments(outcomes, max_k=5)
    assert control.plan == skill.plan and control.plan.ks == (1, 2) and control.plan.clamped_from == 5
    assert control.pass_at_k[2].mean == pytest.approx(pass_at_k(5, 3, 2))
    assert skill.pass_hat_k[2].mean == 1.0 and skill.pass_hat_k_observed[1].mean == 1.0
    assert skill.unscored_tasks == ("b",) and skill.pass_rate.n == 1  # b is absent, not a failure
    assert math.isnan(skill.mean_score.se)  # a single task: no spread to estimate
    assert summarize_treatments([]) == ()
    (lonely,) = summarize_treatments(trials("x", "S", "EE"))
    assert lonely.plan.ks == () and lonely.pass_at_k == {} and math.isnan(lonely.pass_rate.mean)
    reordered = summarize_treatments(outcomes[::-1], max_k=5)
    assert repr(reordered) == repr((control, skill))


# --- paired comparison -----------------------------------------------------------------------------------


def test_sign_flip_p_values_by_hand() -> None:
    # d = 1,2,3,4: |sum| = 10 is reached only by all-plus and all-minus -> 2/16
    assert sign_flip_p_value([1, 2, 3, 4]) == 0.125
    # d = 1,1,2: sums over 8 patterns are +-4, +-2 (x2), 0 (x2) -> |S| >= 4 in 2/8 (ties count)
    assert sign_flip_p_value([1, 1, 2]) == 0.25
    # d = .2,.4,-.1: |S| in {.7,.5,.3,.1} twice each; observed .5 -> 4/8 (a float tie must still count)
    assert sign_flip_p_value([0.2, 0.4, -0.1]) == 0.5
    assert sign_flip_p_value([0.0, 0.0, 0.0]) == 1.0
    assert sign_flip_p_value([]) == 1.0
    assert sign_flip_p_value([0.5, nan, 0.25]) == sign_flip_p_value([0.5, 0.25]) == 0.5


def test_monte_carlo_is_deterministic_and_close_to_exact() -> None:
    rng = random.Random(7)
    d = [rng.uniform(-0.2, 0.45) for _ in range(17)]
    exact = sign_flip_p_value(d, exact_max=17)
    mc = sign_flip_p_value(d)
    assert mc == sign_flip_p_value(d)  # seeded
    assert abs(mc - exact) < 0.015
    assert sign_flip_p_value([0.1] * 30) == pytest.approx(1 / 20_001)  # never 0


def test_paired_comparison_by_hand() -> None:
    base = [summary("a", "B", 0.25), summary("b", "B", 0.5), summary("c", "B", 0.75), summary("d", "B", 0.5)]
    new = [summary("a", "T", 0.75), summary("b", "T", 0.75), summary("c", "T", 0.5), summary("d", "T", 0.5)]
    result = compare_treatments(base + new, "B", "T")
    assert isinstance(result, PairedComparison)
    assert result.tasks == ("a", "b", "c", "d") and result.differences == (0.5, 0.25, -0.25, 0.0)
    assert (result.improved, result.regressed, result.unchanged) == (2, 1, 1)
    assert result.mean_difference == 0.125
    # sd^2 = (.375^2 + .125^2 + .375^2 + .125^2) / 3 = 0.3125 / 3
    assert result.sd == pytest.approx(math.sqrt(0.3125 / 3))
    assert result.high - result.mean_difference == pytest.approx(3.182446305284263 * result.sd / 2, rel=1e-9)
    # |+-.5 +-.25 +-.25| (d_d = 0 does not matter) is 1, .5, .5, 0 for either sign of .5: 3/4 reach .5
    assert result.p_value == 0.75 and result.exact


def test_swapping_treatments_negates_the_difference_only() -> None:
    rows = [summary(t, "B", r) for t, r in zip("abcdef", [0.2, 0.4, 0.6, 0.5, 0.0, 1.0], strict=True)]
    rows += [summary(t, "T", r) for t, r in zip("abcdef", [0.6, 0.4, 0.8, 0.75, 0.25, 1.0], strict=True)]
    forward, backward = compare_treatments(rows, "B", "T"), compare_treatments(rows, "T", "B")
    assert isinstance(forward, PairedComparison) and isinstance(backward, PairedComparison)
    assert forward.p_value == backward.p_value == 8 / 64  # the 4 non-zero differences all positive: 2 * 2^2 / 2^6
    assert forward.mean_difference == -backward.mean_difference
    assert (forward.improved, forward.regressed) == (backward.regressed, backward.improved) == (4, 0)
    assert (forward.low, forward.high) == pytest.approx((-backward.high, -backward.low))


def test_only_tasks_scored_under_both_are_paired() -> None:
    outcomes = trials("a", "B", "PF") + trials("a", "T", "PP") + trials("b", "B", "FF") + trials("b", "T", "EE")
    outcomes += trials("c", "B", "PF") + trials("c", "T", "PF") + trials("d", "T", "PPP")
    rows = summarize_tasks(outcomes)
    result = compare_treatments(rows, "B", "T")
    assert isinstance(result, Insufficient)
    assert (result.n, result.needed) == (2, 3)
    assert "2 task(s)" in result.reason and "at least 3" in result.reason and "b, d" in result.reason
    relaxed = compare_treatments(rows, "B", "T", min_tasks=2)
    assert isinstance(relaxed, PairedComparison)
    assert relaxed.tasks == ("a", "c") and relaxed.unpaired == ("b", "d")


def test_mean_score_comparison_ignores_unscored_scores() -> None:
    outcomes = []
    for task, before, after in [("a", 0.5, 0.7), ("b", 0.4, 0.4), ("c", 0.9, 0.6), ("d", 0.2, 0.5)]:
        outcomes += trials(task, "B", "PFE", [before, before, None])
        outcomes += trials(task, "T", "PPF", [after, nan, after])
    result = compare_treatments(summarize_tasks(outcomes), "B", "T", "mean_score")
    assert isinstance(result, PairedComparison)
    assert result.differences == pytest.approx((0.2, 0.0, -0.3, 0.3))
    assert (result.improved, result.regressed, result.unchanged) == (2, 1, 1)


def test_comparison_edge_cases_do_not_raise() -> None:
    assert isinstance(compare_treatments([], "B", "T"), Insufficient)
    single = compare_treatments([summary("a", "B", 0.5), summary("a", "T", 1.0)], "B", "T")
    assert isinstance(single, Insufficient) and single.n == 1
    flat = [summary(t, side, 1.0) for t in "abc" for side in "BT"]
    same = compare_treatments(flat, "B", "T")
    assert isinstance(same, PairedComparison)
    assert (same.p_value, same.mean_difference, same.sd) == (1.0, 0.0, 0.0)
    # No spread observed is not certainty: the binomial floor gives the interval a width.
    assert same.low < 0.0 < same.high and same.floored
    assert same.unchanged == 3
    with pytest.raises(ValueError, match="metric"):
        compare_treatments(flat, "B", "T", "median")  # type: ignore[arg-type]


# --- power ---------------------------------------------------------------------------------------------------


def test_tasks_needed() -> None:
    # The t test's power, not the z formula's ((1.959964 + 0.841621) * 0.2 / 0.1)^2 = 31.39 -> 32: at 32
    # tasks the noncentral t gives less than 0.80, first reached at 34.
    plan = tasks_needed(0.2)
    assert plan.needed == 34 and plan.unit == "tasks" and "noncentral t" in plan.method
    assert t_test_power(33, 0.2, 0.1) < 0.80 <= t_test_power(34, 0.2, 0.1)
    assert tasks_needed(0.2, effect=0.05).needed == 128  # z formula: 126
    floor = tasks_needed(0.01)
    assert floor.needed == 6 and "sign-flip" in floor.note  # 2/2^6 <= 0.05 < 2/2^5
    assert tasks_needed(nan).needed is None
    with pytest.raises(ValueError, match="effect"):
        tasks_needed(0.2, effect=0.0)


def test_no_spread_gives_no_number_of_tasks() -> None:
    # Every paired difference the same (all passing under both): before, "about 6 tasks would detect a
    # 10-point difference"; the spread is unknown, not zero.
    plan = tasks_needed(0.0)
    assert plan.needed is None and "cannot be estimated" in plan.note and "no spread was observed" in plan.note


def test_the_discreteness_of_pass_rates_adds_tasks() -> None:
    # 10 trials per task: differences are multiples of 0.1, the sign-flip sums step by 0.2.
    assert tasks_needed(0.19, trials=10).needed == 34 > tasks_needed(0.19).needed == 31
    assert tasks_needed(0.6, trials=1).needed == 324 > tasks_needed(0.6).needed == 285  # 1 trial: steps of 2
    assert "trials" in tasks_needed(0.6, trials=1).method


def _simulated_power(tasks: int, trials: int, effect: float, experiments: int, seed: int) -> float:
    """Share of experiments the verdict's own rule (sign-flip p and interval) calls an improvement; the
    calibration model of benchmarks/calibration.py (baseline rates uniform on [0, 1 - effect])."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(experiments):
        base = rng.uniform(0.0, 1.0 - effect, tasks)
        before, after = rng.binomial(trials, base), rng.binomial(trials, base + effect)
        rows = [
            TaskSummary(f"t{i}", side, trials, trials, int(c), trials, c / trials, nan)
            for side, counts in (("B", before), ("T", after))
            for i, c in enumerate(counts)
        ]
        hits += label_of(compare_treatments(rows, "B", "T"), 0.05) == "improvement"
    return hits / experiments


@pytest.mark.slow  # 1,500 paired comparisons of 34 tasks with 20,000 sign patterns each: about 20 s
def test_at_the_recommended_size_the_verdict_has_the_power_it_promises() -> None:
    # 10 trials per task, +10 points, baseline rates uniform on [0, 0.9]: the sd of one task's difference
    # is sqrt((E p(1-p) + E q(1-q)) / 10) = 0.190.
    sd = math.sqrt(((0.45 - 0.81 / 3) + (0.55 - (0.01 + 0.1 + 1.0) / 3)) / 10)
    recommended = tasks_needed(sd, trials=10).needed
    assert recommended == 34
    # 1,500 simulated experiments (Monte Carlo SE 1 point). The z formula's 29 tasks reached about 0.78.
    assert _simulated_power(recommended, 10, 0.10, 1500, seed=3) >= 0.80


def test_trials_needed_for_one_task() -> None:
    # p1 .5 -> p2 .6: (1.959964 sqrt(2*.55*.45) + 0.841621 sqrt(.25 + .24))^2 / .01 = 387.3 -> 388
    assert trials_needed(0.5).needed == 388
    assert trials_needed(1.0).needed == trials_needed(0.9, effect=0.1).needed  # 1.0 -> 0.9, same pair
    assert trials_needed(0.0).needed == 74
    assert trials_needed(nan).needed is None
    assert trials_needed(0.5, effect=0.6).needed is None


# --- properties ----------------------------------------------------------------------------------------------

counts = st.integers(min_value=1, max_value=60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@settings(max_examples=200, deadline=None)
@given(counts)
def test_pass_k_properties(nc: tuple[int, int]) -> None:
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in at + hat)
    assert all(a <= b for a, b in itertools.pairwise(at))  # pass@k non-decreasing in k
    assert all(a >= b for a, b in itertools.pairwise(hat))  # pass^k non-increasing in k
    assert at[0] == pytest.approx(c / n, abs=1e-12) and hat[0] == pytest.approx(c / n, abs=1e-12)
    assert at[-1] == (1.0 if c > 0 else 0.0)
    assert hat[-1] == (1.0 if c == n else 0.0) == pass_hat_k_observed(n, c, n)
    assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))  # all-pass never likelier than any-pass


@settings(max_examples=200, deadline=None)
@given(counts, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_properties(nc: tuple[int, int], confidence: float) -> None:
    n, c = nc
    rate = wilson_interval(c, n, confidence)
    assert 0.0 <= rate.low <= rate.rate <= rate.high <= 1.0


differences = st.lists(
    st.one_of(st.sampled_from([0.0, 0.25, -0.25, 0.5, 1.0]), st.floats(-1, 1, allow_nan=False)),
    min_size=0,
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(differences)
def test_permutation_p_value_properties(d: list[float]) -> None:
    p = sign_flip_p_value(d)
    assert 0.0 < p <= 1.0
    assert sign_flip_p_value([-x for x in d]) == p
    assert sign_flip_p_value(d[::-1]) == pytest.approx(p)
    if len(d) >= 3:
        rows = [summary(f"t{i}", "B", 0.5, mean_score=0.0) for i in range(len(d))]
        rows += [summary(f"t{i}", "T", 0.5, mean_score=x) for i, x in enumerate(d)]
        forward = compare_treatments(rows, "B", "T", "mean_score")
        backward = compare_treatments(rows, "T", "B", "mean_score")
        assert isinstance(forward, PairedComparison) and isinstance(backward, PairedComparison)
        assert forward.p_value == backward.p_value
        assert forward.improved + forward.regressed + forward.unchanged == len(d)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("BT"), st.sampled_from("PFE")), max_size=30))
def test_any_trial_set_summarizes_without_raising(rows: list[tuple[str, str, str]]) -> None:
    verdicts = {"P": True, "F": False, "E": None}
    outcomes = [TrialOutcome(task, side, i, verdicts[v], 0.5) for i, (task, side, v) in enumerate(rows)]
    for stat in summarize_treatments(outcomes):
        for est in [stat.pass_rate, *stat.pass_at_k.values(), *stat.pass_hat_k.values()]:
            assert math.isnan(est.mean) or 0.0 <= est.mean <= 1.0
    comparison = compare_treatments(summarize_tasks(outcomes), "B", "T")
    assert isinstance(comparison, (Insufficient, PairedComparison))


# --- intervals that stay honest without spread ---------------------------------------------------------

side_counts = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(0, n))
)


@settings(max_examples=150, deadline=None)
@given(st.lists(side_counts, min_size=2, max_size=20))
def test_pass_rate_intervals_contain_the_estimate_and_are_never_a_point(cells: list[tuple[int, int, int]]) -> None:
    rows = [TaskSummary(f"t{i}", "B", n, n, b, n, b / n, nan) for i, (n, b, _) in enumerate(cells)]
    rows += [TaskSummary(f"t{i}", "T", n, n, t, n, t / n, nan) for i, (n, _, t) in enumerate(cells)]
    c = compare_treatments(rows, "B", "T", min_tasks=2)
    assert isinstance(c, PairedComparison)
    assert -1.0 <= c.low <= c.mean_difference <= c.high <= 1.0
    assert c.low < c.high  # never a point, whatever the differences
    assert c.se >= c.se_floor > 0.0
    full = binomial_floor([(rows[i], rows[len(cells) + i]) for i in range(len(cells))])
    # All of the floor when every difference is the same; else its 5% chi-square quantile (df n - 1).
    n = len(cells)
    scale = 1.0 if c.sd <= 1e-12 else math.sqrt(float(chi2.ppf(0.05, n - 1)) / (n - 1))
    assert c.se_floor == pytest.approx(full * scale)


def test_all_passing_under_both_is_not_certainty() -> None:
    # 10 tasks x 10 trials, every trial passed under both: before, "95% CI +0.0% to +0.0%".
    rows = [TaskSummary(f"t{i}", side, 10, 10, 10, 10, 1.0, 1.0) for i in range(10) for side in "BT"]
    c = compare_treatments(rows, "B", "T")
    assert isinstance(c, PairedComparison) and c.sd == 0.0 and c.floored
    # Each side's Wilson interval of 10/10 is [0.722, 1]: SE 0.0708 each, sqrt(20 * 0.0708^2) / 10 = 0.0317.
    assert c.se == pytest.approx(0.0317, abs=1e-4)
    assert c.high == pytest.approx(2.262 * 0.0317, abs=1e-3) and c.low == -c.high
    assert label_of(c, 0.05) == "no significant difference"


def test_the_floor_leaves_spread_out_differences_alone() -> None:
    rows = [summary(t, "B", 0.25, n=8) for t in "abcdef"] + [
        summary(t, "T", rate, n=8) for t, rate in zip("abcdef", [1.0, 0.0, 0.75, 0.25, 0.875, 0.125], strict=True)
    ]
    c = compare_treatments(rows, "B", "T")
    assert isinstance(c, PairedComparison) and not c.floored
    assert c.se == pytest.approx(c.sd / math.sqrt(6))


@settings(max_examples=100, deadline=None)
@given(
    st.floats(0.02, 1.0),
    st.floats(0.02, 0.5),
    st.sampled_from([None, 1, 3, 10]),
)
def test_power_properties(sd: float, effect: float, per_task: int | None) -> None:
    plan = tasks_needed(sd, effect, trials=per_task)
    assert plan.needed is not None and plan.needed >= 6
    powers = [t_test_power(n, sd, effect) for n in range(2, 60)]
    assert all(0.0 <= p <= 1.0 for p in powers)
    assert all(a <= b + 1e-9 for a, b in itertools.pairwise(powers))  # more tasks, more power
    assert t_test_power(plan.needed, sd, effect) >= 0.80
    assert tasks_needed(sd * 1.5, effect, trials=per_task).needed >= plan.needed  # more spread, more tasks
    assert tasks_needed(sd, effect * 1.5, trials=per_task).needed <= plan.needed  # bigger effect, fewer


# --- item 13: exclusions -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_fisher_exact_agrees_with_scipy(a: int, b: int, c: int, d: int) -> None:
    from scipy.stats import fisher_exact as reference

    p = fisher_exact(a, b, c, d)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(float(reference([[a, b], [c, d]]).pvalue), rel=1e-9, abs=1e-12)
    assert fisher_exact(c, d, a, b) == pytest.approx(p, rel=1e-9)  # the order of the treatments is irrelevant


def test_fisher_exact_of_large_tables_and_bad_counts() -> None:
    assert fisher_exact(50, 950, 80, 920) == pytest.approx(0.008308448377756, rel=1e-9)
    assert fisher_exact(0, 50_000, 0, 50_000) == 1.0
    with pytest.raises(ValueError, match="counts"):
        fisher_exact(-1, 2, 3, 4)


def test_impute_excluded_puts_trials_back_as_passes_or_failures() -> None:
    rows = (
        TaskSummary("a", "B", 3, 3, 1, 3, 1 / 3, 0.3),
        TaskSummary("a", "T", 2, 2, 2, 2, 1.0, 1.0),
        TaskSummary("a", "OTHER", 2, 2, 2, 2, 1.0, 1.0),
    )
    excluded = {("a", "T"): 2, ("b", "T"): 1, ("a", "B"): 1, ("a", "OTHER"): 5}
    out = {(s.task, s.treatment): s for s in impute_excluded(rows, excluded, {"B": True, "T": False})}
    assert set(out) == {("a", "B"), ("a", "T"), ("b", "T")}  # OTHER left out; b comes back from nothing
    assert (out[("a", "B")].scored, out[("a", "B")].passed, out[("a", "B")].pass_rate) == (4, 2, 0.5)
    assert (out[("a", "T")].scored, out[("a", "T")].passed, out[("a", "T")].pass_rate) == (4, 2, 0.5)
    assert (out[("b", "T")].scored, out[("b", "T")].passed, out[("b", "T")].pass_rate) == (1, 0, 0.0)
    assert out[("a", "B")].mean_score == 0.3  # only the pass rate is imputed


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["B", "T"])), st.integers(0, 6), max_size=8
    ),
    st.integers(0, 30),
    st.integers(0, 30),
)
def test_excess_recovered_is_one_sided_and_within_the_recovered(
    recovered: dict[tuple[str, str], int], extra_b: int, extra_t: int
) -> None:
    from scaffold.stats.exclusions import excess_recovered

    trials = {
        side: sum(n for (_, s), n in recovered.items() if s == side) + extra
        for side, extra in (("B", extra_b), ("T", extra_t))
    }
    out = excess_recovered(recovered, trials, "B", "T")
    assert len({side for _, side in out}) <= 1  # only the side that recovered the larger share
    for key, n in out.items():
        assert 0 < n <= recovered[key]
    if out:
        side = next(iter(out))[1]
        other = "B" if side == "T" else "T"
        share = {s: sum(n for (_, x), n in recovered.items() if x == s) / trials[s] for s in ("B", "T")}
        assert share[side] > share[other]
        assert sum(out.values()) <= (share[side] - share[other]) * trials[side] + 1e-9
    swapped = {(task, "T" if s == "B" else "B"): n for (task, s), n in recovered.items()}
    mirrored = excess_recovered(swapped, {"B": trials["T"], "T": trials["B"]}, "B", "T")
    assert sorted(n for n in mirrored.values()) == sorted(n for n in out.values())
