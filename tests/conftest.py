"""Shared fixtures: real task folders and pytester projects (tests.support.factories), Docker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# In-process pytester runs restore sys.modules afterwards, and numpy (imported by the statistics of the
# reports that the plugin writes at session end, on first use) refuses to be imported twice in one
# process: import it, and scipy's compiled special functions, before any pytester snapshot is taken.
import numpy  # noqa: F401
import pytest
import scipy.special  # type: ignore[import-untyped]  # noqa: F401

import scaffold.reports.write  # noqa: F401
from scaffold.catalog.builtin import SUITES
from tests.support.factories import TaskFactory

# tests.support.loadgroup: tests marked xdist_group("NAME") share one worker.
pytest_plugins = ["pytester", "tests.support.loadgroup"]


@pytest.fixture
def factory(tmp_path: Path) -> TaskFactory:
    return TaskFactory(tmp_path)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private TMPDIR for the runs a test starts (and for this process): ``<it>/comet-eval`` is their
    state root, so what they leave there is theirs alone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() caches its first answer
    yield tmp


@pytest.fixture
def unconfined(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The local backend's agents run unconfined, as where bubblewrap is missing: for the tests of what
    finds the processes an agent's command leaves (confined, they end with the command)."""
    monkeypatch.setenv("COMET_LOCAL_CONFINE", "0")  # the probe's answer is kept per value: no cache to clear
    yield


@pytest.fixture
def suite(pytester: pytest.Pytester) -> TaskFactory:
    """A pytester project laid out like the repository: local/tasks, local/treatments, local/tests."""
    factory = TaskFactory(pytester.path / "local")
    tests = pytester.path / "local" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_tasks.py").write_text(SUITES["local"].read_text())
    pytester.makeini("[pytest]\n")
    return factory


# --- Docker ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A reachable Docker engine (``DOCKER_HOST``), or skip; with ``COMET_REQUIRE_DOCKER=1`` (CI) fail instead."""
    from scaffold.errors import WorkspaceError
    from scaffold.workspaces.docker.engine import connect

    try:
        client = connect()
    except WorkspaceError as exc:
        if os.environ.get("COMET_REQUIRE_DOCKER") == "1":
            pytest.fail(f"COMET_REQUIRE_DOCKER=1 but no Docker engine is reachable: {exc}", pytrace=False)
        pytest.skip(f"no Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def docker_base_image(docker_client: Any) -> str:
    """The base image tag, built once (under a file lock shared by xdist workers) when it is missing."""
    from scaffold.workspaces.docker.base_image import BASE_TAG, build_base_image

    build_base_image(BASE_TAG, client=docker_client, log=lambda message: print(f"[docker base image] {message}"))
    return BASE_TAG


@pytest.fixture(scope="session")
def docker_trixie_image(docker_client: Any) -> str:
    """The Debian trixie stand-in (Python 3.13) that Harbor tasks' python:3.13 and ubuntu:24.04 map to,
    built once like the base image."""
    from scaffold.workspaces.docker.base_image import base_tag, build_base_image

    tag = base_tag("trixie")
    build_base_image(tag, suite="trixie", client=docker_client, log=lambda message: print(f"[trixie base] {message}"))
    return tag


@pytest.fixture(autouse=True)
def _docker_marker_needs_an_engine(request: pytest.FixtureRequest) -> None:
    """A test marked ``docker`` that asks for no Docker fixture still needs an engine: it skips (or, in
    CI, fails) as those do, instead of failing on the connection."""
    if request.node.get_closest_marker("docker") is not None:
        request.getfixturevalue("docker_client")


_IMAGE_FIXTURES = frozenset({"docker_base_image", "docker_trixie_image", "docker_backend", "engines"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In CI the base images may still be building when the suite starts (.ci/run): the tests that need
    one go after the others (a stable sort, the same in every xdist worker), so no worker sits waiting
    on the build's lock while tests that need no image are left."""
    if os.environ.get("COMET_CI_BASE_IMAGES_PENDING") != "1":
        return

    def needs_image(item: pytest.Item) -> bool:
        names = set(getattr(item, "fixturenames", ()))
        return item.get_closest_marker("docker") is not None or bool(names & _IMAGE_FIXTURES) or "docker" in item.nodeid

    items.sort(key=needs_image)


# --- slow tests ----------------------------------------------------------------------------------------------

SLOW_S = 20.0
"""Tests that take this long or more are marked ``slow`` (they still run in every CI run)."""
_unmarked_slow: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration >= SLOW_S and "slow" not in report.keywords:
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _unmarked_slow:
        terminalreporter.section(f"tests of {SLOW_S:g} s or more without the slow marker", yellow=True)
        for nodeid, duration in sorted(_unmarked_slow, key=lambda item: -item[1]):
            terminalreporter.write_line(f"{duration:6.1f}s  {nodeid}  (mark it @pytest.mark.slow)")
