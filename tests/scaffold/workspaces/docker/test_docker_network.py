"""The host-only network on a real engine: made once however many workers first need it at the same time,
and duplicates an earlier race left are cleaned up instead of making every later trial fail."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from scaffold.workspaces.docker.network import AgentNetworking


@pytest.fixture
def name(docker_client: Any) -> Iterator[str]:
    """A network name of this test's own (the real one is shared with the rest of the suite)."""
    value = f"comet-eval-test-net-{secrets.token_hex(4)}"
    yield value
    for network in docker_client.networks.list(names=[value]):
        network.remove()


def networking(docker_client: Any, name: str) -> AgentNetworking:
    made = AgentNetworking(docker_client, docker_client.api, scope="host", endpoints=[])
    made.name = name
    return made


def named(docker_client: Any, name: str) -> list[Any]:
    return [n for n in docker_client.networks.list(names=[name]) if n.name == name]


def test_workers_that_first_need_the_network_at_once_make_one(docker_client: Any, name: str) -> None:
    start = threading.Barrier(6)
    modes: list[str] = []

    def first_use() -> None:
        start.wait()
        modes.append(networking(docker_client, name).mode())

    threads = [threading.Thread(target=first_use) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert modes == [name] * 6
    (network,) = named(docker_client, name)
    assert network.attrs["Internal"] is True


def test_duplicates_a_lost_race_left_are_removed_keeping_the_oldest(docker_client: Any, name: str) -> None:
    # What workers without the lock left: an engine accepts a second network of the same name.
    first = docker_client.networks.create(name, driver="bridge", internal=True)
    docker_client.networks.create(name, driver="bridge", internal=True)
    docker_client.networks.create(name, driver="bridge", internal=True)
    assert len(named(docker_client, name)) == 3
    assert networking(docker_client, name).mode() == name
    assert [n.id for n in named(docker_client, name)] == [first.id]
    # The name means one network again: a container can join it by name.
    docker_client.api.inspect_network(name)
