"""The checkout's path to the Langfuse suite (``pytest langfuse/tests``): the packaged suite's plugin and
fixture (scaffold/builtin/suites/langfuse/conftest.py; an installation runs ``comet run --suite
langfuse``). No ``__init__.py`` in this folder or below it: it must never shadow the ``langfuse`` SDK."""

from scaffold.builtin.suites.langfuse.conftest import *  # noqa: F403
