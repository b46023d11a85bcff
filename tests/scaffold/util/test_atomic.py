"""scaffold.util.atomic: files of state written whole or not at all, and JSON as they hold it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold.util.atomic import json_bytes, write_json_atomic


def test_what_json_refuses_is_refused_with_its_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_bytes({"a": object()})
    with pytest.raises(UnicodeEncodeError):
        json_bytes({"a": "\ud800"})


def test_write_json_atomic_writes_indented_utf8_json_in_key_order(tmp_path: Path) -> None:
    data = {"trial": 3, "duration_s": 1e-06, "name": "é", "a": [1, {}]}
    path = write_json_atomic(tmp_path / "r.json", data, durable=False)
    expected = '{\n  "trial": 3,\n  "duration_s": 1e-06,\n  "name": "é",\n  "a": [\n    1,\n    {}\n  ]\n}\n'
    assert path.read_bytes() == expected.encode("utf-8")


def test_atomic_writes_leave_no_temporary_file_and_set_the_mode(tmp_path: Path) -> None:
    from scaffold.util.atomic import write_bytes_atomic, write_text_atomic

    long_name = "r" * 250 + ".json"  # the longest a name may be: the temporary file's must fit too
    write_bytes_atomic(tmp_path / "new" / "deeper" / long_name, b"{}\n", mode=0o640)
    write_text_atomic(tmp_path / "new" / "pieces.txt", ["a", "b", "c"], durable=False)
    write_bytes_atomic(tmp_path / "new" / "pieces.txt", b"replaced\n")
    assert (tmp_path / "new" / "deeper" / long_name).read_bytes() == b"{}\n"
    assert (tmp_path / "new" / "deeper" / long_name).stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "new" / "pieces.txt").read_text() == "replaced\n"
    assert sorted(p.name for p in (tmp_path / "new").rglob("*") if p.name.startswith(".")) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    from scaffold.util.atomic import write_text_atomic

    target = tmp_path / "state.txt"
    write_text_atomic(target, "old\n")

    def pieces() -> Iterator[str]:
        yield "half"
        raise RuntimeError("the renderer failed")

    with pytest.raises(RuntimeError, match="renderer failed"):
        write_text_atomic(target, pieces())
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["state.txt"]
