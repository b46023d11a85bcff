"""The hooks of a comet session, registered by the plugin (``pytest_addhooks``): the declared seam through
which what runs or reports a session learns its end, typed (scaffold.reports.outcome), never by looking a
plugin object up by its name. Implement them in a plugin object (``comet eval``'s progress plugin, a
tracing suite); they are called on the controller only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from scaffold.reports.outcome import SessionOutcome, TracingOutcome


@pytest.hookspec
def pytest_comet_session_outcome(config: pytest.Config, outcome: SessionOutcome) -> None:
    """The controller has written the reports and answered the gates (or found nothing to report): what
    it concluded. Called once per session that ran or skipped a trial, before the tracing suites finish."""


@pytest.hookspec
def pytest_comet_tracing_outcome(config: pytest.Config, outcome: TracingOutcome) -> None:
    """A tracing suite (``--suite langsmith|langfuse``) has sent the experiment, or failed to: its lines and
    whether it failed. Called once per session in which the suite reported."""
