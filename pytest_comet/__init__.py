"""pytest plugin for comet-eval: every (task, treatment, trial) becomes a test item.

The plugin is registered through the ``pytest11`` entry point but stays inert unless a test function
asks for the ``comet_case`` or ``comet_trial`` fixture (as ``local/tests/test_tasks.py`` does).
"""

from pytest_comet.trial import Trial

__all__ = ["Trial"]
