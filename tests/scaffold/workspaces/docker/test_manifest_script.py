"""The container manifest's shell script (scaffold.workspaces.docker.manifest), run with this machine's
/bin/sh on a host folder: it must list exactly what the host walk (scaffold.workspaces.files) lists, so
both backends report the same changes. No engine needed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scaffold.workspaces.docker.manifest import _SCRIPT, parse_manifest
from scaffold.workspaces.files import host_manifest


def script_manifest(root: Path, exclude: list[str], limit: int) -> object:
    done = subprocess.run(["/bin/sh", "-c", _SCRIPT, str(root), str(limit), *exclude], capture_output=True, check=True)
    text = done.stdout.decode("utf-8", "surrogateescape")
    assert text.startswith("A sha256sum\n") and text.endswith("E\n")
    return parse_manifest(text, limit)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "deep.txt").write_text("deep\n")
    (root / "a b.txt").write_text("spaces\n")
    (root / "back\\slash.txt").write_text("a backslash in the name\n")
    (root / "a.b").write_text("sorts before a/\n")
    (root / "a").mkdir()
    (root / "a" / "x").write_text("x\n")
    (root / "script.sh").write_text("echo\n")
    (root / "script.sh").chmod(0o755)
    (root / "link").symlink_to("d/e/deep.txt")
    (root / "dangling").symlink_to("/nowhere/at/all")
    (root / "line\nbreak").write_text("left out by both\n")
    (root / ".eval-validation").mkdir()
    (root / ".eval-validation" / "check.py").write_text("pass\n")
    (root / "_test_context.json").write_text("{}\n")
    return root


def test_the_script_lists_what_the_host_walk_lists(tree: Path) -> None:
    exclude = [".eval-validation", "_test_context.json"]
    listed = script_manifest(tree, exclude, 100)
    walked = host_manifest(tree, exclude, 100)
    assert listed == walked
    assert list(walked.files) == [
        "a b.txt",
        "a.b",
        "a/x",
        "back\\slash.txt",
        "d/e/deep.txt",
        "dangling",
        "link",
        "script.sh",
    ]
    assert walked.files["script.sh"].mode == 0o755 and walked.files["link"].link == "d/e/deep.txt"
    assert walked.files["dangling"].size == len("/nowhere/at/all") and walked.files["dangling"].digest is None


@pytest.mark.parametrize("limit", [0, 3, 8])
def test_both_cut_at_the_same_files(tree: Path, limit: int) -> None:
    listed, walked = script_manifest(tree, [], limit), host_manifest(tree, [], limit)
    assert listed == walked and len(walked.files) == limit and walked.truncated
