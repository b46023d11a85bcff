"""A model endpoint elsewhere: the agent's container reaches it through the egress proxy, and nothing else.

The scripted model server runs on a "far host": a network namespace reached over a veth pair, standing
in for a provider on the internet (the harness treats its address as remote). The real Claude Code and
Codex CLIs run in Docker containers on the internal host-only network, from where that host cannot be
reached directly; their requests get there only through the egress proxy, which allows exactly the
endpoint's ``host:port``. From the same kind of container any other destination is refused by the
proxy, and a direct connection goes nowhere.

Needs root and iproute2 (the namespace), Docker and the CLIs; skips locally without them, and fails
in CI (COMET_REQUIRE_DOCKER / COMET_REQUIRE_AGENT_CLIS).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.catalog.tasks import load_task
from scaffold.experiment.cases import Case
from scaffold.workspaces.base import endpoint_of
from scaffold.workspaces.docker import DockerBackend
from tests.support.agents import SCRIPTS, require_cli, scripted_cli_env
from tests.support.factories import REPO, TaskFactory, make_runner
from tests.support.netns import PROBE, FarHost

# One worker runs the module: its namespace exists once per machine, and a second worker's fixture would
# remove it (create() clears leftovers) under the first one's running test.
pytestmark = [pytest.mark.docker, pytest.mark.agent_cli, pytest.mark.xdist_group("netns-far")]

NETNS, HOST_END, FAR_END = "comet-far", "comet-far0", "comet-far1"
HOST_IP, FAR_IP = "10.231.78.1", "10.231.78.2"
FAR = FarHost(NETNS, HOST_END, FAR_END, HOST_IP, FAR_IP)


@pytest.fixture(scope="module")
def far_host(docker_client: Any) -> Iterator[str]:
    """A network namespace reached from this machine over a veth pair: another host, as far as the
    containers' internal network is concerned (their packets to it would be forwarded, and Docker's
    internal network forwards nothing)."""
    missing = "needs root" if os.geteuid() != 0 else None if shutil.which("ip") else "ip (iproute2) is not installed"
    if missing:
        if os.environ.get("COMET_REQUIRE_DOCKER") == "1":
            pytest.fail(f"COMET_REQUIRE_DOCKER=1 but the egress test cannot run: {missing}", pytrace=False)
        pytest.skip(f"egress test: {missing}")
    FAR.create()
    yield FAR_IP
    FAR.remove()


@contextlib.contextmanager
def far_model_server(script: str) -> Iterator[str]:
    """The scripted model server running on the far host; yields its base URL."""
    serve = [sys.executable, "-m", "scaffold.modelserver", "--script", str(SCRIPTS / script), "--host", FAR_IP]
    proc = subprocess.Popen(
        ["ip", "netns", "exec", NETNS, *serve],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read() if proc.stderr else url
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.mark.parametrize(
    ("agent", "cli", "script", "url_key", "url_suffix"),
    [
        ("claude-code", "claude", "claude-skill-smoke.yaml", "ANTHROPIC_BASE_URL", ""),
        ("codex", "codex", "codex-skill-smoke.yaml", "OPENAI_BASE_URL", "/v1"),
    ],
)
def test_real_cli_reaches_a_remote_endpoint_through_the_proxy_only(
    far_host: str,
    docker_base_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    cli: str,
    script: str,
    url_key: str,
    url_suffix: str,
) -> None:
    monkeypatch.setenv("PATH", require_cli(cli) + os.pathsep + os.environ["PATH"])
    monkeypatch.delenv("COMET_DOCKER_EGRESS", raising=False)
    with far_model_server(script) as url:
        env = {**scripted_cli_env(tmp_path / "user-home", None), url_key: url + url_suffix}
        runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path)
        runner.agent = create_agent(agent, env)
        assert not runner.agent.network.on_this_machine  # the harness takes it for a remote provider
        backend = DockerBackend(
            tmp_path / "ws",
            network=True,
            network_scope="internet",
            agent_install=runner.agent.install,
            egress=runner.agent.network.endpoints,
        )
        runner.backend = backend
        try:
            record = runner.run(Case("generic-skill-smoke", "SKILL_MARKDOWN_REPORT", 1)).record
        finally:
            backend.close()
    assert backend.egress == (endpoint_of(url),)
    assert backend.network_name == "comet-eval-host-only"
    assert record.verdict == "passed", (record.checks, record.errors, record.trajectory and record.trajectory.errors)
    assert record.trajectory is not None and record.trajectory.skills_invoked == ("markdown-report",)


def test_a_container_reaches_nothing_but_the_endpoint(
    far_host: str, docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    """From inside the agent's container: the endpoint answers, another port of the same host is refused
    by the proxy, and a direct connection (bypassing the proxy) goes nowhere."""
    with (
        far_model_server("claude-skill-smoke.yaml") as allowed,
        far_model_server("claude-skill-smoke.yaml") as other,
    ):
        backend = DockerBackend(tmp_path / "ws", network=True, network_scope="internet", egress=[allowed])
        workspace = backend.create(load_task(factory.task("probe", files={"probe.py": PROBE})), "exp-e/probe")
        try:
            result = workspace.exec(
                ["python3", "probe.py", f"{allowed}/health", f"{other}/health"],
                timeout=60,
                env={},
                stdout_path=tmp_path / "out.log",
                stderr_path=tmp_path / "err.log",
            )
            out = (tmp_path / "out.log").read_text()
            assert result.exit_code == 0, (tmp_path / "err.log").read_text()
            lines = dict(line.split(" ", 1) for line in out.splitlines())
            assert lines["other"] == "403", out
            assert lines["direct"] != "connected", out
            refusals = [(r.target, r.reason) for r in backend.egress_refusals]
            # The server answered (a 502 is the proxy failing to reach it: its reason is in the refusals).
            assert lines["allowed"] not in ("403", "502", "URLError", "TimeoutError"), (out, refusals)
            assert [target for target, _ in refusals] == [endpoint_of(other)], refusals
        finally:
            backend.destroy(workspace, keep=False)
            backend.close()
