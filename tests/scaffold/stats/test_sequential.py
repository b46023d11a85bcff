"""Run until decided (scaffold.stats.sequential): error rates under a look after every round, by
simulation, for the sharp null, a null of opposite effects that cancel, and equivalence at the margin;
the confidence sequence's coverage at every round at once; and the decisions on clear data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scaffold.stats.sequential import Round, confidence_sequence, decide_sequence, spent_alpha

RUNS = 400
LIMIT = 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / RUNS)  # alpha plus 2.5 Monte Carlo standard errors


def experiment(rng: np.random.Generator, treated: np.ndarray, base: np.ndarray, rounds: int) -> list[Round]:
    t = rng.random((rounds, base.size)) < treated
    b = rng.random((rounds, base.size)) < base
    return [Round(tuple((bool(x), bool(y)) for x, y in zip(t[r], b[r], strict=True))) for r in range(rounds)]


@pytest.mark.parametrize("tasks", [2, 10])
def test_no_effect_is_claimed_more_often_than_alpha_however_often_one_looks(tasks: int) -> None:
    rng = np.random.default_rng(tasks)
    claimed = 0
    for _ in range(RUNS):
        base = rng.uniform(0.2, 0.8, size=tasks)
        result = decide_sequence(experiment(rng, base, base, 30), margin=0.0)  # stops at its first claim
        claimed += result.decision in ("improvement", "regression")
    assert claimed / RUNS <= LIMIT


def test_effects_that_cancel_are_not_claimed_either() -> None:
    # Δ = 0 as a mean of +30 and -30 points: the e-processes hold for "Δ <= 0", not only for "no task
    # changes" (the product over a round's tasks, by the inequality of the means).
    rng = np.random.default_rng(7)
    base = np.full(8, 0.5)
    treated = base + np.where(np.arange(8) % 2 == 0, 0.3, -0.3)
    claimed = sum(
        decide_sequence(experiment(rng, treated, base, 30), margin=0.0).decision in ("improvement", "regression")
        for _ in range(RUNS)
    )
    assert claimed / RUNS <= LIMIT


def test_equivalence_is_not_claimed_when_the_difference_is_the_margin() -> None:
    rng = np.random.default_rng(11)
    base = np.full(10, 0.45)
    claimed = sum(
        decide_sequence(experiment(rng, base + 0.2, base, 80), effect=0.2, margin=0.2).decision == "equivalence"
        for _ in range(200)
    )
    assert claimed / 200 <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / 200)


def test_equivalence_is_reached_when_nothing_changes() -> None:
    rng = np.random.default_rng(5)
    base = rng.uniform(0.3, 0.7, size=20)
    result = decide_sequence(experiment(rng, base, base, 200), effect=0.2, margin=0.2)
    assert result.decision == "equivalence" and result.decided_at is not None and result.decided_at < 200


def test_the_confidence_sequence_covers_at_every_round_at_once() -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.8, size=5)
    treated = np.clip(base + np.array([0.3, -0.1, 0.2, 0.0, 0.1]), 0, 1)
    truth = float(np.mean(treated - base))
    missed = 0
    for _ in range(200):
        rounds = experiment(rng, treated, base, 20)
        missed += any(
            not (low <= truth <= high)
            for low, high in (confidence_sequence([r.differences() for r in rounds[:n]]) for n in range(1, 21))
        )
    assert missed / 200 <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / 200)


def test_a_skill_that_always_passes_against_half_is_decided_within_ten_rounds() -> None:
    # Two tasks, the skill passes every trial, the baseline one task in two each round: 8 "+" pairs.
    rounds = [Round(((True, r % 2 == 0), (True, r % 2 == 1))) for r in range(10)]
    result = decide_sequence(rounds)
    assert result.decision == "improvement" and result.decided_at == 8 and result.rounds == 8
    assert result.improvement_e >= 2 / 0.05
    assert result.high > 0.5


def test_the_same_twice_is_never_a_verdict() -> None:
    same = [Round(((r % 2 == 0, r % 2 == 0), (True, True))) for r in range(10)]
    result = decide_sequence(same)
    assert result.decision == "" and result.plus == result.minus == 0


def test_unscored_pairs_count_as_concordant() -> None:
    rounds = [Round(((True, None), (None, False), (True, False))) for _ in range(3)]
    assert decide_sequence(rounds).plus == 3
    assert rounds[0].differences() == [1]


def test_spent_alpha_sums_to_alpha() -> None:
    assert math.fsum(spent_alpha(0.05, k) for k in range(1, 200_000)) == pytest.approx(0.05, rel=1e-4)
