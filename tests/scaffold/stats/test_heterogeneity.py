"""Per-task effects (scaffold.stats.heterogeneity): the omnibus test against brute force and by
simulation (its level under the null, its power on a skill that helps half the tasks and hurts the
other half), Benjamini-Hochberg against scipy's, and what a verdict and its reports say of a mixed
effect."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control  # type: ignore[import-untyped]

import scaffold.stats.heterogeneity as het
from scaffold.reports.analysis import build_analysis
from scaffold.reports.comparison import render_comparison
from scaffold.reports.html import render_html
from scaffold.reports.summary import render_summary
from scaffold.stats.heterogeneity import Heterogeneity, benjamini_hochberg, omnibus, per_task_effects
from scaffold.stats.outcomes import TaskSummary
from scaffold.stats.stratified import OnTasksComparison, compare_on_tasks
from tests.support.records import suite


def side(task: str, treatment: str, scored: int, passed: int) -> TaskSummary:
    rate = passed / scored
    return TaskSummary(task, treatment, scored, scored, passed, scored, rate, rate)


def brute_force(strata: list[tuple[int, int, int, int]]) -> float:
    """The omnibus p by enumerating every split of every task's passes."""

    def term(a: int, b: int, c: int, x: int) -> float:
        n = a + b
        return (x - a * c / n) ** 2 / (a * b * c * (n - c) / (n * n * (n - 1)))

    kept = [(a, b, c, x) for a, b, c, x in strata if 0 < c < a + b]
    observed = sum(term(*s) for s in kept)
    options = [
        [
            (term(a, b, c, k), math.comb(a, k) * math.comb(b, c - k) / math.comb(a + b, c))
            for k in range(max(0, c - b), min(c, a) + 1)
        ]
        for a, b, c, _ in kept
    ]
    tail = 0.0
    for combination in itertools.product(*options):
        if sum(v for v, _ in combination) >= observed - 1e-7:
            tail += math.prod(p for _, p in combination)
    return min(1.0, tail)


_STRATUM = st.integers(1, 5).flatmap(
    lambda a: st.integers(1, 5).flatmap(
        lambda b: st.integers(0, a + b).flatmap(
            lambda c: st.tuples(st.just(a), st.just(b), st.just(c), st.integers(max(0, c - b), min(c, a)))
        )
    )
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_STRATUM, min_size=1, max_size=4))
def test_the_exact_omnibus_law_is_the_enumerated_one(strata: list[tuple[int, int, int, int]]) -> None:
    p, method = omnibus(strata)
    assert method == "exact"
    assert p == pytest.approx(brute_force(strata), abs=1e-9)


def test_the_monte_carlo_law_agrees_with_the_exact_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    strata = []
    for _ in range(7):
        xt, xb = int(rng.binomial(6, 0.5)), int(rng.binomial(6, 0.5))
        strata.append((6, 6, xt + xb, xt))
    exact, method = omnibus(strata)
    assert method == "exact"  # few distinct values per task: seven tasks stay exact
    monkeypatch.setattr(het, "_EXACT_SUMS", 0)
    drawn, method = omnibus(strata)
    assert method == "Monte Carlo"
    assert drawn == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / het.DRAWS) + 1e-3)


def test_tasks_whose_trials_all_agree_carry_nothing() -> None:
    assert omnibus([(5, 5, 0, 0), (5, 5, 10, 5)]) == (1.0, "exact")
    # One trial a side: a discordant task is as likely either way, so squared differences cannot tell.
    assert omnibus([(1, 1, 1, 1)] * 40)[0] == 1.0


def _simulate(tasks: int, trials: int, shift: float, runs: int, seed: int) -> float:
    """Share of experiments whose omnibus test rejects at 0.05: baseline rates drawn per task, the
    treatment +shift on even tasks and -shift on odd ones."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.7, size=tasks)
    rejected = 0
    for run in range(runs):
        strata = []
        for k, rate in enumerate(base):
            treated = min(max(rate + (shift if k % 2 == 0 else -shift), 0.0), 1.0)
            xt, xb = int(rng.binomial(trials, treated)), int(rng.binomial(trials, rate))
            strata.append((trials, trials, xt + xb, xt))
        rejected += omnibus(strata, seed=run)[0] <= 0.05
    return rejected / runs


@pytest.mark.parametrize(("tasks", "trials"), [(3, 5), (10, 5), (40, 5)])
def test_its_level_under_the_null_is_at_most_alpha(tasks: int, trials: int) -> None:
    runs = 400
    rate = _simulate(tasks, trials, 0.0, runs, seed=tasks)
    assert rate <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / runs), rate


def test_it_finds_a_skill_that_helps_half_the_tasks_and_hurts_the_others() -> None:
    # The outside simulation: +40 points on half the tasks, -40 on the others; the mean reads "no
    # significant difference" almost always, the within-task test rejects 99-100% of the time.
    assert _simulate(20, 5, 0.4, 150, seed=1) >= 0.9


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_benjamini_hochberg_rejects_what_scipys_adjusted_p_values_do(p_values: list[float], rate: float) -> None:
    adjusted = false_discovery_control(p_values, method="bh")
    expected = tuple(i for i, q in enumerate(adjusted) if q <= rate * (1 + 1e-12))
    assert benjamini_hochberg(p_values, rate) == expected


def test_one_task_effect_is_the_one_task_comparison_on_these_tasks() -> None:
    rows = [side("a", "SKILL", 8, 7), side("a", "CONTROL", 6, 2), side("b", "SKILL", 5, 0), side("b", "CONTROL", 5, 5)]
    found = per_task_effects(rows, "CONTROL", "SKILL")
    assert isinstance(found, Heterogeneity)
    for effect in found.effects:
        alone = compare_on_tasks([r for r in rows if r.task == effect.task], "CONTROL", "SKILL")
        assert isinstance(alone, OnTasksComparison)
        assert (effect.difference, effect.low, effect.high) == pytest.approx(
            (alone.mean_difference, alone.low, alone.high)
        )
    assert found.hurt == ("b",)  # 0/5 against 5/5: Fisher's p = 0.0079, alone among two at 5%
    assert per_task_effects([side("a", "SKILL", 3, 1)], "CONTROL", "SKILL") is None


def test_a_mixed_effect_reads_mixed_rather_than_absent_in_every_report() -> None:
    helped = {f"h{i}": "PPPPP" for i in range(4)}
    hurt = {f"x{i}": "FFFFF" for i in range(4)}
    records = suite(
        {
            "CONTROL": {**dict.fromkeys(helped, "FFFFF"), **dict.fromkeys(hurt, "PPPPP")},
            "SKILL": {**helped, **hurt},
        }
    )
    analysis = build_analysis(records)
    v = analysis.verdict("SKILL")
    assert v is not None and v.label == "no significant difference"
    assert "mixed rather than absent" in v.reason
    assert v.heterogeneity is not None
    assert v.heterogeneity.helped == ("h0", "h1", "h2", "h3") and v.heterogeneity.hurt == ("x0", "x1", "x2", "x3")
    summary, comparison, html = render_summary(analysis, "x"), render_comparison(analysis), render_html(analysis)
    assert "mixed rather than absent" in summary and "hurt: x0, x1, x2, x3" in summary
    assert "| h0 | 5/5 | 0/5 | +100.0% [" in comparison and "| helped |" in comparison
    assert "Per-task effects of SKILL" in html


def test_an_improvement_that_hurts_a_task_says_so() -> None:
    records = suite(
        {
            "CONTROL": {**{f"t{i}": "FFFFFF" for i in range(10)}, "bad": "PPPPPP"},
            "SKILL": {**{f"t{i}": "PPPPPP" for i in range(10)}, "bad": "FFFFFF"},
        }
    )
    v = build_analysis(records).verdict("SKILL")
    assert v is not None and v.label == "improvement"
    assert "but it hurts bad" in v.reason


def test_no_effect_says_nothing_more() -> None:
    v = build_analysis(suite({"CONTROL": {"a": "PFPF", "b": "PPFF"}, "SKILL": {"a": "FPFP", "b": "PFPF"}})).verdict(
        "SKILL"
    )
    assert v is not None and "mixed" not in v.reason and "hurts" not in v.reason
