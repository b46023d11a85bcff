"""scaffold.util.atomic.json_bytes gives json's indented bytes exactly: records and other state files stay the
same bytes they were when json wrote them (reports read them; byte-identical reports depend on it)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.util.atomic import json_bytes, write_json_atomic


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# Text without lone surrogates (UTF-8 cannot hold them; both ways refuse them, tested below), with the
# characters json escapes: quotes, backslashes, control characters, and the separators ", " and ": ".
_CHARS = st.characters(exclude_categories=("Cs",)) | st.sampled_from(
    ['"', "\\", "\x00", "\x1f", "\x7f", "\u2028", ",", ":"]
)
TEXT = st.lists(_CHARS | st.sampled_from([", ", ": ", "\\u0041"]), max_size=12).map("".join)
NUMBERS = (
    st.integers() | st.integers(min_value=-(10**40), max_value=10**40) | st.floats(allow_nan=True, allow_infinity=True)
)
SCALARS = st.none() | st.booleans() | NUMBERS | TEXT
KEYS = TEXT | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5) | st.tuples(inner, inner),
    max_leaves=30,
)


@settings(max_examples=400)
@given(VALUES)
def test_the_bytes_are_jsons_own(data: Any) -> None:
    assert json_bytes(data) == _json(data)


@pytest.mark.parametrize(
    "value",
    [1e16, 1e-7, 2.5e-5, -0.0, 5e-324, 1.5e300, 10**30, float("nan"), -math.inf, {}, [], "", {"a": [[], {}]}],
)
def test_numbers_keep_their_spelling(value: Any) -> None:
    # msgspec spells 1e-07 as 1e-7 when it encodes: here it only indents what json wrote.
    assert json_bytes({"v": value, "w": [value]}) == _json({"v": value, "w": [value]})


def test_what_json_refuses_is_refused_with_its_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_bytes({"a": object()})
    with pytest.raises(UnicodeEncodeError):
        json_bytes({"a": "\ud800"})


def test_write_json_atomic_writes_those_bytes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = {"trial": 3, "duration_s": 1e-06, "name": "é"}
    path = write_json_atomic(tmp_path / "r.json", data, durable=False)
    assert path.read_bytes() == _json(data)


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
