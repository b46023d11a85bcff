"""A pool of three Docker engines: this machine's, and two "remote" ones (tests.support.engines: each in a
network namespace of its own, TCP with TLS client certificates, blind to this machine's files).

The built-in suite × 3 trials runs with ``-n 6`` over slots of capacity 2 each: every trial is recorded
once, on the engine its worker is bound to. Then one remote engine is killed in the middle of a run: the
trials running there are excluded as ``container_failure`` naming it, the other trials complete (its
workers move to the live engines), a ``--rerun-errors`` resume leaves the dead engine out and completes
the experiment, nothing is left on the live engines, and what the dead one still held is swept when it
is back. Everything goes through the real plugin, in subprocesses, as a user runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.workspaces.engines import Engine, slots, worker_index
from tests.support.engines import CERTS, FarEngine, missing
from tests.support.factories import REPO, TaskFactory
from tests.support.netns import PROBE

# One worker for the whole module: its engines (network namespaces, dockerd processes) exist once per machine.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("engine-pool")]

FAR = [FarEngine("poola", 0), FarEngine("poolb", 1)]


@pytest.fixture(scope="module")
def engines(docker_client: Any, docker_base_image: str) -> Iterator[list[FarEngine]]:
    problem = missing()
    if problem:
        if os.environ.get("COMET_REQUIRE_DOCKER") == "1":
            pytest.fail(f"COMET_REQUIRE_DOCKER=1 but the pool's engines cannot be started: {problem}", pytrace=False)
        pytest.skip(f"engine pool: {problem}")
    try:
        for engine in FAR:
            engine.start()
        yield FAR
    finally:
        for engine in FAR:
            engine.remove()


def _local_url() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _pool_args(far: list[FarEngine]) -> list[str]:
    return ["--docker-host", f"{_local_url()}*2", *(a for e in far for a in ("--docker-host", f"{e.url}*2"))]


def _environment(far: list[FarEngine]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DOCKER_CERT_PATH=str(CERTS / "client"),  # one folder per engine host: client/<ip>/
        DOCKER_TLS_VERIFY="1",
        NO_PROXY=",".join(filter(None, [env.get("NO_PROXY"), *(e.ip for e in far)])),
    )
    env["no_proxy"] = env["NO_PROXY"]
    env.pop("COMET_DOCKER_COPY", None)  # each engine decides: bind here, copy on the remote ones
    return env


def _run(args: list[str], env: dict[str, str], logs: Path, *, wait: bool = True) -> Any:
    argv = [sys.executable, "-m", "pytest", str(REPO / "local" / "tests"), "-p", "no:cacheprovider", "-q"]
    argv += ["--backend", "docker", "--logs-dir", str(logs), "--keep-workspaces", "none", *args]
    if not wait:
        return subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
    return subprocess.run(argv, check=False, env=env, cwd=REPO, capture_output=True, text=True, timeout=900)


def _records(logs: Path, experiment: str) -> list[dict[str, Any]]:
    folder = logs / "experiments" / experiment / "trials"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/record.json"))]


def _leftovers(client: Any, experiment: str | None = None) -> list[str]:
    """Our containers and volumes on *client*'s engine: of *experiment* only (this machine's engine runs
    other tests' trials meanwhile), else all of them (the test's own engines: the relay has no experiment)."""
    label = f"comet-eval.experiment={experiment}" if experiment else "comet-eval.session"
    names = [c.name for c in client.containers.list(all=True, filters={"label": label})]
    return names + [v.name for v in client.volumes.list(filters={"label": label})]


def _processes(container: Any) -> str:
    """What *container* runs, or "" when it stopped between being listed and asked (the engine says 409)."""
    import docker.errors

    try:
        return str(container.top().get("Processes"))
    except docker.errors.APIError:
        return ""


def test_a_pool_of_three_engines_runs_every_trial_once_where_its_worker_is_bound(
    engines: list[FarEngine], tmp_path: Path, docker_client: Any
) -> None:
    env = _environment(engines)
    done = _run([*_pool_args(engines), "-n", "6", "--count", "3", "--experiment-id", "pool"], env, tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    records = _records(tmp_path, "pool")
    assert len(records) == 21 and len({r["case_id"] for r in records}) == 21
    assert {r["verdict"] for r in records} == {"passed"}, [r["errors"] for r in records if r["verdict"] != "passed"]
    ring = slots([Engine(_local_url(), 2), *(Engine(e.url, 2) for e in engines)])
    for record in records:
        bound = ring[worker_index(record["worker"]) % len(ring)].url
        assert record["workspace"]["engine"] == bound, record["worker"]
    used = {r["workspace"]["engine"] for r in records}
    assert used == {_local_url(), *(e.url for e in engines)}, "every engine of the pool ran trials"
    assert "engines: " in done.stdout and all(url in done.stdout for url in used)
    for engine in engines:
        client = engine.client()
        assert _leftovers(client) == []
        client.close()
    assert _leftovers(docker_client, "pool") == []


def test_an_engine_that_dies_mid_run_costs_only_its_running_trials(
    engines: list[FarEngine], tmp_path: Path, docker_client: Any
) -> None:
    env = _environment(engines)
    victim = engines[1]
    # Trials long enough to be caught running: 12 of them, so each of the 6 workers starts one at once.
    slow = TaskFactory(tmp_path / "suite")
    slow.task("slow-solve", solve="sleep 4\necho done > out.txt\n")
    suite = ["--tasks-dir", str(slow.tasks_dir), "--treatments-dir", str(slow.treatments_dir)]
    # Without retries: a container_failure would otherwise be run again on a live engine at once
    # (--retry-excluded, tests/pytest_comet/test_retries.py), and this test is of what the failure costs.
    args = [
        *_pool_args(engines),
        *suite,
        "-n",
        "6",
        "--count",
        "12",
        "--experiment-id",
        "fault",
        "--retry-excluded",
        "0",
    ]
    run = _run(args, env, tmp_path, wait=False)
    try:
        watcher = victim.client(timeout=10)
        deadline = time.monotonic() + 300
        # Kill the engine while both of its workers' trials run there: their agents (the oracle's sleep) are up.
        while time.monotonic() < deadline and run.poll() is None:
            running = watcher.containers.list(filters={"label": "comet-eval.experiment=fault", "status": "running"})
            if len([c for c in running if "sleep" in _processes(c)]) >= 2:
                break
            time.sleep(0.1)
        watcher.close()
        victim.kill()
        out, _ = run.communicate(timeout=900)
    finally:
        if run.poll() is None:  # the test failed before the run ended: it must not load the machine on
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
    records = _records(tmp_path, "fault")
    assert len(records) == 12, out[-4000:]
    failed = [r for r in records if r["verdict"] != "passed"]
    assert failed, "a trial was running on the engine that died"
    for record in failed:
        assert record["verdict"] == "error", record
        assert record["noise"]["category"] == "excluded" and record["noise"]["reason"] == "container_failure", record
        assert record["noise"]["evidence"]["engine"] == victim.url
    assert len(failed) == 2, "the trials running on the dead engine (one per worker bound to it), no more"
    later = [r for r in records if r["verdict"] == "passed" and r["worker"] in ("gw2", "gw5")]
    assert all(r["workspace"]["engine"] != victim.url for r in later if r["started_at"] > failed[0]["finished_at"])

    # The resume: the dead engine is reported and left out; the errored trials run on live engines.
    resume = [*suite, "-n", "6", "--count", "12", "--experiment-id", "fault", "--rerun-errors"]
    again = _run([*_pool_args(engines), *resume], env, tmp_path)
    assert again.returncode == 0, again.stdout[-6000:] + again.stderr[-3000:]
    records = _records(tmp_path, "fault")
    assert len(records) == 12 and {r["verdict"] for r in records} == {"passed"}, again.stdout[-3000:]
    assert "UNREACHABLE, left out" in again.stdout and victim.url in again.stdout
    assert victim.url not in {
        r["workspace"]["engine"] for r in records if r["case_id"] in {f["case_id"] for f in failed}
    }
    assert _leftovers(docker_client, "fault") == []
    client = engines[0].client()
    assert _leftovers(client) == []
    client.close()

    # Back again: its leftovers are swept by the first session that reaches it.
    victim.start(fresh_network=False)
    client = victim.client()
    try:
        before = _leftovers(client)
        check = subprocess.run(
            [str(Path(sys.executable).parent / "comet"), "engines", "check", "--docker-host", victim.url],
            check=False, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert check.returncode == 0, check.stdout + check.stderr
        assert _leftovers(client) == []
        if before:
            assert f"swept {len(before)}" in check.stdout, check.stdout
    finally:
        client.close()


@pytest.mark.agent_cli
@pytest.mark.parametrize(
    ("agent", "cli", "script", "url_key", "url_suffix"),
    [
        ("claude-code", "claude", "claude-skill-smoke.yaml", "ANTHROPIC_BASE_URL", ""),
        ("codex", "codex", "codex-skill-smoke.yaml", "OPENAI_BASE_URL", "/v1"),
    ],
)
def test_a_real_agent_runs_on_a_remote_engine_and_reaches_only_its_endpoint(
    engines: list[FarEngine],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    factory: TaskFactory,
    agent: str,
    cli: str,
    script: str,
    url_key: str,
    url_suffix: str,
) -> None:
    """The CLI goes into the remote engine through the API (a volume: nothing of this machine is mounted
    there), and the scripted model server on this machine is reached through the engine's relay only:
    the endpoint answers, another port of this machine is refused (and kept as evidence), a direct
    connection goes nowhere."""
    from scaffold.agents import create_agent
    from scaffold.catalog.tasks import load_task
    from scaffold.experiment.cases import Case
    from scaffold.modelserver import ScriptedModelServer, load_script
    from scaffold.workspaces.docker import DockerBackend
    from scaffold.workspaces.engines import default_engine, parse_engine
    from tests.support.agents import SCRIPTS, require_cli, scripted_cli_env
    from tests.support.factories import make_runner

    far = engines[0]
    monkeypatch.setenv("PATH", require_cli(cli) + os.pathsep + os.environ["PATH"])
    for key in ("COMET_DOCKER_EGRESS", "COMET_DOCKER_COPY", "COMET_CONTROLLER_ADDRESS"):
        monkeypatch.delenv(key, raising=False)
    engine = parse_engine(far.url, _environment(engines))
    assert engine.tls and not engine.local
    log = tmp_path / "model-requests.jsonl"
    with (
        ScriptedModelServer(load_script(SCRIPTS / script), host="0.0.0.0", log_path=log) as server,
        ScriptedModelServer(load_script(SCRIPTS / script), host="0.0.0.0") as other,
    ):
        port = server.url.rsplit(":", 1)[1]
        env = {**scripted_cli_env(tmp_path / "user-home", None), url_key: f"http://127.0.0.1:{port}{url_suffix}"}
        runner = make_runner([BUILTIN_TASKS_DIR], [BUILTIN_TREATMENTS_DIR], tmp_path)
        runner.agent = create_agent(agent, env)
        assert runner.agent.network.on_this_machine
        backend = DockerBackend(
            tmp_path / "ws",
            network=True,
            network_scope="host",
            agent_install=runner.agent.install,
            egress=runner.agent.network.endpoints,
            engine=engine,
            image_sources=[default_engine(os.environ)],  # the base image comes from this machine's engine
        )
        runner.backend = backend
        try:
            record = runner.run(Case("generic-skill-smoke", "SKILL_MARKDOWN_REPORT", 1)).record
            assert backend.copy_mode, "a remote engine sees none of this machine's folders"
            assert backend.egress == (f"{far.host_ip}:{port}",), "this machine, as the engine's host sees it"
            probe = backend.create(load_task(factory.task("probe", files={"probe.py": PROBE})), "exp-r/probe")
            try:
                blocked_endpoint = f"{far.host_ip}:{other.url.rsplit(':', 1)[1]}"
                allowed, blocked = f"http://{far.host_ip}:{port}/", f"http://{blocked_endpoint}/"
                probe.exec(
                    ["python3", "probe.py", allowed, blocked],
                    timeout=60,
                    env={},
                    stdout_path=tmp_path / "probe.log",
                    stderr_path=tmp_path / "probe.err",
                )
            finally:
                backend.destroy(probe, keep=False)
            out = (tmp_path / "probe.log").read_text()
            lines = dict(line.split(" ", 1) for line in out.splitlines())
            assert lines.get("allowed") == "200", out + (tmp_path / "probe.err").read_text()
            assert lines["other"] == "403" and lines["direct"] != "connected", out
            # The probe's refusal, after any the CLI itself met (Claude Code tries its provider's own host).
            refused = [r.target for r in backend.egress_refusals]
            assert refused[-1] == blocked_endpoint and f"{far.host_ip}:{port}" not in refused, refused
        finally:
            backend.close()
    assert record.workspace.engine == far.url
    assert record.verdict == "passed", (record.checks, record.errors, record.trajectory and record.trajectory.errors)
    assert record.trajectory is not None and record.trajectory.skills_invoked == ("markdown-report",)
    assert server.requests and other.requests == [], "the model calls reached the endpoint, nothing else did"
    client = far.client()
    try:
        assert _leftovers(client) == [], "the trial's containers and the relay are gone"
    finally:
        client.close()
