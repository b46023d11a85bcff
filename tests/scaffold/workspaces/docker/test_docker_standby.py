"""The standby container against a real engine: the next trial of a task runs in a container started while
the one before ran (from STANDBY_DELAY_S after its start), with the same files, limits and cleanup as a
container made for it, in bind and copy mode; a trial shorter than the delay makes its own.

Skipped without an engine, except under ``COMET_REQUIRE_DOCKER=1`` where that is a failure.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import Task, load_task
from scaffold.workspaces.docker import DockerBackend, DockerWorkspace
from scaffold.workspaces.docker.standby import STANDBY_FOLDER, standby_from_env
from tests.support.factories import TaskFactory

pytestmark = pytest.mark.docker


@pytest.fixture(params=["bind", "copy"])
def backend(request: pytest.FixtureRequest, docker_base_image: str, tmp_path: Path) -> Iterator[DockerBackend]:
    made = DockerBackend(tmp_path / "ws", copy=request.param == "copy", standby=True)
    yield made
    made.close()


def session_containers(backend: DockerBackend) -> list[Any]:
    label = ["comet-eval.owner=comet-eval", f"comet-eval.session={backend.session.id}"]
    return list(backend.client.containers.list(all=True, filters={"label": label}, ignore_removed=True))


def session_volumes(backend: DockerBackend) -> list[str]:
    label = ["comet-eval.owner=comet-eval", f"comet-eval.session={backend.session.id}", "comet-eval.phase=workspace"]
    return [v.name for v in backend.client.volumes.list(filters={"label": label})]


def standbys(backend: DockerBackend, *, wait_s: float = 30.0) -> dict[str, str]:
    """The session's standby containers (id: trial label), once one runs (made in the background)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = {
            c.id: c.labels["comet-eval.trial"]
            for c in session_containers(backend)
            if c.labels["comet-eval.trial"].startswith("standby-") and c.status == "running"
        }
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def shell(workspace: DockerWorkspace, script: str, tmp_path: Path) -> str:
    result = workspace.exec(
        ["sh", "-c", script], timeout=30, env={}, stdout_path=tmp_path / "o.log", stderr_path=tmp_path / "e.log"
    )
    assert result.exit_code == 0, result.stderr()
    return result.stdout()


def a_task(factory: TaskFactory, name: str, **environment: Any) -> Task:
    files = {"src/a.txt": f"{name} a\n", "b.txt": "b\n"}
    if environment:
        return load_task(factory.task(name, files=files, environment=environment))
    return load_task(factory.task(name, files=files))


def test_the_next_trial_of_a_task_runs_in_the_container_started_during_the_last(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    task = a_task(factory, "kept", memory_mb=300, pids_limit=77)
    first = backend.create(task, "exp/kept-CONTROL-r1")
    shell(first, "echo mine > left.txt", tmp_path)
    backend.destroy(first, keep=False)
    ((waiting, label),) = standbys(backend).items()

    second = backend.create(task, "exp/kept-CONTROL-r2")
    assert second.container_id == waiting  # no container was started for it
    assert second.trial_key == "exp/kept-CONTROL-r2"
    # The environment's files, and nothing of the trial before; what the trial writes is its own.
    assert shell(second, "cat src/a.txt b.txt", tmp_path) == "kept a\nb\n"
    assert shell(second, "ls -A", tmp_path).split() == ["Dockerfile", "b.txt", "src"]
    shell(second, "echo two > out.txt", tmp_path)
    assert second.read_text("out.txt") == "two\n"
    if not second.copy:  # bind mode: the standby's folder became the trial's, the mount with it
        assert second.host_path == backend.workspace_root / "exp" / "kept-CONTROL-r2"
        assert (second.host_path / "out.txt").read_text() == "two\n"
        assert not (backend.workspace_root / STANDBY_FOLDER / label.removeprefix("standby-")).exists()
    host = backend.client.containers.get(waiting).attrs["HostConfig"]
    assert (host["Memory"], host["PidsLimit"], host["NetworkMode"]) == (300 * 1024 * 1024, 77, "none")
    backend.destroy(second, keep=True)  # a kept workspace of a standby is kept like any other
    assert (second.host_path / "out.txt").read_text() == "two\n"


def test_another_task_gets_a_fresh_container_and_nothing_is_left(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    one, other = a_task(factory, "one"), a_task(factory, "other")
    first = backend.create(one, "exp/one-CONTROL-r1")
    backend.destroy(first, keep=False)
    (waiting,) = standbys(backend)
    second = backend.create(other, "exp/other-CONTROL-r1")  # another task: the standby does not fit
    assert second.container_id != waiting
    assert shell(second, "cat src/a.txt", tmp_path) == "other a\n"
    backend.destroy(second, keep=False)
    backend.drain()  # the standby made for "other" goes too
    assert session_containers(backend) == []
    assert session_volumes(backend) == []
    assert not (backend.workspace_root / STANDBY_FOLDER).exists()


def test_a_rerun_of_a_trial_takes_the_standby_over_its_kept_folder(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    task = a_task(factory, "again")
    first = backend.create(task, "exp/again-CONTROL-r1")
    shell(first, "echo old > out.txt", tmp_path)
    backend.destroy(first, keep=True)
    (waiting,) = standbys(backend)
    rerun = backend.create(task, "exp/again-CONTROL-r1")
    assert rerun.container_id == waiting
    # The environment's files only: the kept copy is not this trial's.
    assert shell(rerun, "ls -A", tmp_path).split() == ["Dockerfile", "b.txt", "src"]
    backend.destroy(rerun, keep=False)
    backend.drain()
    assert session_containers(backend) == []


def test_standby_is_off_with_the_environment_variable(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert standby_from_env({}) and not standby_from_env({"COMET_DOCKER_STANDBY": "off"})
    monkeypatch.setenv("COMET_DOCKER_STANDBY", "0")
    backend = DockerBackend(tmp_path / "ws")
    try:
        assert backend.standby is False
        workspace = backend.create(a_task(factory, "plain"), "exp/plain-CONTROL-r1")
        assert standbys(backend, wait_s=3.0) == {}  # when on, one runs ~1.2 s after the trial's container
        backend.destroy(workspace, keep=False)
    finally:
        backend.close()


def test_a_trial_that_comes_before_its_standby_begins_gets_its_own_container(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scaffold.workspaces.docker.standby as module

    monkeypatch.setattr(module, "STANDBY_DELAY_S", 60.0)  # however slow this machine, the trial comes first
    task = a_task(factory, "quick")
    first = backend.create(task, "exp/quick-CONTROL-r1")
    backend.destroy(first, keep=False)
    second = backend.create(task, "exp/quick-CONTROL-r2")  # within STANDBY_DELAY_S: not begun
    labels = backend.client.containers.get(second.container_id).labels
    assert labels["comet-eval.trial"] == "exp/quick-CONTROL-r2"  # made for it, as without standby
    assert shell(second, "cat src/a.txt", tmp_path) == "quick a\n"
    backend.destroy(second, keep=False)
    backend.drain()  # the standby scheduled after the second is cancelled before it begins, or removed
    assert session_containers(backend) == []
    assert session_volumes(backend) == []


def test_no_standby_is_made_when_the_next_trial_is_of_another_task_or_none_follows(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    task = a_task(factory, "hinted")
    for n, following in enumerate(["another", None], start=1):
        backend.expect(following)
        workspace = backend.create(task, f"exp/hinted-CONTROL-r{n}")
        assert standbys(backend, wait_s=3.0) == {}  # when one is made, it runs ~1.2 s after the trial's
        backend.destroy(workspace, keep=False)
    backend.expect(task.name)  # the same task follows: one is made
    workspace = backend.create(task, "exp/hinted-CONTROL-r3")
    assert len(standbys(backend)) == 1
    backend.destroy(workspace, keep=False)


def test_a_standby_that_died_is_not_taken(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    # Its container (or its engine) went away after it was made: the trial gets a container of its own,
    # and the dead standby is cleaned up as any other not taken.
    task = a_task(factory, "fragile")
    first = backend.create(task, "exp/fragile-CONTROL-r1")
    backend.destroy(first, keep=False)
    (waiting,) = standbys(backend)
    backend.client.containers.get(waiting).kill()
    second = backend.create(task, "exp/fragile-CONTROL-r2")
    assert second.container_id != waiting
    assert shell(second, "cat src/a.txt", tmp_path) == "fragile a\n"
    backend.destroy(second, keep=False)
    backend.expect(None)
    backend.drain()
    assert waiting not in {c.id for c in session_containers(backend)}
