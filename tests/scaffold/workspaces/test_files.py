"""HostFiles keeps every file operation inside its workspace folder, whatever path it is given."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.catalog.tasks import load_task
from scaffold.errors import WorkspaceError
from scaffold.workspaces.files import HostFiles, copy_tree
from scaffold.workspaces.local import LocalBackend
from tests.support.factories import TaskFactory

COMPONENTS = ["a", "b", "..", ".", "", "in_link", "out_link", "missing"]


def make_tree(base: Path) -> Path:
    root = base / "ws"
    (root / "a" / "b").mkdir(parents=True)
    (base / "outside").mkdir()
    (root / "in_link").symlink_to(root / "a")
    (root / "a" / "out_link").symlink_to(base / "outside")
    (root / "loop").symlink_to("loop")
    return root


def reference(root: Path, rel: str) -> Path | None:
    """What the workspace must answer: the fully resolved target, or None when it leaves the root."""
    target = Path(os.path.realpath(root / rel))
    real_root = Path(os.path.realpath(root))
    return target if target.is_relative_to(real_root) else None


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("files"))


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(COMPONENTS), max_size=6), absolute=st.booleans())
def test_inside_agrees_with_full_resolution(tree: Path, parts: list[str], absolute: bool) -> None:
    rel = ("/" if absolute else "") + "/".join(parts)
    expected = reference(tree, rel)
    files = HostFiles(tree)
    if expected is None:
        with pytest.raises(WorkspaceError, match="points outside the workspace"):
            files._inside(rel)
    else:
        assert Path(os.path.realpath(files._inside(rel))) == expected


def test_operations_refuse_escapes(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    files = HostFiles(root)
    for rel in ("../outside/x", "a/out_link/x", "/etc/passwd", "in_link/../../outside"):
        with pytest.raises(WorkspaceError):
            files.write_text(rel, "no")
    assert not (tmp_path / "outside" / "x").exists()
    files.write_text("in_link/b/ok.txt", "yes")
    assert (root / "a" / "b" / "ok.txt").read_text() == "yes"
    assert files.read_text("a/b/ok.txt") == "yes"


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from([*COMPONENTS, "loop"]), min_size=1, max_size=6))
def test_symlink_loops_never_crash_or_escape(tree: Path, parts: list[str]) -> None:
    """realpath gives up at a loop (what it returns then is not a resolution): still inside or refused."""
    rel = "/".join(parts)
    try:
        target = HostFiles(tree)._inside(rel)
    except WorkspaceError:
        return
    assert str(target).startswith(os.path.realpath(tree) + os.sep) or str(target) == os.path.realpath(tree)


def test_read_files_after_a_manifest_gives_the_files_current_bytes(tmp_path: Path) -> None:
    """The bytes a manifest read to hash a file serve the read that follows it only while the file is as
    listed: one rewritten, replaced by a link or removed in between is read again (or left out)."""
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    for name in ("same", "rewritten", "linked", "gone"):
        (root / "d" / name).write_text(f"{name} before\n")
    (root / "big").write_bytes(b"x" * (2 * 1024 * 1024))  # above what is kept: read from the disk
    files = HostFiles(root)
    manifest = files.manifest([], 100)
    assert sorted(manifest.files) == ["big", "d/gone", "d/linked", "d/rewritten", "d/same"]
    (root / "d" / "rewritten").write_text("rewritten after, longer\n")
    (root / "d" / "linked").unlink()
    (tmp_path / "outside").write_text("not the workspace's\n")
    (root / "d" / "linked").symlink_to(tmp_path / "outside")
    (root / "d" / "gone").unlink()
    wanted = ["d/same", "d/rewritten", "d/linked", "d/gone", "big"]
    assert files.read_files(wanted, 4 * 1024 * 1024) == {
        "d/same": b"same before\n",
        "d/rewritten": b"rewritten after, longer\n",
        "big": b"x" * (2 * 1024 * 1024),
    }
    # Kept bytes serve one read only: a second read looks at the disk again.
    (root / "d" / "same").write_text("same, later\n")
    assert files.read_files(["d/same"], 100) == {"d/same": b"same, later\n"}


def test_a_file_replaced_by_a_link_after_the_listing_is_not_hashed_through_it(tmp_path: Path) -> None:
    from scaffold.workspaces.files import _sha256

    (tmp_path / "secret").write_text("outside\n")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    assert _sha256(str(tmp_path / "link")) is None
    assert _sha256(str(tmp_path / "secret")) == hashlib.sha256(b"outside\n").hexdigest()


def test_read_and_write_text(tmp_path: Path) -> None:
    files = HostFiles(tmp_path)
    files.write_text("new/folder/a.txt", "é\n")  # its folders are made
    files.write_text("new/folder/a.txt", "x")  # and it is replaced, not appended to
    assert (tmp_path / "new" / "folder" / "a.txt").read_bytes() == b"x"
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\n")
    assert files.read_text("bad.txt") == "ok \ufffd\n"
    assert files.read_text("missing.txt") is None
    assert files.read_text("new") is None  # a folder
    assert files.read_text("new/folder/a.txt/below") is None


# --- copy_tree: what shutil.copytree(symlinks=True, dirs_exist_ok=True) gives, links in the way replaced ---

NAMES = st.sampled_from(["a", "b", "c.py", "été", "run.sh", ".hidden"])
KINDS = st.sampled_from(["file", "exec", "readonly", "empty", "big", "dir", "readonly-dir", "link", "dangling"])


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below *root* (and root itself): its kind, mode, modification time, bytes or link target."""
    out: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in ["", *dirs, *files]:
            path = Path(folder, name) if name else Path(folder)
            rel = path.relative_to(root).as_posix()
            if rel in out:
                continue
            info = path.lstat()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path), info.st_mtime_ns)
            elif path.is_dir():
                out[rel] = ("dir", oct(info.st_mode & 0o7777), info.st_mtime_ns)
            else:
                out[rel] = ("file", oct(info.st_mode & 0o7777), info.st_mtime_ns, path.read_bytes())
    return out


def build(root: Path, entries: list[tuple[list[str], str]]) -> None:
    """A tree from (path components, kind) pairs; read-only folders get their mode last."""
    root.mkdir()
    readonly: list[Path] = []
    for parts, kind in entries:
        path = root.joinpath(*parts)
        if path.parent != root and not path.parent.is_dir():
            continue  # its parent is a file or a link: this entry cannot exist
        if os.path.lexists(path):
            continue
        if kind in ("dir", "readonly-dir"):
            path.mkdir()
            (path / "inside.txt").write_text(f"in {path.name}\n")
            if kind == "readonly-dir":
                readonly.append(path)
        elif kind == "link":
            path.symlink_to("inside.txt" if len(parts) > 1 else "a")
        elif kind == "dangling":
            path.symlink_to("nowhere/at/all")
        else:
            data = {"empty": b"", "big": os.urandom(3 << 20)}.get(kind, f"{parts}\n".encode())
            path.write_bytes(data)
            path.chmod({"exec": 0o755, "readonly": 0o444}.get(kind, 0o640))
        os.utime(path, ns=(1_600_000_000_123_456_789, 1_600_000_000_987_654_321), follow_symlinks=False)
    for folder in reversed(readonly):
        folder.chmod(0o555)
        os.utime(folder, ns=(1_500_000_000_000_000_001, 1_500_000_000_000_000_002))


def writable(root: Path) -> None:
    for folder, _, _ in os.walk(root):
        Path(folder).chmod(0o755)


@settings(max_examples=40, deadline=None)
@given(entries=st.lists(st.tuples(st.lists(NAMES, min_size=1, max_size=3), KINDS), max_size=12))
def test_copy_tree_gives_what_shutil_copytree_gives(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[list[str], str]]
) -> None:
    base = tmp_path_factory.mktemp("copy")
    build(base / "source", entries)
    shutil.copytree(base / "source", base / "theirs", symlinks=True, dirs_exist_ok=True)
    (base / "mine").mkdir()
    copy_tree(base / "source", base / "mine")
    try:
        assert snapshot(base / "mine") == snapshot(base / "theirs")
    finally:
        for folder in ("source", "theirs", "mine"):
            writable(base / folder)


def test_copy_tree_merges_into_a_folder_and_overwrites_its_files(tmp_path: Path) -> None:
    source, dest = tmp_path / "source", tmp_path / "dest"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "f.txt").write_text("new\n")
    (dest / "sub").mkdir(parents=True)
    (dest / "sub" / "f.txt").write_text("old, and longer than the new one\n")
    (dest / "sub" / "kept.txt").write_text("kept\n")
    copy_tree(source, dest)
    assert (dest / "sub" / "f.txt").read_text() == "new\n"
    assert (dest / "sub" / "kept.txt").read_text() == "kept\n"


def test_copy_tree_replaces_links_in_the_way_instead_of_writing_through_them(tmp_path: Path) -> None:
    source, dest, outside = tmp_path / "source", tmp_path / "dest", tmp_path / "outside"
    (source / "scripts").mkdir(parents=True)
    (source / "check.py").write_text("print('harness')\n")
    (source / "scripts" / "run.sh").write_text("echo harness\n")
    (source / "link").symlink_to("check.py")
    outside.mkdir()
    (outside / "secret.txt").write_text("outside\n")
    (outside / "run.sh").write_text("outside\n")
    dest.mkdir()
    (dest / "check.py").symlink_to(outside / "secret.txt")  # an agent's planted links
    (dest / "scripts").symlink_to(outside)
    (dest / "link").mkdir()  # a folder where a link goes
    (dest / "link" / "x").write_text("x\n")
    copy_tree(source, dest)
    assert (outside / "secret.txt").read_text() == "outside\n"
    assert (outside / "run.sh").read_text() == "outside\n"
    assert not (dest / "check.py").is_symlink() and (dest / "check.py").read_text() == "print('harness')\n"
    assert not (dest / "scripts").is_symlink() and (dest / "scripts" / "run.sh").read_text() == "echo harness\n"
    assert os.readlink(dest / "link") == "check.py"


def test_copy_tree_refuses_a_special_file(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    os.mkfifo(source / "pipe")
    with pytest.raises(OSError, match="not a regular file"):
        copy_tree(source, tmp_path / "dest")


def _tree_with_links(root: Path, outside: Path) -> Path:
    """A folder of nested folders and files, with links to a file and a folder outside it."""
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "precious.txt").write_text("keep me")
    tree = root / "ws"
    for i in range(3):
        deep = tree / f"d{i}" / "inner"
        deep.mkdir(parents=True)
        for j in range(4):
            (deep / f"f{j}.txt").write_text(str(j))
        (tree / f"d{i}" / "top.txt").write_text("top")
    (tree / "to-folder").symlink_to(outside / "keep")
    (tree / "d0" / "to-file").symlink_to(outside / "keep" / "precious.txt")
    (tree / "dangling").symlink_to(tree / "nowhere")
    (tree / "d1" / "empty").mkdir()
    return tree


def test_the_local_backend_removes_a_workspace_and_follows_no_link_out_of_it(
    tmp_path: Path, factory: TaskFactory
) -> None:
    """A finished trial's folder goes in the background; links the agent left are removed, never followed."""
    backend = LocalBackend(tmp_path / "root")
    try:
        workspace = backend.create(load_task(factory.task("t")), "trial-1")
        shutil.rmtree(workspace.host_path)
        tree = _tree_with_links(tmp_path / "made", tmp_path / "outside")
        tree.rename(workspace.host_path)
        os.mkfifo(workspace.host_path / "d2" / "inner" / "fifo")  # a special file goes like any entry
        backend.destroy(workspace, keep=False)
        backend.drain()
        assert not os.path.lexists(workspace.host_path)
        assert (tmp_path / "outside" / "keep" / "precious.txt").read_text() == "keep me"
    finally:
        backend.close()
