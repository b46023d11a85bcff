"""A SIGKILLed harness on the local backend: its agents die with it, and what it left on disk is swept.

Real pytest runs of the plugin in a subprocess, SIGKILLed while the agent works: the agent (the oracle
running a solution, or the real Claude Code CLI against the scripted model) starts a long-lived child in a
session of its own (``setsid``), so no signal to a process or a group reaches the whole tree.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from scaffold.modelserver import ScriptedModelServer, load_script
from scaffold.workspaces.owners import MARK_SUFFIX
from tests.support.agents import ANTHROPIC_KEY, require_cli
from tests.support.factories import TaskFactory
from tests.support.sessions import (
    command_lines,
    gone_within,
    hanging_solution,
    in_workspaces,
    kill_all,
    owned,
    processes,
    start_run,
    supervisor_of,
    wait_for,
    with_token,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")


@pytest.mark.slow
def test_a_sigkilled_run_takes_the_agent_and_its_escaped_child_with_it(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    token = f"comet-orphan-{uuid.uuid4().hex}"
    suite.task("hangs", solve=hanging_solution(token), environment={"timeout_sec": 300})
    proc = start_run(pytester.path, "--task=hangs")
    try:
        wait_for(lambda: len(processes(with_token(token))) == 2, "agent and escaped child", proc)
        proc.kill()
        proc.wait()
        left = gone_within(with_token(token), 2.0)
        assert left == [], f"agent processes outlived the harness by 2 s: {left}"
        # The supervisor also removed the killed trial's workspace (and the validation helpers' folder).
        root = scratch / "comet-eval"
        deadline = time.monotonic() + 2.0
        while owned(root) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert owned(root) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(with_token(token)))


@pytest.mark.slow
def test_a_sigkilled_xdist_controller_takes_its_workers_agents_with_it(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    """``-n``: only the controller is SIGKILLed. Its worker dies with it (the parent-death signal the
    plugin arms), and the worker's supervisor ends the agents, within the same 2 s."""
    token = f"comet-orphan-xdist-{uuid.uuid4().hex}"
    suite.task("hangs", solve=hanging_solution(token), environment={"timeout_sec": 300})
    proc = start_run(pytester.path, "--task=hangs", "-n", "1")
    try:
        wait_for(lambda: len(processes(with_token(token))) == 2, "agent and escaped child", proc)
        proc.kill()
        proc.wait()
        left = gone_within(with_token(token), 2.0)
        assert left == [], f"agent processes outlived the xdist controller by 2 s: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(with_token(token)))


@pytest.mark.slow
def test_ctrl_c_with_two_trials_in_flight_ends_both_and_records_neither(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    """``--in-flight 2``: the second trial runs in a thread, ahead of its item. Ctrl-C reaches the first
    one's agent in the main thread; the session's end stops the one ahead (pytest_comet.ahead). Neither
    leaves a record, so a resume runs both, and nothing of either outlives the run."""
    token = f"comet-ctrl-c-{uuid.uuid4().hex}"
    suite.task("hangs", solve=hanging_solution(token), environment={"timeout_sec": 300})
    logs = pytester.path / "logs"
    proc = start_run(pytester.path, "--task=hangs", "--count=2", "--in-flight=2", f"--logs-dir={logs}")
    try:
        # Two trials at once: two agents, each with its escaped child.
        wait_for(lambda: len(processes(with_token(token))) == 4, "two agents and their escaped children", proc)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, (pytester.path / "run.log").read_text()
        left = gone_within(with_token(token), 2.0)
        assert left == [], f"agent processes outlived the interrupted run by 2 s: {left}"
        assert list(logs.glob("experiments/*/trials/*/record.json")) == []
        assert owned(scratch / "comet-eval") == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(processes(with_token(token)))


@pytest.mark.slow
def test_successive_killed_runs_leave_no_pile_up(suite: TaskFactory, pytester: pytest.Pytester, scratch: Path) -> None:
    """Each run is SIGKILLed together with its supervisor (``kill -9`` of everything but the agents): the
    next session's start ends the dead run's agents and removes its folders."""
    prefix = f"comet-pileup-{uuid.uuid4().hex}"
    root = scratch / "comet-eval"
    left_by_last: list[Path] = []
    try:
        for run in range(3):
            token = f"{prefix}-{run}"  # this run's agents, told apart from the ones the last run left
            suite.task("hangs", solve=hanging_solution(token), environment={"timeout_sec": 300})
            proc = start_run(pytester.path, "--task=hangs", f"--experiment-id=kill-{run}")
            try:
                mine = with_token(token)
                wait_for(lambda: len(processes(mine)) == 2, "agent and escaped child", proc)  # noqa: B023
                # This session started, so what the previous one left is gone, its agents with it.
                assert not any(path.exists() for path in left_by_last), owned(root)
                assert processes(with_token(f"{prefix}-{run - 1}")) == []
                supervisor = processes(supervisor_of(proc.pid))
                assert len(supervisor) == 1
                kill_all([proc.pid, *supervisor])
                proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            left_by_last = owned(root)
            assert any(p.name.startswith("hangs-") for p in left_by_last)  # the sweep had something to do
        from scaffold.workspaces.backends import create_backend

        create_backend("local", workspace_root=root).close()  # the next session's start
        assert owned(root) == []
        assert processes(with_token(prefix)) == []
    finally:
        kill_all(processes(with_token(prefix)))


CLAUDE_SCRIPT = """
responses:
  - tool_calls:
      - name: Bash
        input:
          command: >-
            setsid python3 -c 'import time; time.sleep(600)' {token}-escaped > /dev/null 2>&1 &
            python3 -c 'import time; time.sleep(600)' {token}-bash
          description: "Work for a while"
          timeout: 600000
  - text: "Done."
fallback_text: "OK"
"""


@pytest.mark.slow
@pytest.mark.agent_cli
def test_a_sigkilled_run_takes_claude_code_and_its_shells_with_it(
    suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    bin_dir = require_cli("claude")
    token = f"comet-claude-orphan-{uuid.uuid4().hex}"
    suite.task("hangs", environment={"timeout_sec": 300})
    script = pytester.path / "script.yaml"
    script.write_text(CLAUDE_SCRIPT.replace("{token}", token))
    root = scratch / "comet-eval"
    with ScriptedModelServer(load_script(script)) as server:
        env = {
            **os.environ,
            "PATH": bin_dir + os.pathsep + os.environ["PATH"],
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_BASE_URL": server.url,
            "BENCH_CC_MODEL": "claude-sonnet-4-5",
        }
        proc = start_run(pytester.path, "--task=hangs", "--agent=claude-code", env=env)
        try:
            wait_for(
                lambda: len(processes(with_token(token))) >= 2,
                "claude's shell and its escaped child",
                proc,
                detail=lambda: (
                    "the workspaces' processes:\n"
                    + command_lines(processes(in_workspaces(root)))
                    + f"\nthe model server's requests: {len(server.requests)}"
                ),
            )
            assert processes(lambda c, e: b"claude" in c and in_workspaces(root)(c, e)), "claude itself runs"
            proc.kill()
            proc.wait()
            left = gone_within(in_workspaces(root), 2.0) + gone_within(with_token(token), 0.0)
            assert left == [], f"agent processes outlived the harness by 2 s: {left}"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            kill_all(processes(with_token(token)) + processes(in_workspaces(root)))


@pytest.mark.slow
@pytest.mark.docker
def test_a_killed_docker_runs_workspace_and_control_folder_go_at_the_next_start(
    docker_base_image: str, suite: TaskFactory, pytester: pytest.Pytester, scratch: Path
) -> None:
    suite.task("hangs", solve="echo started > started.txt; sleep 300\n", environment={"timeout_sec": 300})
    root = scratch / "comet-eval"
    proc = start_run(pytester.path, "--task=hangs", "--backend=docker")
    try:
        wait_for(lambda: list(root.glob("*/hangs-*/started.txt")), "the agent's first file", proc)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [p.parent.name for p in root.glob(".comet-ctl/*" + MARK_SUFFIX)]  # what the kill left
    assert any(p.name.startswith("hangs-") for p in owned(root))
    from scaffold.workspaces.backends import create_backend

    create_backend("docker", workspace_root=root).close()  # the next session's start
    assert owned(root) == []
    assert list(root.glob(".comet-ctl/*")) == []


@pytest.mark.usefixtures("unconfined")  # confined, the escaped child ends with its command
def test_destroying_a_workspace_ends_what_its_agent_left_running(factory: TaskFactory, tmp_path: Path) -> None:
    """Ctrl-C mid-agent: the runner destroys the workspace before validation ever began; an escaped child
    (its own session) ends with it, as strict validation would have ended it."""
    from scaffold.catalog.tasks import load_catalog
    from scaffold.workspaces.local import LocalBackend

    factory.task("t")
    task = load_catalog([factory.tasks_dir]).tasks["t"]
    token = f"comet-destroyed-{uuid.uuid4().hex}"
    backend = LocalBackend(tmp_path / "ws")
    try:
        workspace = backend.create(task, "exp/t-CONTROL-r1")
        # The command returns once the child runs in its own session (the end of the command kills its group).
        child = f"python3 -c \"open('started', 'w').close(); import time; time.sleep(600)\" {token}"
        workspace.exec(
            ["sh", "-c", f"setsid {child} > /dev/null 2>&1 & while [ ! -e started ]; do sleep 0.01; done"],
            timeout=60,
            env={},
            stdout_path=tmp_path / "out.log",
            stderr_path=tmp_path / "err.log",
        )
        assert processes(with_token(token))
        backend.destroy(workspace, keep=False)
        assert processes(with_token(token)) == []
    finally:
        kill_all(processes(with_token(token)))
        backend.close()


def test_the_supervisor_starts_with_the_standard_library_only(tmp_path: Path) -> None:
    # It runs as `python -S` (no site-packages): a module on its import chain that reaches a third-party
    # package would make it die at once, silently, and a killed harness would leave its agents running.
    package_parent = str(Path(__file__).resolve().parents[3])
    result = subprocess.run(
        [sys.executable, "-S", "-c", "import scaffold.workspaces.supervisor"],
        env={"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": package_parent},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
