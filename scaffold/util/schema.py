"""Validation at the file boundary: pydantic models for input files, errors turned into Problems.

Models here are strict about scalars (a string where an int belongs is an error, and so is a bool
where an int belongs) and forbid unknown keys, so a typo never silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    """Turn a pydantic error into Problems that name the key, the value and what is allowed.

    With *sections* the first location element is shown as a TOML section: ``[metadata] name``.
    """
    problems: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        key = _key(loc, sections=sections)
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            noun = "section" if sections and len(loc) == 1 else "key"
            message = f"unknown {noun}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
            problems.append(Problem(file, message, key, err.get("input")))
        elif kind == "missing":
            problems.append(Problem(file, "required key is missing", key))
        else:
            # TOML and YAML say "array"/"list"; the models use tuples so the specs stay immutable.
            message = str(err["msg"]).replace("Input should be", "expected").replace("valid tuple", "list")
            problems.append(Problem(file, message, key, err.get("input")))
    return problems


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
