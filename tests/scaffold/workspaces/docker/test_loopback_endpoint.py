"""A model endpoint on this machine's loopback that Docker containers cannot reach is refused before
the first trial, with the fix named, rather than retried for minutes in every trial and called noise.

The real Claude Code CLI against the scripted model server, on the machine's engine: served on
127.0.0.1 only (the model server's default) the session ends at once as a usage error naming
``--host 0.0.0.0``; served on every address the same check lets it through; with nothing listening
the message says so."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.workspaces.docker.reach import loopback_problem
from tests.support.agents import SCRIPTS, require_cli, scripted_run_env
from tests.support.factories import TaskFactory

pytestmark = [pytest.mark.docker, pytest.mark.agent_cli]


def _run(project: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider"]
    argv += ["--backend=docker", "--agent=claude-code", f"--logs-dir={project / 'logs'}"]
    started = time.monotonic()
    run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False)
    return run, time.monotonic() - started


def test_a_loopback_only_model_server_is_refused_before_any_trial(
    suite: TaskFactory, pytester: pytest.Pytester, docker_client: Any
) -> None:
    cli_dir = require_cli("claude")
    suite.task("quick", solve="echo done > out.txt\n")
    with ScriptedModelServer(load_script(SCRIPTS / "claude-skill-smoke.yaml"), host="127.0.0.1") as server:
        port = int(server.url.rsplit(":", 1)[1])
        run, took = _run(pytester.path, scripted_run_env(pytester.path, f"http://127.0.0.1:{port}", cli_dir))
    out = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert f"the model endpoint 127.0.0.1:{port} listens on this machine's loopback only" in out, out[-3000:]
    assert "--host 0.0.0.0" in out and "Traceback" not in out
    assert not list((pytester.path / "logs").rglob("record.json"))  # no trial started
    assert took < 60, f"refused after {took:.0f} s"


def test_the_check_lets_an_endpoint_served_on_every_address_through(docker_client: Any) -> None:
    with ScriptedModelServer(load_script(SCRIPTS / "claude-skill-smoke.yaml"), host="0.0.0.0") as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert loopback_problem(f"127.0.0.1:{port}", docker_client) is None
        assert "loopback only" not in str(loopback_problem(f"localhost:{port}", docker_client))


def test_nothing_listening_is_said_as_such(docker_client: Any) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, and nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    problem = loopback_problem(f"127.0.0.1:{port}", docker_client)
    assert (
        problem == f"nothing answers at the model endpoint 127.0.0.1:{port}: start the model server (or gateway) first"
    )
