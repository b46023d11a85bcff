"""The local evaluation suite: pytest_comet makes one item per (task, treatment, trial).

pytest local/tests --task=fix-median --treatment=CONTROL --count=3
"""

from pytest_comet import Trial


def test_task(comet_trial: Trial) -> None:
    comet_trial.assert_passed()
