"""Sandboxed paths: property tests that nothing accepted can leave its root, and that every escape is refused."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from comet_engine.errors import UnsafePathError
from comet_engine.stores.paths import check_run_id, resolve_under, safe_relative

ROOT = Path("/sandbox/root")
# Segments that are safe on their own: no separators, NUL, '..', leading '~' or drive-letter prefix.
SEGMENT = st.text(
    st.characters(blacklist_characters="/\\\0:~", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))
SEPARATOR = st.sampled_from(["/", "\\", "//", "/./"])


@st.composite
def joined(draw: st.DrawFn, segments: st.SearchStrategy[list[str]]) -> str:
    parts = draw(segments)
    text = parts[0]
    for part in parts[1:]:
        text += draw(SEPARATOR) + part
    return text


SAFE_PATHS = joined(st.lists(SEGMENT, min_size=1, max_size=6))


@given(SAFE_PATHS)
def test_safe_paths_are_accepted_and_stay_under_the_root(path: str) -> None:
    relative = safe_relative(path)
    assert not relative.is_absolute()
    assert ".." not in relative.parts
    assert list(relative.parts) == [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    assert os.path.normpath(ROOT / relative).startswith(str(ROOT) + "/")


@given(st.text(max_size=40))
@example("..")
@example("a/../../b")
@example("\\\\server\\share")
@example("c:\\windows")
@example("~/.ssh")
def test_any_text_is_either_refused_or_confined(text: str) -> None:
    """The core property: whatever the input, an accepted path normalises to a place inside the root."""
    try:
        relative = safe_relative(text)
    except UnsafePathError as err:
        assert "path" in str(err)
        return
    assert isinstance(relative, PurePosixPath)
    assert os.path.normpath(ROOT / relative).startswith(str(ROOT) + "/")


@given(st.lists(SEGMENT, max_size=3), st.lists(SEGMENT, max_size=3), SEPARATOR)
def test_dotdot_anywhere_is_refused(before: list[str], after: list[str], separator: str) -> None:
    path = separator.join([*before, "..", *after])
    with pytest.raises(UnsafePathError, match=r"'\.\.'"):
        safe_relative(path)


@given(SAFE_PATHS, st.sampled_from(["/", "\\", "//", "\\\\", "~", "~user/", "C:", "c:\\", "Z:/"]))
def test_absolute_home_and_drive_prefixes_are_refused(path: str, prefix: str) -> None:
    with pytest.raises(UnsafePathError):
        safe_relative(prefix + path)


def test_messages_name_the_path_and_the_fix() -> None:
    with pytest.raises(UnsafePathError, match=r"artifact '/etc/passwd' is absolute; use a path relative"):
        safe_relative("/etc/passwd", "artifact")
    with pytest.raises(UnsafePathError, match="NUL"):
        safe_relative("a\0b")
    with pytest.raises(UnsafePathError, match="empty"):
        safe_relative("./")


def test_resolve_under_refuses_a_symlink_that_leaves_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (root / "inner").symlink_to(root / "sub")
    assert resolve_under(root, "sub/file.txt") == root / "sub" / "file.txt"
    assert resolve_under(root, "inner/file.txt") == root / "inner" / "file.txt"
    with pytest.raises(UnsafePathError, match="symbolic link"):
        resolve_under(root, "escape/file.txt")


@given(SEGMENT)
def test_single_segments_are_valid_run_ids(segment: str) -> None:
    if len(segment) <= 200 and all(ord(c) >= 32 for c in segment):
        assert check_run_id(segment) == segment


@pytest.mark.parametrize("run_id", ["a/b", "a\\b", "./a", "a/", "x:y", "line\nbreak", "a" * 201])
def test_run_ids_must_be_one_plain_name(run_id: str) -> None:
    with pytest.raises(UnsafePathError, match="run id"):
        check_run_id(run_id)
