"""pytest plugin for comet-eval: every (task, treatment, trial) becomes a test item.

The plugin is registered through the ``pytest11`` entry point but stays inert unless a test function
asks for the ``comet_case`` or ``comet_trial`` fixture (as the built-in suite's ``test_tasks.py`` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_comet.trial import Trial

__all__ = ["Trial"]


def __getattr__(name: str) -> Any:
    # Lazy: the entry point imports this package in every pytest session.
    if name == "Trial":
        from pytest_comet.trial import Trial

        return Trial
    raise AttributeError(name)
