"""When the excluded trials' bounds decide a verdict, it says by how much they would have to differ from
the other trials to overturn the answer on the analysis set (scaffold.reports.verdicts)."""

from __future__ import annotations

from scaffold.reports.analysis import build_analysis
from tests.support.records import suite


def test_an_improvement_the_bounds_overturn_says_how_much_worse_the_excluded_trials_must_be() -> None:
    # SKILL passes its scored trials of t0 (3 of 3) and half of t1's; 6 of its trials were excluded.
    spec = {"CONTROL": {"t0": "FFPFFP", "t1": "FFFFPF"}, "SKILL": {"t0": "XPPPXX", "t1": "XPXXPF"}}
    v = build_analysis(suite(spec)).verdict("SKILL")
    assert v is not None and v.label == "Inconclusive due to data quality"
    assert "on the analysis set the answer is 'improvement'" in v.reason
    # At twice t1's failure rate (0.5) its excluded trials would all fail: still an improvement; at 2.5 too
    # by the rounding of whole trials, and the answer changes there.
    assert "it holds unless the excluded SKILL trials fail at 2.5 times the rate of its other trials" in v.reason


def test_three_tasks_tip_at_a_smaller_multiple() -> None:
    spec = {
        "CONTROL": {"t0": "FFFFFP", "t1": "FFPXFF", "t2": "PFFPPP"},
        "SKILL": {"t0": "PFPFPP", "t1": "FXPXFP", "t2": "PPPPPP"},
    }
    v = build_analysis(suite(spec)).verdict("SKILL")
    assert v is not None and v.label == "Inconclusive due to data quality"
    assert "fail at 1.5 times the rate of its other trials of the same task, or more" in v.reason


def test_a_verdict_the_bounds_leave_alone_has_no_tipping_point() -> None:
    spec = {"CONTROL": {f"t{i}": "FFFFF" for i in range(8)}, "SKILL": {f"t{i}": "PPPPX" for i in range(8)}}
    v = build_analysis(suite(spec)).verdict("SKILL")
    assert v is not None and v.label == "improvement" and "holds unless" not in v.reason
