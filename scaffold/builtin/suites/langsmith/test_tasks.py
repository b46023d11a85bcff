"""The LangSmith suite: the local suite's test, tracked by LangSmith's pytest plugin.

comet run --suite langsmith --task=fix-median --count=3   (LANGSMITH_API_KEY set; docs: langsmith/README.md)
pytest langsmith/tests --task=fix-median --count=3        (the checkout's path to this file)

The test takes no fixture argument: the trial comes from the conftest's autouse fixture, so that the
LangSmith run's and example's inputs are the case (task, treatment, difficulty) and nothing else.
"""

import pytest

from pytest_comet.langsmith_suite import current_trial, log_trial


@pytest.mark.langsmith
def test_task() -> None:
    trial = current_trial()
    log_trial(trial)
    trial.assert_passed()
