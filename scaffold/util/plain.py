"""Plain JSON data (dicts, lists, strings, numbers) from the typed values records are made of."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["plain"]


def plain(value: Any) -> Any:
    """*value* as builtins only: structs become dicts in field order, tuples become lists.

    ``msgspec.to_builtins`` keeps tuples as tuples; the JSON shape of a record has lists, and callers
    compare and extend the plain form as JSON, so tuples are turned into lists here. Floats stay as
    they are (NaN included): this is data, not its encoding.
    """
    return _lists(msgspec.to_builtins(value))


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(item) for item in value]
    return value
