"""Validation at the file boundary: pydantic models for input files, errors turned into Problems.

Models here are strict about scalars (a string where an int belongs is an error, and so is a bool
where an int belongs) and forbid unknown keys, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scaffold.errors import Problem

__all__ = [
    "YAML_MAX_CHARS",
    "YAML_MAX_DEPTH",
    "YAML_MAX_NODES",
    "Model",
    "NonEmptyStr",
    "PositiveNumber",
    "Seconds",
    "StrList",
    "YamlLimitError",
    "check_yaml_limits",
    "load_yaml",
    "problems_from",
    "yaml_problem",
]

# libyaml's loader when PyYAML was built with it: ten times faster on large index files.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

YAML_MAX_CHARS = 8 * 1024 * 1024
"""The longest YAML file the harness reads (tasks, index, treatments, manifests, adapters, scripts)."""
YAML_MAX_DEPTH = 100
"""The deepest nesting of mappings and sequences: libyaml's composer recurses in C, and 50,000 nested
brackets crash the process."""
YAML_MAX_NODES = 1_000_000
"""The most nodes a document may hold with every alias expanded: a few lines of aliases of aliases
(an alias bomb) otherwise become billions of nodes for whatever walks the loaded value."""


class YamlLimitError(yaml.YAMLError):
    """A YAML document past one of the limits above; the message says which."""


def load_yaml(text: str) -> Any:
    """Parse YAML safely (no arbitrary objects, within the limits above); raises ``yaml.YAMLError``
    (YamlLimitError past a limit)."""
    check_yaml_limits(text)
    return yaml.load(text, Loader=_YAML_LOADER)


def check_yaml_limits(text: str) -> None:
    """Raise YamlLimitError when *text* is too long, nested too deep or expands to too many nodes; read
    as a stream of parser events (an explicit stack in libyaml: no recursion), before anything is built."""
    if len(text) > YAML_MAX_CHARS:
        raise YamlLimitError(f"longer than {YAML_MAX_CHARS:,} characters")
    expanded = 0
    sizes: dict[str, int] = {}  # anchor -> the nodes its value expands to
    open_nodes: list[tuple[int, str | None]] = []  # each open collection: expanded before it, its anchor
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= YAML_MAX_DEPTH:
                raise YamlLimitError(f"nested deeper than {YAML_MAX_DEPTH} levels")
            open_nodes.append((expanded, event.anchor))
            expanded += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            start, anchor = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = expanded - start
        elif isinstance(event, yaml.ScalarEvent):
            expanded += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            expanded += sizes.get(event.anchor or "", 1)
        if expanded > YAML_MAX_NODES:
            raise YamlLimitError(f"expands to more than {YAML_MAX_NODES:,} nodes (aliases of aliases)")


def yaml_problem(file: Path, exc: yaml.YAMLError | UnicodeDecodeError) -> Problem:
    """The Problem of a file that does not parse: the line and column where the parser stopped (as its
    key, so the message reads ``FILE: line 3, column 9: not valid YAML: ...``) and what it found there."""
    if isinstance(exc, UnicodeDecodeError):
        return Problem(file, f"not valid YAML: not UTF-8 text (byte {exc.start} cannot be decoded)")
    mark = getattr(exc, "problem_mark", None)
    line, column = getattr(mark, "line", None), getattr(mark, "column", None)  # libyaml's Mark is its own type
    if not isinstance(line, int) or not isinstance(column, int):
        return Problem(file, f"not valid YAML: {exc}")
    what = str(getattr(exc, "problem", None) or "").strip() or str(exc)
    context = str(getattr(exc, "context", None) or "").strip()
    return Problem(
        file,
        f"not valid YAML: {what}" + (f" ({context})" if context else ""),
        f"line {line + 1}, column {column + 1}",
    )


NonEmptyStr = Annotated[str, Field(strict=True, min_length=1)]
StrList = tuple[Annotated[str, Field(strict=True)], ...]
Seconds = Annotated[float, Field(strict=True, gt=0)]
PositiveNumber = Annotated[float, Field(strict=True, gt=0)]


class Model(BaseModel):
    """Base of every input-file model: frozen, unknown keys rejected."""

    # defer_build: a model's validator is built when it first validates, not at import. A session imports
    # models it never validates with (the custom adapters' when none is registered, the treatments' without
    # a treatment file, and every nested model, which its parent's validator includes): in a 1-trial oracle
    # run 10 of the 16 are never built. Side by side, 6 alternating 1-trial runs: 0.68 s with it, 0.72 s
    # without (medians; user CPU 0.61 against 0.66 s).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def problems_from(exc: ValidationError, file: Path, model: type[BaseModel], *, sections: bool) -> list[Problem]:
    """Turn a pydantic error into Problems that name the key, the value and what is allowed, in plain
    words: never pydantic's own phrasing ("Input should be ...", "Value error, ..."), a model's class
    name or the union member tags pydantic adds to a location.

    With *sections* the first location element is shown as a TOML section: ``[metadata] name``.
    """
    problems: list[Problem] = []
    # A value that fits no member of a union fails once per member: one Problem says what each allows.
    alternatives: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False):
        loc, union = _shown_location(tuple(err["loc"]), model)
        key = _key(loc, sections=sections)
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            noun = "section" if sections and len(loc) == 1 else "key"
            message = f"unknown {noun}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
            problems.append(Problem(file, message, key, err.get("input")))
        elif kind == "missing":
            problems.append(Problem(file, "required key is missing", key))
        elif union and key in alternatives:
            alternatives[key].append(_reason(err, model, loc))
        else:
            reason = _reason(err, model, loc)
            if union:
                alternatives[key] = [reason]
            problems.append(Problem(file, reason, key, err.get("input")))
    out = []
    for problem in problems:
        reasons = alternatives.get(problem.key)
        if reasons and len(reasons) > 1 and problem.message == reasons[0]:
            merged = reasons[0] + "".join(f" or {r.removeprefix('expected ')}" for r in reasons[1:])
            problem = Problem(problem.file, merged, problem.key, problem.value)
        out.append(problem)
    return out


_PLAIN: dict[str, str] = {
    "string_type": "expected a string",
    "string_sub_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "set_type": "expected a list",
    "dict_type": "expected a mapping",
    "none_required": "expected nothing (null)",
}
"""Plain reasons for pydantic's error types that need no context (TOML and YAML say list and mapping;
the models hold tuples so the specs stay immutable)."""


def _reason(err: Any, model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """What *err* means, in plain words."""
    kind: str = err["type"]
    ctx: dict[str, Any] = err.get("ctx") or {}
    if kind in _PLAIN:
        return _PLAIN[kind]
    if kind in ("model_type", "model_attributes_type", "dataclass_type"):
        keys = _allowed_keys(model, loc)
        return "expected a mapping" + (f" with keys {', '.join(keys)}" if keys else "")
    if kind == "literal_error":
        return f"expected {ctx.get('expected', 'one of the allowed values')}"
    if kind == "string_too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least == 1 else f"must be at least {least} characters long"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long"
    if kind == "string_pattern_mismatch":
        return f"does not have the allowed form (the regular expression {ctx.get('pattern')})"
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        most = "at least" if kind == "too_short" else "at most"
        return f"expected {most} {bound} {'entry' if bound == 1 else 'entries'}"
    bounds = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in bounds:
        words, name = bounds[kind]
        return f"expected a number {words} {_number(ctx.get(name))}"
    if kind in ("value_error", "assertion_error") and ctx.get("error") is not None:
        return str(ctx["error"])
    # Anything else: pydantic's message, with its own phrasing turned into ours.
    message = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    message = re.sub(r" or instance of \w+", "", message)
    message = re.sub(r"^(Input|String|Value|Tuple|List|Dictionary|Object) should (be|have)", "expected", message)
    return re.sub(r"^(Input|String|Value) should match", "expected to match", message)


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _shown_location(loc: tuple[Any, ...], model: type[BaseModel]) -> tuple[tuple[Any, ...], bool]:
    """*loc* as the user wrote the document, and whether a union member's tag was dropped from it.

    pydantic's locations hold more than keys and indexes: ``[key]`` after a mapping key that is itself
    invalid, and the name of each member of a union (``str``, ``dict[str,any]``, a model's class name).
    The walk follows the model's annotations to tell a member's tag from a key.
    """
    node: Any = model
    shown: list[Any] = []
    union = False
    for part in loc:
        node = _unwrapped(node)
        members = _union_members(node)
        if members is not None:
            union = True
            node = next((m for m in members if getattr(m, "__name__", None) == part), None)
            continue  # the member's tag: not part of the document
        if part == "[key]":
            continue
        shown.append(part)
        node = _child(node, part)
    return tuple(shown), union


def _unwrapped(node: Any) -> Any:
    """*node* without ``Annotated`` and without ``None`` as an alternative (an optional value is not a
    union that pydantic tags)."""
    while get_origin(node) is Annotated:
        node = get_args(node)[0]
    members = _members(node)
    if members is not None:
        real = [m for m in members if m is not type(None)]
        if len(real) == 1:
            return _unwrapped(real[0])
    return node


def _members(node: Any) -> tuple[Any, ...] | None:
    return get_args(node) if get_origin(node) in (Union, UnionType) else None


def _union_members(node: Any) -> tuple[Any, ...] | None:
    members = _members(node)
    if members is None:
        return None
    return tuple(_unwrapped(m) for m in members if m is not type(None))


def _child(node: Any, part: Any) -> Any:
    """The annotation of *node*'s entry *part* (None: not known, and nothing after it is dropped)."""
    if isinstance(node, type) and issubclass(node, BaseModel):
        field = node.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else None
    origin, args = get_origin(node), get_args(node)
    if origin in (tuple, list, set, frozenset) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _key(loc: tuple[Any, ...], *, sections: bool) -> str:
    if not loc:
        return ""
    parts = [str(p) for p in loc]
    if sections and len(parts) > 1 and not parts[0].isdigit():
        return f"[{parts[0]}] " + _dotted(parts[1:])
    if sections and len(parts) == 1:
        return f"[{parts[0]}]"
    return _dotted(parts)


def _dotted(parts: list[str]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (sub)model found by following *loc* from *model*."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _model_of(field.annotation)
        if current is None:
            return []
    return sorted(getattr(current, "model_fields", {}))


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None
