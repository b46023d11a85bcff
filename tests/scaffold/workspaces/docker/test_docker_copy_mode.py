"""Copy mode of the docker backend (the workspace inside the container, for remote engines), tested
against the local engine by forcing it; plus the pieces it is made of (tar streams, glob matching).

Needs ``DOCKER_HOST`` (or the default socket), like tests/test_docker_backend.py.
"""

from __future__ import annotations

import io
import os
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents import create_agent
from scaffold.agents.base import AgentRequest, AgentTraits
from scaffold.catalog.builtin import BUILTIN_TASKS_DIR
from scaffold.catalog.tasks import load_task
from scaffold.errors import WorkspaceError
from scaffold.experiment.cases import Case
from scaffold.trajectory import Trajectory
from scaffold.trial.runner import Runner
from scaffold.workspaces.base import NO_NETWORK, InstallSpec, ValidationPolicy, Workspace
from scaffold.workspaces.docker import COPY_ENV, DockerBackend
from scaffold.workspaces.docker.copy_mode import extract_workspace, match_glob, tar_stream
from scaffold.workspaces.files import HostFiles
from tests.support.docker import InterruptedAgent, docker_runner
from tests.support.factories import TaskFactory

pytestmark = pytest.mark.docker


@pytest.fixture
def copy_backend(docker_base_image: str, tmp_path: Path) -> Iterator[DockerBackend]:
    made = DockerBackend(tmp_path / "ws", copy=True)
    yield made
    made.close()


def left_behind(backend: DockerBackend) -> tuple[list[Any], list[Any]]:
    """This session's containers and volumes, once the background removals are done."""
    backend.drain()
    label = f"comet-eval.session={backend.session.id}"
    client = backend.client
    return (
        list(client.containers.list(all=True, filters={"label": label}, ignore_removed=True)),
        list(client.volumes.list(filters={"label": label})),
    )


def run(workspace: Workspace, argv: list[str], tmp_path: Path, *, timeout: float = 30) -> tuple[Any, str]:
    result = workspace.exec(
        argv, timeout=timeout, env={}, stdout_path=tmp_path / "out.log", stderr_path=tmp_path / "err.log"
    )
    return result, result.stdout()


def runner_for(tasks_dirs: list[Path], factory: TaskFactory, tmp_path: Path, backend: Any, agent: Any) -> Runner:
    return docker_runner(tasks_dirs, factory, tmp_path, backend, agent, experiment_id="exp-copy")


# --- choosing the mode ---------------------------------------------------------------------------------


def test_copy_mode_is_forced_by_option_or_environment_else_probed(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(factory.task("choice"))
    monkeypatch.delenv(COPY_ENV, raising=False)
    auto = DockerBackend(tmp_path / "auto")
    try:
        assert auto.copy_mode is None  # asked when the first image exists
        auto.prepare(task)
        assert auto.copy_mode is False  # this engine sees this machine's folders: bind mounts
        # What an engine elsewhere answers: it cannot see the folder.
        assert auto._engine_sees(tmp_path / f"elsewhere-{uuid.uuid4().hex}", auto.image_tag(task)) is False
        assert left_behind(auto) == ([], [])  # the probe container is gone
    finally:
        auto.close()

    for value, expected in (("1", True), ("0", False), ("auto", None)):
        monkeypatch.setenv(COPY_ENV, value)
        made = DockerBackend(tmp_path / "env")
        made.close()
        assert made.copy_mode is expected
    monkeypatch.setenv(COPY_ENV, "0")
    explicit = DockerBackend(tmp_path / "explicit", copy=True)  # the constructor's option wins
    explicit.close()
    assert explicit.copy_mode is True
    monkeypatch.setenv(COPY_ENV, "sometimes")
    with pytest.raises(WorkspaceError, match=f"{COPY_ENV}='sometimes': use 1"):
        DockerBackend(tmp_path / "bad")


# --- trials --------------------------------------------------------------------------------------------


def test_oracle_trials_pass_in_copy_mode(copy_backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    factory.task("small")
    runner = runner_for([factory.tasks_dir, BUILTIN_TASKS_DIR], factory, tmp_path, copy_backend, create_agent("oracle"))
    for name in ("small", "fix-median"):
        record = runner.run(Case(name, "CONTROL", 1)).record
        assert record.verdict == "passed", (name, record.errors, record.checks)
        assert not record.workspace.kept
    fix_median = runner.run(Case("fix-median", "CONTROL", 1)).record
    assert len(fix_median.checks) > 10  # the hidden checks ran in the container, through the shim
    assert not (tmp_path / "ws").exists()  # nothing of the workspace ever lived on this machine
    assert left_behind(copy_backend) == ([], [])


class LookingAgent:
    """Looks at the workspace, changes it (nested folders, a mode, links), leaves a process behind that
    would steal the validation files, and does not solve the task (so the workspace is kept)."""

    name = "looking"
    traits = AgentTraits(invokes_skills=False)
    model: str | None = None
    install: InstallSpec | None = None
    network = NO_NETWORK

    def __init__(self) -> None:
        self.listing = ""
        self.host_folder_during_run: bool | None = None

    def redact(self, text: str) -> str:
        return text

    def run(self, workspace: Workspace, request: AgentRequest) -> Trajectory:
        script = (
            "ls -A; mkdir -p deep/er; echo nested > deep/er/n.txt; chmod 755 deep/er/n.txt; "
            "ln -s deep/er/n.txt link.txt; ln -s /etc/passwd outside; "
            "env -i PATH=/usr/bin:/bin setsid sh -c "
            "'while :; do cp -r .eval-validation stolen 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 &"
        )
        result = workspace.exec(
            ["sh", "-c", script],
            timeout=30,
            env={},
            stdout_path=request.log_dir / "look.out",
            stderr_path=request.log_dir / "look.err",
        )
        self.listing = result.stdout()
        self.host_folder_during_run = workspace.host_path is not None and workspace.host_path.exists()
        time.sleep(0.3)  # the thief is running
        return Trajectory(agent=self.name, exit_code=result.exit_code)


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bind"])
def test_validation_files_arrive_after_the_agent_and_a_failed_workspace_is_kept(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, copy: bool
) -> None:
    factory.task("kept")
    backend = DockerBackend(tmp_path / "ws", copy=copy)
    agent = LookingAgent()
    try:
        runner = runner_for([factory.tasks_dir], factory, tmp_path, backend, agent)
        record = runner.run(Case("kept", "CONTROL", 1)).record
        assert record.verdict == "failed"
        assert agent.listing.split() == ["Dockerfile"]  # neither validation nor solution files
        assert agent.host_folder_during_run is (not copy)
        kept = Path(record.workspace.path)
        assert record.workspace.kept
        assert kept == tmp_path / "ws" / runner.experiment.workspace_key(Case("kept", "CONTROL", 1))
        assert (kept / "Dockerfile").is_file()
        assert (kept / "deep/er/n.txt").read_text() == "nested\n"
        assert os.access(kept / "deep/er/n.txt", os.X_OK)
        assert (kept / "link.txt").is_symlink() and (kept / "link.txt").read_text() == "nested\n"
        assert (kept / ".eval-validation" / "check.py").is_file()  # validation ran, after the agent
        assert (kept / "_test_results.json").is_file()
        assert not (kept / "stolen").exists()  # the agent's processes were gone before the files came
        if copy:
            assert not (kept / "outside").exists()  # a link out of the workspace is not recreated here
        assert left_behind(backend) == ([], [])
    finally:
        backend.close()


def test_file_operations_match_bind_mode(docker_base_image: str, factory: TaskFactory, tmp_path: Path) -> None:
    """The same calls give the same answers whether the files are on this machine or in the container."""
    task = load_task(factory.task("files", files={"src/a.py": "A\n", "README.md": "read me\n"}))
    (task.environment_dir / "alias.md").symlink_to("README.md")  # environment links stay links
    skill = factory.skill("tool", extra={"scripts/run.sh": "echo run\n"})
    answers: list[list[Any]] = []
    for copy in (False, True):
        backend = DockerBackend(tmp_path / f"ws-{copy}", copy=copy)
        try:
            ws = backend.create(task, "exp-f/files-CONTROL-r1")
            got: list[Any] = []
            ws.put(skill, ".claude/skills/tool")
            ws.write_text("notes/n.txt", "hello\n")
            got += [ws.read_text("notes/n.txt"), ws.read_text("missing.txt"), ws.read_text("src")]
            got += [ws.glob("**/*.py"), ws.glob("*.md"), ws.glob(".claude/skills/*/SKILL.md"), ws.glob("**/scripts")]
            ws.remove("notes")
            got += [ws.read_text("notes/n.txt"), ws.glob("notes/*")]
            ws.write_text("notes/again.txt", "again\n")  # written after the removal of its folder
            ws.put(skill / "SKILL.md", "copied/SKILL.md")
            ws.remove("copied/SKILL.md")  # removed right after it was queued
            _, listing = run(ws, ["sh", "-c", "ls -A; ls notes; ls -A copied; test -L alias.md && echo link"], tmp_path)
            got.append(listing)
            run(ws, ["sh", "-c", "echo made > made.txt; ln -s README.md link.md; ln -s /etc/hostname out"], tmp_path)
            got += [ws.read_text("made.txt"), ws.read_text("link.md"), ws.glob("*.md"), ws.glob("out")]
            with pytest.raises(WorkspaceError, match="outside the workspace"):
                ws.read_text("out")
            with pytest.raises(WorkspaceError, match="outside the workspace"):
                ws.write_text("../escape.txt", "x")
            backend.destroy(ws, keep=False)
        finally:
            backend.close()
        answers.append(got)
    assert answers[0] == answers[1]
    assert answers[1][:3] == ["hello\n", None, None]
    assert answers[1][9].endswith("again.txt\nlink\n")
    assert answers[1][3:7] == [
        ["src/a.py"],
        ["README.md", "alias.md"],
        [".claude/skills/tool/SKILL.md"],
        [".claude/skills/tool/scripts"],
    ]


def test_timeouts_and_a_fork_bomb_in_copy_mode(
    copy_backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    task = load_task(factory.task("slow-copy", environment={"pids_limit": 40}))
    workspace = copy_backend.create(task, "exp-t/slow-CONTROL-r1")
    try:
        start = time.monotonic()
        result, out = run(
            workspace,
            ["bash", "-c", "sleep 301 & setsid sleep 302 & nohup sleep 303 >/dev/null 2>&1 & echo started; sleep 304"],
            tmp_path,
            timeout=1.5,
        )
        assert result.timed_out and result.exit_code is None and out == "started\n"
        assert time.monotonic() - start < 8
        _, table = run(workspace, ["ps", "-eo", "args"], tmp_path)
        assert "sleep 30" not in table
        first = workspace.container_id
        bomb, _ = run(workspace, ["bash", "-c", "f() { f | f & }; f; sleep 100"], tmp_path, timeout=2)
        assert bomb.timed_out and workspace.container_id == first
        after, out = run(workspace, ["sh", "-c", "ls Dockerfile; ps -e | grep -c bash || true"], tmp_path)
        assert (after.exit_code, out) == (0, "Dockerfile\n0\n")
    finally:
        copy_backend.destroy(workspace, keep=False)
    assert left_behind(copy_backend) == ([], [])


def test_a_replaced_container_keeps_the_files_in_copy_mode(
    copy_backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    workspace = copy_backend.create(load_task(factory.task("replace")), "exp-r/replace-CONTROL-r1")
    try:
        run(workspace, ["sh", "-c", "echo survived > note.txt"], tmp_path)
        first = workspace.container_id
        assert workspace.keeper is not None
        workspace.keeper.reset = lambda timeout=0.0: False  # type: ignore[method-assign]
        workspace.begin_validation(
            ValidationPolicy.STRICT
        )  # the keeper cannot answer: a fresh container on the same volume
        assert workspace.container_id != first
        assert workspace.read_text("note.txt") == "survived\n"
    finally:
        copy_backend.destroy(workspace, keep=False)
    assert left_behind(copy_backend) == ([], [])


def test_ctrl_c_in_copy_mode_leaves_no_container_and_no_volume(
    copy_backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    factory.task("interrupt-copy")
    runner = runner_for([factory.tasks_dir], factory, tmp_path, copy_backend, InterruptedAgent())
    with pytest.raises(KeyboardInterrupt):
        runner.run(Case("interrupt-copy", "CONTROL", 1))
    label = f"comet-eval.session={copy_backend.session.id}"
    # No drain: while an exception propagates the removal is synchronous.
    assert copy_backend.client.containers.list(all=True, filters={"label": label}, ignore_removed=True) == []
    assert copy_backend.client.volumes.list(filters={"label": label}) == []


def test_the_agent_cli_goes_into_a_read_only_volume(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path, docker_client: Any
) -> None:
    version = f"1.2.{uuid.uuid4().int % 100000}"
    cache = tmp_path / "agents"
    installed = cache / f"npm-scope-fake-agent-{version}"
    bin_dir = installed / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "fake-agent").write_text(f"#!/bin/sh\necho fake-agent {version}\n")
    (bin_dir / "fake-agent").chmod(0o755)
    (installed / ".complete").write_text(f"npm:@scope/fake-agent@{version}\n")
    spec = InstallSpec("npm", "fake-agent", "@scope/fake-agent", version)
    made = DockerBackend(tmp_path / "ws", agent_install=spec, agent_cache=cache, copy=True)
    try:
        task = load_task(factory.task("agent-copy"))
        for trial in (1, 2):  # the second container reuses the volume
            workspace = made.create(task, f"exp-a/agent-copy-CONTROL-r{trial}")
            result, out = run(workspace, ["fake-agent"], tmp_path)
            assert (result.exit_code, out) == (0, f"fake-agent {version}\n")
            denied, _ = run(workspace, ["touch", f"/opt/comet-agents/{installed.name}/x"], tmp_path)
            assert denied.exit_code != 0
            workspace.begin_validation(ValidationPolicy.STRICT)
            gone, _ = run(workspace, ["sh", "-c", "command -v fake-agent"], tmp_path)
            assert gone.exit_code != 0  # validation does not see the agent
            made.destroy(workspace, keep=False)
        assert left_behind(made) == ([], [])  # sweeps leave the shared agent volume alone
        assert docker_client.volumes.get(f"comet-agent-{installed.name}").attrs["Labels"]["comet-eval.agent"]
    finally:
        made.close()
        docker_client.volumes.get(f"comet-agent-{installed.name}").remove(force=True)


# --- the pieces ----------------------------------------------------------------------------------------


def test_tar_stream_keeps_modes_links_and_makes_root_the_owner(tmp_path: Path) -> None:
    folder = tmp_path / "skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("skill\n")
    (folder / "scripts" / "run.sh").write_text("echo\n")
    (folder / "scripts" / "run.sh").chmod(0o750)
    (folder / "alias.md").symlink_to("SKILL.md")
    (folder / "hard.md").hardlink_to(folder / "SKILL.md")
    data = b"".join(tar_stream([("skills/s", folder), ("note.txt", "é\n".encode())]))
    assert len(data) % 512 == 0
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert sorted(members) == [
            "note.txt",
            "skills/s",
            "skills/s/SKILL.md",
            "skills/s/alias.md",
            "skills/s/hard.md",
            "skills/s/scripts",
            "skills/s/scripts/run.sh",
        ]
        assert {(m.uid, m.gid, m.uname) for m in members.values()} == {(0, 0, "root")}
        assert members["skills/s/scripts/run.sh"].mode & 0o777 == 0o750
        assert members["skills/s/alias.md"].issym() and members["skills/s/alias.md"].linkname == "SKILL.md"
        assert members["skills/s/hard.md"].islnk() or members["skills/s/SKILL.md"].islnk()
        handle = archive.extractfile(members["note.txt"])
        assert handle is not None and handle.read() == "é\n".encode()


def test_extracting_a_kept_workspace_leaves_unsafe_members_out(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, kind, target in [
            ("workspace", tarfile.DIRTYPE, ""),
            ("workspace/ok.txt", tarfile.REGTYPE, ""),
            ("workspace/abs-link", tarfile.SYMTYPE, "/etc/passwd"),
            ("workspace/up-link", tarfile.SYMTYPE, "../../outside"),
            ("workspace/rel-link", tarfile.SYMTYPE, "ok.txt"),
            ("workspace/hard", tarfile.LNKTYPE, "workspace/ok.txt"),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            content = b"fine\n" if kind == tarfile.REGTYPE else b""
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    extract_workspace(iter([buffer.getvalue()]), tmp_path / "kept")
    kept = tmp_path / "kept"
    assert sorted(p.name for p in kept.iterdir()) == ["hard", "ok.txt", "rel-link"]
    assert (kept / "hard").read_text() == "fine\n" and (kept / "rel-link").read_text() == "fine\n"


def test_glob_matching_follows_path_glob(tmp_path: Path) -> None:
    root = tmp_path / "w"
    for rel in ("x.py", "a/y.py", "a/b/z.py", ".h/q.py", ".dot", "a/b/c/data.json", "docs/r.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / "link.py").symlink_to("x.py")
    # What the container's listing reports: every entry, folder or not (links to files count as files).
    entries = {p.relative_to(root).as_posix(): p.is_dir() for p in root.rglob("*")}
    host = HostFiles(root)
    for pattern in ("**/*.py", "*.py", "a/**", "*", "a/*/z.py", "**/b", ".*", "**/*.json", "docs/*.md", "[ax].py"):
        assert match_glob(pattern, entries) == host.glob(pattern), pattern
