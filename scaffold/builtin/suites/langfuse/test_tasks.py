"""The Langfuse suite: the local suite's items (one per task, treatment and trial), each trial also sent to
Langfuse as one trace with its scores; the experiment summary follows at session end.

comet run --suite langfuse --task=fix-median --treatment=CONTROL --count=3
pytest langfuse/tests --task=fix-median --treatment=CONTROL --count=3     (the checkout's path to this file)
"""

import pytest

from pytest_comet import Trial
from pytest_comet.langfuse_suite import LangfuseSuite


def test_task(comet_trial: Trial, comet_langfuse: LangfuseSuite, request: pytest.FixtureRequest) -> None:
    comet_langfuse.report(comet_trial, request.node)  # never raises: a failed upload is reported at the end
    comet_trial.assert_passed()
