"""scaffold.stats.agreement: the judge against the validators (kappa, correlation, the 2x2 counts)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.stats import calibrate, cohen_kappa, pearson

ratings = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60)
scored = st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), max_size=60)


def test_kappa_of_a_textbook_table() -> None:
    # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    rater = [True] * 25 + [False] * 25
    truth = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(rater, truth) == pytest.approx(0.4)


def test_kappa_at_the_edges() -> None:
    assert cohen_kappa([True, False, True], [True, False, True]) == 1.0
    assert cohen_kappa([True, False], [False, True]) == -1.0
    assert math.isnan(cohen_kappa([], []))
    assert math.isnan(cohen_kappa([True, True], [True, True]))  # chance agreement is 1: nothing to correct
    assert cohen_kappa([True, True, True, True], [True, False, True, False]) == 0.0  # a rater that always says yes
    with pytest.raises(ValueError, match="2 ratings against 1"):
        cohen_kappa([True, False], [True])


@given(ratings)
def test_kappa_lies_in_minus_one_to_one_and_is_symmetric(pairs: list[tuple[bool, bool]]) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    kappa = cohen_kappa(a, b)
    assert math.isnan(kappa) or -1.0 <= kappa <= 1.0
    swapped = cohen_kappa(b, a)
    assert (math.isnan(kappa) and math.isnan(swapped)) or kappa == pytest.approx(swapped)


@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_perfect_agreement_is_one_unless_there_is_one_class_only(values: list[bool]) -> None:
    kappa = cohen_kappa(values, values)
    if all(values) or not any(values):
        assert math.isnan(kappa)
    else:
        assert kappa == 1.0


@given(ratings)
def test_flipping_one_side_flips_the_sign_of_kappa(pairs: list[tuple[bool, bool]]) -> None:
    # Flipping one side turns p_o - p_e into p_e - p_o: agreement beyond chance becomes disagreement.
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    kappa, flipped = cohen_kappa(a, b), cohen_kappa(a, [not y for y in b])
    if not (math.isnan(kappa) or math.isnan(flipped)):
        assert (kappa > 1e-12) == (flipped < -1e-12)


def test_pearson_known_values_and_no_spread() -> None:
    assert pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]) == pytest.approx(1.0)
    assert pearson([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # Point-biserial by hand: scores 0.9, 0.8 passed, 0.1, 0.4 failed.
    x, y = [0.9, 0.8, 0.1, 0.4], [1.0, 1.0, 0.0, 0.0]
    mx, my = sum(x) / 4, sum(y) / 4
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    assert pearson(x, y) == pytest.approx(sxy / math.sqrt(sxx * syy))
    assert math.isnan(pearson([0.5, 0.5], [0.0, 1.0]))
    assert math.isnan(pearson([0.5], [1.0]))


@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)), max_size=40))
def test_pearson_lies_in_minus_one_to_one(pairs: list[tuple[float, float]]) -> None:
    r = pearson([x for x, _ in pairs], [y for _, y in pairs])
    assert math.isnan(r) or -1.0 <= r <= 1.0


def test_calibration_counts_and_figures() -> None:
    # 12 trials: the judge is right on 10 of them.
    scores = [0.9, 0.8, 0.7, 0.6, 0.95, 0.2, 0.1, 0.3, 0.0, 0.4, 0.55, 0.45]
    truth = [True, True, True, True, True, False, False, False, False, False, False, True]
    c = calibrate(scores, truth)
    assert (c.n, c.both_passed, c.rater_only, c.truth_only, c.both_failed) == (12, 5, 1, 1, 5)
    assert c.agreement == pytest.approx(10 / 12)
    assert c.kappa == pytest.approx(cohen_kappa([s >= 0.5 for s in scores], truth))
    assert c.kappa == pytest.approx(2 / 3)
    assert 0.5 < c.correlation < 1.0
    assert c.insufficient is None


def test_calibration_is_insufficient_below_ten_trials_or_with_one_class() -> None:
    few = calibrate([0.9, 0.1], [True, False])
    assert few.insufficient == "2 trial(s) with both a judge score and a validator verdict, 10 needed"
    all_passed = calibrate([0.9] * 12, [True] * 12)
    assert all_passed.insufficient == "the validators passed all 12 trials, so agreement cannot be told from chance"
    all_failed = calibrate([0.1] * 11 + [0.9], [False] * 12)
    assert all_failed.insufficient is not None and "failed all 12" in all_failed.insufficient
    empty = calibrate([], [])
    assert empty.n == 0 and math.isnan(empty.agreement) and math.isnan(empty.kappa) and empty.insufficient


def test_calibration_leaves_out_scores_that_are_not_numbers() -> None:
    c = calibrate([math.nan, 0.9, math.inf], [True, True, False])
    assert c.n == 1 and c.both_passed == 1
    with pytest.raises(ValueError, match="2 scores against 1"):
        calibrate([0.1, 0.2], [True])


@given(scored)
def test_calibration_counts_add_up_and_figures_stay_in_range(pairs: list[tuple[float, bool]]) -> None:
    c = calibrate([s for s, _ in pairs], [t for _, t in pairs])
    assert c.both_passed + c.rater_only + c.truth_only + c.both_failed == c.n == len(pairs)
    assert math.isnan(c.agreement) or 0.0 <= c.agreement <= 1.0
    assert math.isnan(c.kappa) or -1.0 <= c.kappa <= 1.0
    assert math.isnan(c.correlation) or -1.0 <= c.correlation <= 1.0
    if c.n and c.rater_only == c.truth_only == 0 and 0 < c.both_passed < c.n:
        assert c.kappa == 1.0 and c.agreement == 1.0
