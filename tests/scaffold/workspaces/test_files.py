"""HostFiles keeps every file operation inside its workspace folder, whatever path it is given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.errors import WorkspaceError
from scaffold.workspaces.files import HostFiles

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
    assert _sha256(str(tmp_path / "link"), keep=True) == (None, None, None)
    assert _sha256(str(tmp_path / "secret"), keep=True)[1] == b"outside\n"


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
