"""The checkout's path to the LangSmith suite's test: ``pytest langsmith/tests --task=fix-median --count=3``
runs the packaged entry (scaffold/builtin/suites/langsmith/test_tasks.py); see langsmith/README.md."""

from scaffold.builtin.suites.langsmith.test_tasks import test_task

__all__ = ["test_task"]
