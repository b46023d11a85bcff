"""The pool's backend of one worker: its engine, the next one when that engine is gone (and only then),
and what the session says about a pool before any trial (through the real plugin and command line).

The engines here are unix sockets that do not exist: a probe finds them gone at once, as it finds a
dead engine. The Docker-backed half (three real engines, one killed mid-run) is test_engine_pool.py.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.pool import PoolBackend, probe, probe_all
from scaffold.workspaces.engines import Engine
from tests.support.factories import REPO

GONE_A = Engine("unix:///nonexistent/comet-a.sock", 2)
GONE_B = Engine("unix:///nonexistent/comet-b.sock", 2)


@dataclass
class FakeBackend:
    """Stands in for a DockerBackend: *fail* makes its steps raise as a broken connection would."""

    docker_engine: Engine
    fail: bool = False
    made: list[str] = field(default_factory=list)
    hints: list[Any] = field(default_factory=list)
    closed: bool = False

    def expect(self, task: Any) -> None:
        self.hints.append(task)

    def prepare(self, task: Any) -> None:
        if self.fail:
            raise ConnectionError("Connection refused")

    def create(self, task: Any, trial_key: str) -> Any:
        if self.fail:
            raise WorkspaceError(f"cannot create a container for {trial_key}")
        self.made.append(trial_key)
        return object()

    def destroy(self, workspace: Any, *, keep: bool) -> None:
        if self.fail:
            raise WorkspaceError("cannot remove")

    def close(self) -> None:
        self.closed = True


def test_a_worker_moves_to_the_next_engine_when_its_own_is_gone() -> None:
    made: dict[str, FakeBackend] = {}
    said: list[str] = []

    def make(engine: Engine) -> Any:
        made[engine.url] = FakeBackend(engine, fail=engine is GONE_A)
        return made[engine.url]

    pool = PoolBackend([GONE_A, GONE_B], make, say=said.append)
    assert pool.engine == GONE_A.url
    pool.expect("t")
    workspace = pool.create(object(), "exp/t-r1")  # type: ignore[arg-type]
    assert made[GONE_B.url].made == ["exp/t-r1"] and pool.engine == GONE_B.url
    assert made[GONE_B.url].hints == ["t"]  # the hint reaches the engine that made the workspace
    assert GONE_A.url in pool.dead and made[GONE_A.url].closed
    assert said and GONE_A.url in said[0] and f"the next trials run on {GONE_B.url}" in said[0]
    pool.destroy(workspace, keep=False)
    made[GONE_B.url].fail = True  # the last engine dies too: a clear error, not a loop
    with pytest.raises(WorkspaceError, match="every engine of the pool is unreachable"):
        pool.prepare(object())  # type: ignore[arg-type]
    pool.close()


def test_an_engine_that_cannot_even_be_reached_at_first_use_is_skipped() -> None:
    def make(engine: Engine) -> Any:
        if engine is GONE_A:
            raise WorkspaceError("cannot reach the Docker engine")
        return FakeBackend(engine)

    pool = PoolBackend([GONE_A, GONE_B], make)
    pool.prepare(object())  # type: ignore[arg-type]
    assert pool.engine == GONE_B.url


def test_a_failure_on_a_live_engine_is_the_trials_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import scaffold.workspaces.docker.pool as module

    monkeypatch.setattr(module, "probe", lambda engine, timeout=5.0: module.EngineStatus(engine, True))
    pool = PoolBackend([GONE_A, GONE_B], lambda engine: FakeBackend(engine, fail=True))  # type: ignore[arg-type,return-value]
    with pytest.raises(WorkspaceError, match="cannot create a container"):
        pool.create(object(), "exp/t-r1")  # type: ignore[arg-type]
    assert pool.dead == {} and pool.engine == GONE_A.url


def test_probes_report_an_unreachable_engine_without_raising() -> None:
    status = probe(GONE_A, timeout=1)
    assert not status.reachable and GONE_A.url in status.problem
    assert [s.engine for s in probe_all([GONE_A, GONE_B], timeout=1)] == [GONE_A, GONE_B]


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), "-p", "no:cacheprovider"]
    argv += ["--task", "fix-median", "--logs-dir", str(cwd / "logs"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_the_session_refuses_a_pool_it_cannot_use(tmp_path: Path) -> None:
    local = _pytest("--docker-host", GONE_A.url, cwd=tmp_path)
    assert local.returncode == 4 and "--docker-host and --docker-pool need --backend docker" in local.stderr
    gone = _pytest("--backend", "docker", "--docker-host", GONE_A.url, "--docker-host", GONE_B.url, cwd=tmp_path)
    assert gone.returncode == 4 and "no engine of the pool answers" in gone.stderr, gone.stderr
    assert GONE_A.url in gone.stderr and GONE_B.url in gone.stderr
    bad = _pytest("--backend", "docker", "--docker-host", "tcp://10.0.0.5", cwd=tmp_path)
    assert bad.returncode == 4 and "a tcp:// URL needs its port" in bad.stderr


def test_engines_check_reports_an_unreachable_engine_and_fails(tmp_path: Path) -> None:
    comet = Path(sys.executable).parent / "comet"
    done = subprocess.run(
        [str(comet), "engines", "check", "--docker-host", f"{GONE_A.url}*3", "--json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    import json

    (entry,) = json.loads(done.stdout)
    assert entry["url"] == GONE_A.url and entry["capacity"] == 3 and entry["reachable"] is False
    assert "cannot reach the Docker engine" in entry["problem"]
