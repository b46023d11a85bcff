"""The skill snapshot the task generator reads: its bounds, what it includes and skips, and its hash."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.skill_eval.snapshot import MAX_BYTES, MAX_FILES, SkillSnapshotError, take_snapshot

_NAMES = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
_FILES = st.dictionaries(
    st.tuples(st.sampled_from(["scripts", "references", "templates", "examples", "other"]), _NAMES),
    st.integers(min_value=0, max_value=40_000),
    max_size=40,
)


def _write_skill(root: Path, files: dict[tuple[str, str], int], order: list[tuple[str, str]] | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text('# Skill\nUse `templates/a.md` and "scripts/run.py".\n')
    for folder, name in order or list(files):
        path = root / folder / f"{name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{folder}/{name}\n" + "x" * files[(folder, name)])


@settings(max_examples=30, deadline=None)
@given(files=_FILES, max_files=st.integers(1, MAX_FILES), max_bytes=st.integers(100, MAX_BYTES))
def test_bounds_hold_and_only_snapshot_folders_are_read(
    files: dict[tuple[str, str], int], max_files: int, max_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skill"
        _write_skill(root, files)
        snap = take_snapshot(root, max_files=max_files, max_bytes=max_bytes)
        assert len(snap.files) <= max_files
        assert snap.size <= max_bytes or [f.path for f in snap.files] == []
        assert all(not f.path.startswith("other/") for f in snap.files)
        kept = {f.path for f in snap.files}
        expected = {f"{d}/{n}.txt" for d, n in files if d != "other"} | {"SKILL.md"}
        assert kept | set(snap.skipped) == expected  # every candidate is kept or named as skipped


@settings(max_examples=25, deadline=None)
@given(files=_FILES, data=st.data())
def test_hash_is_stable_under_creation_order_and_mtimes(files: dict[tuple[str, str], int], data: st.DataObject) -> None:
    order = data.draw(st.permutations(list(files)))
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a" / "skill", Path(tmp) / "b" / "skill"
        _write_skill(a, files)
        _write_skill(b, files, order=list(order))
        for path in b.rglob("*"):
            os.utime(path, (1_000_000, 1_000_000))
        assert take_snapshot(a).hash == take_snapshot(b).hash
        assert take_snapshot(a).hash == take_snapshot(a).hash


@settings(max_examples=25, deadline=None)
@given(files=_FILES.filter(lambda f: any(d != "other" for d, _ in f)), extra=st.text(min_size=1, max_size=20))
def test_hash_changes_with_any_kept_content(files: dict[tuple[str, str], int], extra: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skill"
        _write_skill(root, files)
        before = take_snapshot(root)
        victim = root / before.files[-1].path
        victim.write_text(victim.read_text() + extra)
        assert take_snapshot(root).hash != before.hash


def test_quoted_files_symlinks_and_own_artifacts(tmp_path: Path) -> None:
    root = tmp_path / "skill"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "guide.md").write_text("guide\n")
    (root / "SKILL.md").write_text("Read `notes/guide.md`, 'missing.md', \"../outside.txt\" and `.comet/eval/x`.\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "link.py").symlink_to(tmp_path / "outside.txt")
    (root / "templates").symlink_to(tmp_path, target_is_directory=True)
    (root / ".comet" / "eval").mkdir(parents=True)
    (root / ".comet" / "eval" / "x").write_text("cache\n")
    (root / "scripts" / "binary.bin").write_bytes(b"\xff\xfe\x00")
    snap = take_snapshot(root)
    assert [f.path for f in snap.files] == ["SKILL.md", "notes/guide.md"]
    assert snap.skipped == ("scripts/binary.bin",)
    assert snap.hash.startswith("sha256:") and all(f.sha256.startswith("sha256:") for f in snap.files)


def test_no_skill_md_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SkillSnapshotError, match=r"SKILL\.md"):
        take_snapshot(tmp_path)


def test_modules_skill_md_imports_are_read_with_the_modules_they_import(tmp_path: Path) -> None:
    """A skill whose code lives outside the usual folders (slack-gif-creator's ``core/*.py``), imported as
    modules: the generator sees that code, not SKILL.md alone; modules outside the skill are not sought."""
    root = tmp_path / "skill"
    (root / "core").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "SKILL.md").write_text(
        "# GIFs\n\n```python\nimport json\nfrom core.gif_builder import GIFBuilder\nfrom core import easing\n```\n\n"
        "Check a file with `python3 -m tools.check out.gif`.\n"
    )
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "gif_builder.py").write_text("from .frames import Frame\nimport numpy\n\nclass GIFBuilder: ...\n")
    (root / "core" / "frames.py").write_text("class Frame: ...\n")
    (root / "core" / "easing.py").write_text("def ease(t): return t\n")
    (root / "core" / "unused.py").write_text("# nobody imports this\n")
    (root / "tools" / "check.py").write_text("print('ok')\n")
    kept = [f.path for f in take_snapshot(root).files]
    assert kept[0] == "SKILL.md"
    assert set(kept) == {
        "SKILL.md",
        "core/__init__.py",
        "core/gif_builder.py",
        "core/easing.py",
        "core/frames.py",
        "tools/check.py",
    }


def test_the_generator_prompt_states_the_environment(tmp_path: Path) -> None:
    from scaffold.skill_eval.prompt import generator_prompt

    root = tmp_path / "skill"
    root.mkdir()
    (root / "SKILL.md").write_text("# S\n")
    prompt = generator_prompt(take_snapshot(root), skill_name="s", profile=None, previous_error=None)
    assert "no internet" in prompt and "Python 3 with its standard library only" in prompt
    assert "nothing can be installed" in prompt
