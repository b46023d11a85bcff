"""The checkout's path to the local suite: ``pytest local/tests`` runs the packaged entry's test.

The suite ships in the package (scaffold/builtin/suites/local/test_tasks.py; an installation runs it with
``comet run``); this file only gives it its documented name here, with the checkout's pytest settings.
"""

from scaffold.builtin.suites.local.test_tasks import test_task

__all__ = ["test_task"]
