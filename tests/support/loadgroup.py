"""xdist's ``loadgroup`` for the repository's tests, asked for by a conftest rather than pyproject.toml.

pyproject.toml's options reach every pytest run in the checkout, the local suite's sessions too, and those
use xdist's default ``load``, which survives a crashed worker (``loadgroup`` waits forever after one, in
pytest-xdist 3.8). So the repository's conftest turns ``load`` into ``loadgroup`` for its own tests: tests
marked ``xdist_group("NAME")`` share one worker (the engine pool's namespaces and engines exist once per
machine), every other is spread as by ``load``.

Changing the option in ``pytest_configure`` is enough for the controller's scheduler, not for the workers:
each derives its own "group my test ids" flag from the command line it was started with, before any
conftest runs. The controller therefore tells them, through the input xdist hands every worker.
"""

from __future__ import annotations

from typing import Any

import pytest

_KEY = "comet_loadgroup"


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(_KEY):
        config.option.loadgroup = True  # what xdist's worker reads to suffix test ids with their group


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[_KEY] = node.config.getvalue("dist") == "loadgroup"
