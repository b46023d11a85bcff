"""The local evaluation suite: pytest_comet makes one item per (task, treatment, trial).

comet run --task=fix-median --treatment=CONTROL --count=3        (an installation: scaffold.cli.run)
pytest local/tests --task=fix-median --treatment=CONTROL --count=3   (the checkout's path to this file)
"""

from pytest_comet import Trial


def test_task(comet_trial: Trial) -> None:
    comet_trial.assert_passed()
