"""The checkout's path to the Langfuse suite's test: ``pytest langfuse/tests --task=fix-median --count=3``
runs the packaged entry (scaffold/builtin/suites/langfuse/test_tasks.py); see langfuse/README.md."""

from scaffold.builtin.suites.langfuse.test_tasks import test_task

__all__ = ["test_task"]
