"""A fresh copy's first manifest takes the digests of files it copied from the cache of their sources,
and never where the file, its source or the workspace has changed since (scaffold.workspaces.fresh_copies)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from scaffold.catalog.tasks import load_task
from scaffold.workspaces import files, fresh_copies
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.files import HostFiles, fresh_copy, host_manifest
from scaffold.workspaces.fresh_copies import Copied
from scaffold.workspaces.local import LocalBackend
from tests.support.factories import TaskFactory


def count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files manifests hash by reading them from now on, in order."""
    seen: list[str] = []
    real = files._sha256

    def counting(path: str, **kwargs: bool) -> tuple[str | None, bytes | None, fresh_copies.Identity | None]:
        seen.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(files, "_sha256", counting)
    return seen


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return count_hashing(monkeypatch)


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources count as settled as soon as they are written (the tests need not wait 2 s)."""
    monkeypatch.setattr(fresh_copies, "SETTLED_NS", 0)


def source_tree(root: Path) -> Path:
    src = root / "env"
    (src / "pkg").mkdir(parents=True)
    (src / "README.md").write_text("# readme\n")
    (src / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (src / "pkg" / "big.bin").write_bytes(os.urandom(files.KEEP_LIMIT + 10))  # digest only, no bytes kept
    (src / "pkg" / "link.py").symlink_to("mod.py")
    return src


def copy_of(src: Path, dest: Path) -> HostFiles:
    copied = Copied()
    fresh_copy(src, dest, copied=copied)
    folder = HostFiles(dest)
    folder.copied = copied
    return folder


def digests(folder: Path) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def manifest_digests(folder: HostFiles) -> dict[str, str | None]:
    found = folder.manifest((), 1000).files
    return {path: state.digest for path, state in found.items() if state.link is None}


def test_a_second_copy_of_settled_files_is_not_read_again(
    tmp_path: Path, reads: list[str], settled_at_once: None
) -> None:
    src = source_tree(tmp_path)
    first = copy_of(src, tmp_path / "ws1")
    assert manifest_digests(first) == digests(tmp_path / "ws1")
    assert sorted(reads) == ["README.md", "big.bin", "mod.py"]
    reads.clear()
    second = copy_of(src, tmp_path / "ws2")
    found = second.manifest((), 1000)
    assert reads == []
    assert {p: s.digest for p, s in found.files.items() if s.link is None} == digests(tmp_path / "ws2")
    assert found.files["pkg/link.py"].link == "mod.py"
    # The small files' bytes come along for the snapshot's texts, as when they are read.
    texts = second.read_files(["README.md", "pkg/mod.py"], 1000)
    assert texts == {"README.md": b"# readme\n", "pkg/mod.py": b"VALUE = 1\n"}


def test_a_source_changed_keeping_its_size_and_time_is_hashed_again(
    tmp_path: Path, reads: list[str], settled_at_once: None
) -> None:
    src = source_tree(tmp_path)
    manifest_digests(copy_of(src, tmp_path / "ws1"))
    target = src / "pkg" / "mod.py"
    before = target.stat()
    target.write_text("VALUE = 2\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same time: only ctime differs
    reads.clear()
    second = copy_of(src, tmp_path / "ws2")
    assert manifest_digests(second) == digests(tmp_path / "ws2")
    assert reads == ["mod.py"]


def test_a_source_not_yet_settled_is_not_cached(tmp_path: Path, reads: list[str]) -> None:
    src = source_tree(tmp_path)  # written just now: within SETTLED_NS
    manifest_digests(copy_of(src, tmp_path / "ws1"))
    reads.clear()
    manifest_digests(copy_of(src, tmp_path / "ws2"))
    assert sorted(reads) == ["README.md", "big.bin", "mod.py"]


def test_what_the_harness_writes_after_the_copy_is_hashed(
    tmp_path: Path, reads: list[str], settled_at_once: None
) -> None:
    src = source_tree(tmp_path)
    manifest_digests(copy_of(src, tmp_path / "ws1"))
    second = copy_of(src, tmp_path / "ws2")
    original = (tmp_path / "ws2" / "pkg" / "mod.py").stat()
    second.write_text("pkg/mod.py", "VALUE = 3\n")  # same size; its time set back below
    os.utime(tmp_path / "ws2" / "pkg" / "mod.py", ns=(original.st_atime_ns, original.st_mtime_ns))
    second.put(src / "README.md", "README.md")
    # What the harness wrote is no longer taken as copied (a write within the clock tick of the copy would
    # keep the file's change time), and what it did not touch still is.
    assert second.copied is not None and sorted(second.copied.files) == ["pkg/big.bin"]
    reads.clear()
    assert manifest_digests(second) == digests(tmp_path / "ws2")
    assert sorted(reads) == ["README.md", "mod.py"]
    second.remove("pkg")
    assert second.copied.files == {}


def test_after_the_first_command_every_file_is_hashed(
    factory: TaskFactory, tmp_path: Path, reads: list[str], settled_at_once: None
) -> None:
    task = load_task(factory.task("t1", files={"data.txt": "one\n", "sub/keep.txt": "same\n"}))
    backend = LocalBackend(tmp_path / "ws")
    try:
        first = backend.create(task, "trial-1")
        listed_digests(first)  # caches the sources
        second = backend.create(task, "trial-2")
        reads.clear()
        assert listed_digests(second) == digests(second.host_path)
        assert "data.txt" not in reads
        # A command rewrites a copied file with the same size and sets its time back, at once: the notes
        # are gone before it runs, so the file is read and its new digest listed.
        stamp = (second.host_path / "data.txt").stat().st_mtime_ns
        script = f"printf 'two\\n' > data.txt && touch -d @{stamp // 10**9}.{stamp % 10**9:09d} data.txt"
        result = second.exec(
            ["bash", "-c", script],
            timeout=30,
            env={},
            stdout_path=tmp_path / "out.log",
            stderr_path=tmp_path / "err.log",
        )
        assert result.exit_code == 0, (tmp_path / "err.log").read_text()
        assert (second.host_path / "data.txt").stat().st_mtime_ns == stamp
        reads.clear()
        assert listed_digests(second) == digests(second.host_path)
        assert sorted(reads) == ["Dockerfile", "data.txt", "keep.txt"]
    finally:
        backend.close()


def listed_digests(workspace: Workspace) -> dict[str, str | None]:
    return {path: state.digest for path, state in workspace.manifest((), 100).files.items()}


def test_a_copy_whose_source_changed_while_copied_is_not_noted(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    before = (tmp_path / "a").stat()
    (tmp_path / "a").write_text("y")
    after = (tmp_path / "a").stat()
    copied = Copied()
    copied.note("a", after, str(tmp_path / "a"), before, after)
    assert copied.files == {}
    copied.note("a", after, str(tmp_path / "a"), after, after)
    assert copied.source("a", fresh_copies.identity(after)) == (str(tmp_path / "a"), fresh_copies.identity(after))


def test_forgetting_a_folder_drops_what_is_below_it_only() -> None:
    copied = Copied()
    ident = (1, 2, 3, 4)
    for rel in ("pkg/a", "pkg/sub/b", "pkgx/c", "top"):
        copied.files[rel] = (ident, rel, ident)
    copied.forget("./pkg/")
    assert sorted(copied.files) == ["pkgx/c", "top"]
    copied.forget("pkgx/../top")  # not resolved here: everything goes
    assert copied.files == {}


def test_host_manifest_without_notes_reads_every_file(tmp_path: Path, reads: list[str], settled_at_once: None) -> None:
    src = source_tree(tmp_path)
    manifest_digests(copy_of(src, tmp_path / "ws1"))
    reads.clear()
    fresh_copy(src, tmp_path / "ws2")
    found = host_manifest(tmp_path / "ws2", (), 100)
    assert {p: s.digest for p, s in found.files.items() if s.link is None} == digests(tmp_path / "ws2")
    assert sorted(reads) == ["README.md", "big.bin", "mod.py"]
