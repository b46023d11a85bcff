"""The Langfuse suite: the local suite's trials, each also reported to Langfuse (langfuse/README.md).

No ``__init__.py`` in this folder (nor in the checkout's ``langfuse/``, whose conftest imports this one):
a package named ``langfuse`` on the import path would shadow the SDK.
"""

from __future__ import annotations

import pytest

from pytest_comet.langfuse_suite import SUITE, LangfuseSuite

__all__ = ["comet_langfuse", "pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    suite = LangfuseSuite(config)
    config.stash[SUITE] = suite
    config.pluginmanager.register(suite, "comet-langfuse")


@pytest.fixture
def comet_langfuse(request: pytest.FixtureRequest) -> LangfuseSuite:
    """The suite's reporter of this process."""
    return request.config.stash[SUITE]
