"""The engine pool's pure half: parsing ``--docker-host`` entries and pool files, TLS by the Docker
conventions (a folder per host), and which worker is bound to which engine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.errors import SelectionError
from scaffold.workspaces.engines import (
    Engine,
    default_engine,
    environment_for,
    load_pool_file,
    order,
    parse_engine,
    resolve_pool,
    slots,
    total_capacity,
    worker_index,
)


def test_entries_name_a_url_and_a_capacity() -> None:
    assert parse_engine("tcp://10.0.0.5:2376*8", {}) == Engine("tcp://10.0.0.5:2376", 8)
    assert parse_engine(" ssh://ci@build-1 ", {}) == Engine("ssh://ci@build-1", 1)
    assert parse_engine("unix:///run/docker.sock*2", {}).local
    assert not parse_engine("tcp://127.0.0.1:2375", {}).local  # nothing says it shares our files


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("tcp://10.0.0.5:2376*0", "capacity after '*'"),
        ("tcp://10.0.0.5:2376*x", "capacity after '*'"),
        ("tcp://10.0.0.5", "needs its port"),
        ("http://10.0.0.5:2375", "unix://, tcp:// or ssh://"),
        ("10.0.0.5:2375", "unix://, tcp:// or ssh://"),
        ("unix://", "names a socket"),
        ("ssh://", "names no host"),
        ("tcp://10.0.0.5:port", "not a number"),
    ],
)
def test_a_malformed_entry_says_what_is_wrong(entry: str, says: str) -> None:
    with pytest.raises(SelectionError, match=says):
        parse_engine(entry, {})


def test_tls_follows_the_docker_variables_with_a_folder_per_host(tmp_path: Path) -> None:
    (tmp_path / "10.0.0.5").mkdir()
    env = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path)}
    own = parse_engine("tcp://10.0.0.5:2376", env)
    shared = parse_engine("tcp://10.0.0.6:2376", env)
    assert (own.tls, own.tls_verify, own.cert_path) == (True, True, tmp_path / "10.0.0.5")
    assert (shared.tls, shared.cert_path) == (True, tmp_path)
    assert not parse_engine("tcp://10.0.0.5:2375", {}).tls
    assert not parse_engine("unix:///run/docker.sock", env).tls  # TLS is for TCP
    # DOCKER_CERT_PATH alone: TLS without verifying the engine, as the docker CLI does.
    loose = parse_engine("tcp://10.0.0.6:2376", {"DOCKER_CERT_PATH": str(tmp_path)})
    assert (loose.tls, loose.tls_verify) == (True, False)
    assert environment_for(own) == {
        "DOCKER_HOST": own.url,
        "DOCKER_CERT_PATH": str(own.cert_path),
        "DOCKER_TLS_VERIFY": "1",
    }


def test_a_pool_file_lists_engines_with_their_own_certificates(tmp_path: Path) -> None:
    pool = tmp_path / "pool.toml"
    pool.write_text(
        '[[engines]]\nurl = "tcp://10.0.0.5:2376"\ncapacity = 8\ntls_verify = true\ncert_path = "certs/a"\n\n'
        '[[engines]]\nurl = "unix:///run/docker.sock"\ncapacity = 2\n'
    )
    first, second = load_pool_file(pool, {})
    assert first == Engine("tcp://10.0.0.5:2376", 8, True, True, tmp_path / "certs" / "a")
    assert second == Engine("unix:///run/docker.sock", 2)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "one or more \\[\\[engines\\]\\]"),
        ("[[engines]]\ncapacity = 2\n", 'needs url = "..."'),
        ('[[engines]]\nurl = "tcp://a:2376"\ncapacity = 0\n', "capacity must be"),
        ('[[engines]]\nurl = "tcp://a:2376"\ncapcity = 2\n', "unknown key\\(s\\) capcity"),
        ('[[engines]]\nurl = "unix:///s"\ntls = true\n', "TLS applies to tcp:// engines only"),
        ("[[engines]\n", "not valid TOML"),
    ],
)
def test_a_bad_pool_file_names_the_file_and_the_problem(tmp_path: Path, text: str, says: str) -> None:
    pool = tmp_path / "pool.toml"
    pool.write_text(text)
    with pytest.raises(SelectionError, match=says) as raised:
        load_pool_file(pool, {})
    assert str(pool) in str(raised.value)


def test_flags_and_the_file_add_up_and_the_environment_is_the_fallback(tmp_path: Path) -> None:
    pool = tmp_path / "pool.toml"
    pool.write_text('[[engines]]\nurl = "tcp://b:2375"\n')
    env = {"COMET_DOCKER_HOSTS": "tcp://c:2375*2, tcp://d:2375"}
    assert [e.url for e in resolve_pool(["tcp://a:2375"], pool, env)] == ["tcp://a:2375", "tcp://b:2375"]
    assert [e.describe() for e in resolve_pool([], None, env)] == ["tcp://c:2375*2", "tcp://d:2375*1"]
    assert [e.url for e in resolve_pool([], None, {"COMET_DOCKER_POOL": str(pool)})] == ["tcp://b:2375"]
    assert resolve_pool([], None, {}) == ()
    with pytest.raises(SelectionError, match="in the pool twice"):
        resolve_pool(["tcp://a:2375", "tcp://a:2375*3"], None, {})


def test_the_environment_engine_keeps_the_lock_names_of_a_single_engine() -> None:
    assert default_engine({}).url == "unix:///var/run/docker.sock" and default_engine({}).key == ""
    assert default_engine({"DOCKER_HOST": "tcp://x:2375"}).url == "tcp://x:2375"
    assert Engine("tcp://10.0.0.5:2376").key == "tcp_10.0.0.5_2376"


def test_slots_spread_over_the_engines_first() -> None:
    a, b, c = Engine("tcp://a:1", 3), Engine("tcp://b:1", 1), Engine("tcp://c:1", 2)
    assert [e.url[6] for e in slots([a, b, c])] == ["a", "b", "c", "a", "c", "a"]
    assert [order([a, b, c], f"gw{i}")[0].url[6] for i in range(6)] == ["a", "b", "c", "a", "c", "a"]
    # A worker whose engine dies moves on in slot order, never back to where it was.
    assert [e.url[6] for e in order([a, b, c], "gw1")] == ["b", "c", "a"]
    assert worker_index("main") == 0 and worker_index("gw12") == 12


capacities = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=5)


@given(capacities, st.integers(min_value=1, max_value=40))
def test_binding_fills_every_engine_to_its_capacity_and_no_further(caps: list[int], workers: int) -> None:
    engines = [Engine(f"tcp://e{i}:2375", cap) for i, cap in enumerate(caps)]
    bound = Counter(order(engines, f"gw{i}")[0].url for i in range(workers))
    total = total_capacity(engines)
    for engine in engines:
        full_rounds, rest = divmod(workers, total)
        # -n equal to the capacity: exactly the capacity each; more workers wrap around evenly.
        assert full_rounds * engine.capacity <= bound[engine.url] <= (full_rounds + 1) * engine.capacity
        if rest == 0:
            assert bound[engine.url] == full_rounds * engine.capacity
    assert sum(bound.values()) == workers
    for i in range(workers):  # deterministic, and every engine is somewhere in each worker's order
        assert order(engines, f"gw{i}") == order(engines, f"gw{i}")
        assert sorted(e.url for e in order(engines, f"gw{i}")) == sorted(e.url for e in engines)
