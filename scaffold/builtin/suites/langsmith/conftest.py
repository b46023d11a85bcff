"""The LangSmith suite's hooks and fixtures (pytest_comet.langsmith_suite): the local suite's trials,
each reported through the LangSmith SDK's pytest plugin. No ``__init__.py`` in this folder (nor in the
checkout's ``langsmith/``, whose conftest imports the same module): a package named ``langsmith`` on the
import path would shadow the SDK."""

# The hook and fixture names live once, in the module's __all__: a name added there reaches both suites.
from pytest_comet.langsmith_suite import *  # noqa: F403
