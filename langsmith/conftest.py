"""The checkout's path to the LangSmith suite (``pytest langsmith/tests``): the same hooks and fixture as
the packaged suite (scaffold/builtin/suites/langsmith/conftest.py; an installation runs ``comet run --suite
langsmith``). No ``__init__.py`` in this folder: it must never shadow the ``langsmith`` SDK package."""

# The hook and fixture names live once, in the module's __all__: a name added there reaches both suites.
from pytest_comet.langsmith_suite import *  # noqa: F403
