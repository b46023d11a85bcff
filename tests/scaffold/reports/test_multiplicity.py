"""Several treatments against one baseline: Holm's step-down procedure holds the family to alpha.

The verdicts of a report, real records through build_analysis; and a simulation of the family-wise
error rate under "no treatment has any effect", with and without the procedure, at 3 and 5 treatments.
"""

from __future__ import annotations

import math
from collections import Counter
from types import MappingProxyType

import numpy as np
import pytest

from scaffold.reports.analysis import build_analysis
from scaffold.reports.model import Counts
from scaffold.reports.verdicts import TaskSets, decide, decide_all
from scaffold.stats.outcomes import TaskSummary
from tests.support.records import suite, tasks


def test_one_clear_effect_among_three_treatments_is_held_to_a_third_of_alpha() -> None:
    # A passes every trial of 6 tasks where CONTROL fails: p = 2/64 = 0.031 across tasks, an improvement
    # alone, but not at 0.05/3 with two more treatments compared with the same baseline.
    alone = suite({"CONTROL": tasks(6, "F"), "A": tasks(6, "P")})
    assert build_analysis(alone).verdict("A").label == "improvement"  # type: ignore[union-attr]
    family = suite({"CONTROL": tasks(6, "F"), "A": tasks(6, "P"), "B": tasks(6, "F"), "C": tasks(6, "F")})
    v = build_analysis(family).verdict("A")
    assert v is not None and v.label == "no significant difference"
    assert "3 treatments compared with CONTROL: Holm's step-down test holds the family to alpha 0.05" in v.reason
    assert "this comparison's p = 0.0312 was held to 0.0167" in v.reason
    assert v.pass_rate.p_value == pytest.approx(2 / 64)  # type: ignore[union-attr]  # still shown as measured


def test_strong_effects_survive_the_procedure() -> None:
    family = suite({"CONTROL": tasks(8, "FF"), "A": tasks(8, "PP"), "B": tasks(8, "PP"), "C": tasks(8, "FF")})
    analysis = build_analysis(family)
    assert [analysis.verdict(t).label for t in ("A", "B", "C")] == [  # type: ignore[union-attr]
        "improvement",
        "improvement",
        "no significant difference",
    ]


def _sets(rng: np.random.Generator, treatments: list[str], n_tasks: int, trials: int) -> tuple[TaskSets, dict]:
    """Summaries of one simulated experiment in which no treatment changes any task's pass rate."""
    rows = []
    for t in range(n_tasks):
        rate = rng.uniform(0.1, 0.9)
        for name in treatments:
            c = int(rng.binomial(trials, rate))
            rows.append(TaskSummary(f"t{t}", name, trials, trials, c, trials, c / trials, c / trials))
    empty: MappingProxyType[str, int] = MappingProxyType({})
    counts = {name: Counts(n_tasks * trials, 0, 0, 0, n_tasks * trials, 0, 0, empty, empty) for name in treatments}
    return TaskSets(tuple(rows), tuple(rows), (), MappingProxyType(dict(Counter()))), counts


@pytest.mark.parametrize("others", [3, 5])
def test_the_family_wise_error_rate_is_held_under_the_null(others: int) -> None:
    rng = np.random.default_rng(others)
    treatments = ["CONTROL", *[f"S{i}" for i in range(others)]]
    runs, held, each = 300, 0, 0
    for _ in range(runs):
        sets, counts = _sets(rng, treatments, 8, 5)
        family = decide_all(sets, treatments, "CONTROL", True, counts, 0.05, 0.1)
        held += any(v.decisive for v in family)
        each += any(decide(sets, t, "CONTROL", True, counts, 0.05, 0.1).decisive for t in treatments[1:])
    error = math.sqrt(0.05 * 0.95 / runs)
    assert held / runs <= 0.05 + 2.5 * error, held / runs
    # Without it the family errs more often: the procedure is what holds it.
    assert each > held
