"""The LangSmith suite's hooks and fixtures (pytest_comet.langsmith_suite): the local suite's trials,
each reported through the LangSmith SDK's pytest plugin. No ``__init__.py`` in this folder (nor in the
checkout's ``langsmith/``, whose conftest imports this one): a package named ``langsmith`` on the import
path would shadow the SDK."""

from pytest_comet.langsmith_suite import (
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
