"""What the agent changed (scaffold.trial.changes) on the docker backend, in each of its modes: bind mounts,
copy mode (the files only in the container), and a Harbor task's native WORKDIR, also in an image without
``sha256sum`` (the manifest's script then takes another checksum tool).

Needs ``DOCKER_HOST``, like tests/scaffold/workspaces/docker/test_docker_backend.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold.agents.oracle import OracleAgent
from scaffold.catalog.tasks import load_catalog, load_task
from scaffold.catalog.treatments import CONTROL, TASK_SKILLS_PLACEHOLDER, load_treatments
from scaffold.experiment import CHANGES_FILE, Experiment
from scaffold.experiment.cases import Case
from scaffold.records import ChangeCounts
from scaffold.trial.changes import TEXT_LIMIT, capture, changes
from scaffold.trial.runner import Runner, Settings
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.docker import DockerBackend
from scaffold.workspaces.docker.manifest import container_manifest
from scaffold.workspaces.files import host_manifest
from tests.scaffold.validation.test_harbor_docker import harbor_task
from tests.support.factories import TaskFactory

pytestmark = pytest.mark.docker


@pytest.fixture(params=[False, True], ids=["bind", "copy"])
def backend(request: pytest.FixtureRequest, docker_base_image: str, tmp_path: Path) -> Iterator[DockerBackend]:
    made = DockerBackend(tmp_path / "ws", copy=request.param)
    yield made
    made.close()


def sh(workspace: Workspace, script: str, tmp_path: Path) -> str:
    result = workspace.exec(
        ["sh", "-c", script], timeout=60, env={}, stdout_path=tmp_path / "o.log", stderr_path=tmp_path / "e.log"
    )
    assert result.exit_code == 0, result.stderr()
    return result.stdout()


def test_changes_in_a_container_in_bind_and_copy_mode(
    backend: DockerBackend, factory: TaskFactory, tmp_path: Path
) -> None:
    folder = factory.task(
        "project", files={"src/app.py": "x = 1\n", "gone.txt": "old\n", "run.sh": "echo hi\n", "same.txt": "s\n"}
    )
    (folder / "environment" / "blob.bin").write_bytes(b"\x00\x01")
    workspace = backend.create(load_task(folder), "exp/changes")
    try:
        workspace.write_text(".claude/skills/s/SKILL.md", "Use it.\n")  # installed before the agent
        before = capture(workspace)
        assert before.error is None and "blob.bin" in before.binary and before.texts["src/app.py"] == "x = 1\n"
        sh(
            workspace,
            "echo 'x = 2' > src/app.py; rm gone.txt; mkdir -p 'new dir'; echo hi > 'new dir/a b.txt';"
            f" printf '\\000\\002' > blob.bin; head -c {TEXT_LIMIT + 1} /dev/zero > big.bin; chmod 755 run.sh;"
            " ln -s src/app.py link; echo more >> .claude/skills/s/SKILL.md; echo secret > only-root.txt;"
            " chmod 600 only-root.txt; mkdir -p .eval-validation; echo v > .eval-validation/x;"
            " echo c > _test_context.json;"
            " echo out > /tmp/outside.txt; echo home > /root/home.txt",
            tmp_path,
        )
        found = changes(workspace, before)
    finally:
        backend.destroy(workspace, keep=False)
    assert found.error is None and found.root == "/workspace"
    files = {f.path: f for f in found.files}
    assert list(files) == [
        ".claude/skills/s/SKILL.md",
        "big.bin",
        "blob.bin",
        "gone.txt",
        "link",
        "new dir/a b.txt",
        "only-root.txt",
        "run.sh",
        "src/app.py",
    ]
    assert found.counts == ChangeCounts(added=4, modified=4, deleted=1)
    assert files["src/app.py"].diff == "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert files["gone.txt"].diff == "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
    assert files["new dir/a b.txt"].diff == "--- /dev/null\n+++ b/new dir/a b.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert files["only-root.txt"].diff == "--- /dev/null\n+++ b/only-root.txt\n@@ -0,0 +1 @@\n+secret\n"
    assert (files["blob.bin"].binary, files["blob.bin"].omitted) == (True, "binary")
    assert (files["big.bin"].size, files["big.bin"].omitted, files["big.bin"].diff) == (
        TEXT_LIMIT + 1,
        "too large",
        None,
    )
    assert files["run.sh"].diff == "old mode 100644\nnew mode 100755\n"
    assert files["link"].diff == "--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+src/app.py\n\\ No newline at end of file\n"
    assert "+more\n" in (files[".claude/skills/s/SKILL.md"].diff or "")


def test_many_files_are_read_as_one_archive(backend: DockerBackend, factory: TaskFactory, tmp_path: Path) -> None:
    files = {f"f{i:02d}.txt": f"{i}\n" for i in range(20)}
    workspace = backend.create(load_task(factory.task("many", files=files)), "exp/many")
    try:
        before = capture(workspace)
        assert {k: before.texts.get(k) for k in files} == files
        sh(workspace, "for f in f*.txt; do echo changed >> $f; done", tmp_path)
        found = changes(workspace, before)
    finally:
        backend.destroy(workspace, keep=False)
    assert found.counts.modified == 20 and all((f.diff or "").endswith("+changed\n") for f in found.files)


def _harbor_run(tmp_path: Path, name: str, dockerfile: str, solve: str) -> tuple[Any, dict[str, Any]]:
    harbor_task(
        tmp_path / "tasks",
        name,
        dockerfile=dockerfile,
        solve_sh=solve,
        test_sh="mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n",
    )
    backend = DockerBackend(tmp_path / "ws")
    runner = Runner(
        load_catalog([tmp_path / "tasks"]),
        load_treatments([]).with_treatment(TASK_SKILLS_PLACEHOLDER),
        Experiment.under(tmp_path / "logs", f"e-{name}"),
        Settings(backend="docker", agent="oracle"),
        backend,
        OracleAgent(),
    )
    try:
        result = runner.run(Case(name, CONTROL, 1))
    finally:
        backend.close()
    return result.record, json.loads((result.record_path.parent / CHANGES_FILE).read_text())


@pytest.mark.parametrize("without_sha256sum", [False, True], ids=["sha256sum", "cksum"])
def test_a_harbor_task_lists_its_workdir_only(docker_base_image: str, tmp_path: Path, without_sha256sum: bool) -> None:
    dockerfile = "RUN printf 'a\\n' > /app/keep.txt && printf 'b\\n' > /app/edit.txt\n"
    if without_sha256sum:
        dockerfile += "RUN rm /usr/bin/sha256sum /usr/bin/md5sum\n"
    record, data = _harbor_run(
        tmp_path,
        "native-cksum" if without_sha256sum else "native",
        dockerfile,
        "echo b2 >> /app/edit.txt\necho new > /app/new.txt\nmkdir -p /logs/agent && echo l > /logs/agent/x\n"
        "echo t > /tmp/t.txt\necho r > /root/r.txt\n",
    )
    assert record.verdict == "passed", (record.errors, record.checks)
    assert data["root"] == "/app" and "error" not in data
    assert [(f["path"], f["status"]) for f in data["files"]] == [("edit.txt", "modified"), ("new.txt", "added")]
    assert data["files"][0]["diff"] == "--- a/edit.txt\n+++ b/edit.txt\n@@ -1 +1,2 @@\n b\n+b2\n"
    assert record.changes == ChangeCounts(added=1, modified=1)


def test_in_bind_mode_the_container_lists_what_the_host_walk_lists(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    """As root, the harness walks a bind-mounted folder itself; otherwise the container lists it: the same."""
    backend = DockerBackend(tmp_path / "ws", copy=False)
    workspace = backend.create(load_task(factory.task("walk", files={"a.txt": "a\n"})), "exp/walk")
    try:
        sh(workspace, "mkdir -p d/e; echo x > d/e/f; chmod 640 d/e/f; ln -s d link; echo y > 'sp ace'", tmp_path)
        exclude = [".eval-validation", "d/e/nothing"]
        listed = container_manifest(backend.client.api, workspace.container_id or "", workspace.root, exclude, 100)
        walked = host_manifest(workspace.host_path, exclude, 100)
    finally:
        backend.destroy(workspace, keep=False)
        backend.close()
    assert listed == walked and {"a.txt", "d/e/f", "link", "sp ace"} <= set(walked.files)
    assert walked.files["d/e/f"].mode == 0o640 and walked.files["link"].link == "d"


def test_a_rewrite_of_the_same_size_with_its_time_set_back_is_seen(
    docker_base_image: str, factory: TaskFactory, tmp_path: Path
) -> None:
    task = load_task(factory.task("rewritten", files={"data.txt": "one\n", "keep.txt": "same\n"}))
    backend = DockerBackend(tmp_path / "ws", copy=False)
    try:
        workspace = backend.create(task, "exp/one")
        before = capture(workspace)
        assert before.texts["data.txt"] == "one\n"
        assert workspace.host_path is not None
        stamp = (workspace.host_path / "data.txt").stat().st_mtime_ns
        sh(
            workspace,
            f"printf 'two\\n' > data.txt && touch -d @{stamp // 10**9}.{stamp % 10**9:09d} data.txt",
            tmp_path,
        )
        assert (workspace.host_path / "data.txt").stat().st_mtime_ns == stamp
        found = changes(workspace, before)
        assert [(f.path, f.status) for f in found.files] == [("data.txt", "modified")]
        backend.destroy(workspace, keep=False)
    finally:
        backend.close()
