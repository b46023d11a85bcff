"""pydantic's errors as the user reads them: the key as written in the file and a plain reason, never
pydantic's phrasing ("Input should be", "Value error,"), a model's class name or a union member's tag."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field, ValidationError, field_validator

from scaffold.util.schema import Model, NonEmptyStr, problems_from


class _Inner(Model):
    size: Annotated[int, Field(strict=True, gt=0)] = 1


class _Outer(Model):
    name: NonEmptyStr = "x"
    ratio: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.0
    flag: Annotated[bool, Field(strict=True)] = False
    mode: Literal["fast", "slow"] = "fast"
    names: tuple[Annotated[str, Field(strict=True)], ...] = Field(default=(), max_length=2)
    code: Annotated[str, Field(strict=True, pattern=r"^[A-Z]+$")] = "A"
    inner: _Inner = _Inner()
    optional: _Inner | None = None
    either: dict[str, Any] | Annotated[str, Field(strict=True)] = ""
    checked: str = ""

    @field_validator("checked")
    @classmethod
    def _no_x(cls, value: str) -> str:
        if "x" in value:
            raise ValueError("must not contain an x")
        return value


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ({"name": ""}, "name: must not be empty (got '')"),
        ({"name": 3}, "name: expected a string (got 3)"),
        ({"ratio": 2}, "ratio: expected a number at most 1 (got 2)"),
        ({"ratio": "x"}, "ratio: expected a number (got 'x')"),
        ({"flag": "yes"}, "flag: expected true or false (got 'yes')"),
        ({"mode": "medium"}, "mode: expected 'fast' or 'slow' (got 'medium')"),
        ({"names": "a"}, "names: expected a list (got 'a')"),
        ({"names": ["a", "b", "c"]}, "names: expected at most 2 entries (got ['a', 'b', 'c'])"),
        ({"code": "a"}, "code: does not have the allowed form (the regular expression ^[A-Z]+$) (got 'a')"),
        ({"inner": 3}, "inner: expected a mapping with keys size (got 3)"),
        ({"inner": {"size": 0}}, "inner.size: expected a number greater than 0 (got 0)"),
        ({"optional": [1]}, "optional: expected a mapping with keys size (got [1])"),
        ({"either": [1]}, "either: expected a mapping or a string (got [1])"),
        ({"checked": "xy"}, "checked: must not contain an x (got 'xy')"),
        (["not", "a", "mapping"], "expected a mapping with keys checked, code, either, flag, inner, mode, name, names, "
         "optional, ratio (got ['not', 'a', 'mapping'])"),
    ],
)  # fmt: skip
def test_each_kind_of_error_reads_plainly(data: Any, shown: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _Outer.model_validate(data)
    (problem,) = problems_from(caught.value, Path("f.yaml"), _Outer, sections=False)
    assert str(problem) == f"f.yaml: {shown}"
    for phrase in ("should", "Value error", "valid", "_Outer", "_Inner", "dict[", "str]"):
        assert phrase not in problem.message
