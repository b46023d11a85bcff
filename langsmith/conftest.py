"""The checkout's path to the LangSmith suite (``pytest langsmith/tests``): the packaged suite's hooks and
fixtures (scaffold/builtin/suites/langsmith/conftest.py; an installation runs ``comet run --suite
langsmith``). No ``__init__.py`` in this folder: it must never shadow the ``langsmith`` SDK package."""

from scaffold.builtin.suites.langsmith.conftest import (
    langsmith_trial,
    pytest_configure,
    pytest_runtest_call,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
    pytest_unconfigure,
)

__all__ = [
    "langsmith_trial",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "pytest_unconfigure",
]
