"""Harbor's ``task.toml`` (Terminal-Bench 2, SkillsBench) read as this project's: which key goes where.

The mapping is the one of ``HARBOR_FORMAT.md``: their difficulty, category and tags stay metadata, their
agent and verifier timeouts become ours, ``memory = "2G"`` becomes ``memory_mb = 2048``, SkillsBench's
``required_skills`` become the evaluation's, and what only the Harbor runtime reads (the ``env`` tables,
``allow_internet``, ``docker_image``...) goes to :class:`scaffold.catalog.tasks.HarborSettings`. Every other key of
theirs is kept as written in ``unused`` and is never an error: Harbor's schema grows (1.1 added ``[task]``,
``[[steps]]``, ``mcp_servers``) and is not ours to police. A key we DO map with a value of the wrong type
is a problem naming the file, the key and the value, as for our own format.

This module builds plain data (our task.toml's shape, HarborSettings' fields); scaffold.catalog.tasks validates it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from scaffold.catalog.treatments import CONTROL, TASK_SKILLS
from scaffold.errors import Problem

__all__ = ["HarborMapping", "harbor_marker", "map_harbor", "parse_memory"]

UV_SHIM_VALUES: Final = ("auto", "always", "never")
DIFFICULTIES: Final = ("easy", "medium", "hard")
DESCRIPTION_LIMIT: Final = 200
_MEMORY: Final = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:([kmgt])(?:ib|i|b)?)?\s*$", re.IGNORECASE)
_MB_PER_UNIT: Final = {"k": 1 / 1024, "": 1.0, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024.0}


def harbor_marker(raw: Mapping[str, Any]) -> str | None:
    """What marks *raw* (a parsed task.toml) as Harbor's: an ``[agent]`` or ``[verifier]`` table or a
    top-level ``version``; None for ours. Our own format has none of them (its models forbid them), so a
    marker is never an accident of a task of ours."""
    for section in ("verifier", "agent"):
        if isinstance(raw.get(section), Mapping):
            return f"[{section}]"
    return "version" if "version" in raw else None


def parse_memory(value: object) -> int | None:
    """Harbor's deprecated ``memory`` ("2G", "512M", "1.5Gi", "2048") in megabytes, None when it is not
    one. Units are binary (1G = 1024 MB, as Docker's); a bare number is megabytes (a container of 2048
    bytes is no one's meaning). Fractions round up, so a limit is never below what was asked."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    m = _MEMORY.match(str(value))
    if m is None:
        return None
    mb = math.ceil(float(m.group(1)) * _MB_PER_UNIT[(m.group(2) or "").lower()])
    return mb if mb > 0 else None


@dataclass
class HarborMapping:
    """A Harbor task.toml as our task.toml's sections (``spec``), HarborSettings' fields (``settings``)
    and their keys we leave alone (``unused``, dotted key -> value); ``origin`` names, for each key of
    ours that came from theirs, the key it came from (so a problem found later names their key)."""

    spec: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    unused: dict[str, object] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def map_harbor(
    raw: Mapping[str, Any], *, name: str, toml_path: Path, instruction: str | None, has_skills: bool
) -> HarborMapping:
    """Map the parsed Harbor task.toml *raw* of the task folder *name*. *instruction* is instruction.md's
    text (None when missing), the description when the task.toml has none; *has_skills*: the environment
    ships skills (``environment/skills/*/SKILL.md``), which makes TASK_SKILLS a default treatment."""
    out = _Mapper(toml_path)
    tables = {section: out.table(raw, section) for section in _SECTIONS}
    metadata: dict[str, Any] = {
        "name": name,
        # TASK_SKILLS beside CONTROL exactly when there are skills to give: "do skills help?" is the
        # question a SkillsBench task asks; a task without skills has only its baseline to run.
        "default_treatments": [CONTROL, TASK_SKILLS] if has_skills else [CONTROL],
    }
    out.spec = {"metadata": metadata, "environment": {}, "validation": {}, "evaluation": {}}
    _map_metadata(out, tables["metadata"], tables["task"], instruction)
    _map_environment(out, tables["environment"])
    seconds, strings = "expected a number of seconds greater than 0", "expected a table of names to strings"
    if (timeout := out.get(tables["agent"], "agent", "timeout_sec", _positive_number, seconds)) is not None:
        out.put("environment", "timeout_sec", float(timeout), "[agent] timeout_sec")
    if (timeout := out.get(tables["verifier"], "verifier", "timeout_sec", _positive_number, seconds)) is not None:
        out.put("validation", "timeout", float(timeout), "[verifier] timeout_sec")
    for section in ("verifier", "solution", "environment"):
        env = out.get(tables[section], section, "env", _str_table, strings)
        if env is not None:
            out.settings[f"{section}_env"] = tuple(sorted((str(k), v) for k, v in env.items()))

    # [comet] is ours, not Harbor's: strict, as every file of our own format.
    comet = tables.pop("comet")
    shim = out.get(
        comet, "comet", "uv_shim", UV_SHIM_VALUES.__contains__, f"expected one of {', '.join(UV_SHIM_VALUES)}"
    )
    if shim is not None:
        out.settings["uv_shim"] = shim
    for key in sorted(comet):
        out.problems.append(Problem(toml_path, "unknown key; allowed: uv_shim", f"[comet] {key}", comet[key]))

    for section, body in tables.items():
        out.keep(section, body)
    for key, value in raw.items():
        if key not in _SECTIONS:
            out.keep(key, value)
    return out.result()


def _map_metadata(out: _Mapper, meta: dict[str, Any], task: dict[str, Any], instruction: str | None) -> None:
    levels = (*DIFFICULTIES, "unknown")
    difficulty = out.get(
        meta, "metadata", "difficulty", lambda v: isinstance(v, str) and v.strip().lower() in levels,
        "expected one of easy, medium, hard or unknown",
    )  # fmt: skip
    if difficulty is not None and difficulty.strip().lower() != "unknown":
        out.put("metadata", "difficulty", difficulty.strip().lower())
    elif difficulty is not None:
        # Harbor allows "unknown"; ours has no such level, so the task gets our default (medium) and the
        # value as written stays in `unused`, where `comet tasks show` shows it.
        out.unused["metadata.difficulty"] = difficulty
    category = out.get(meta, "metadata", "category", _non_empty_str, "expected a non-empty string")
    if category is not None:
        # Kept as written even when it starts with "comet": the profile of a Harbor task is never inferred
        # from its category or name (scaffold.rubrics.profiles.infer_profile), Harbor has no workflow to score.
        out.put("metadata", "category", category)
    if (tags := out.get(meta, "metadata", "tags", _str_list, "expected a list of strings")) is not None:
        out.put("metadata", "tags", list(tags))
    if (skills := out.get(meta, "metadata", "required_skills", _str_list, "expected a list of strings")) is not None:
        out.put("evaluation", "required_skills", list(skills), "[metadata] required_skills")
    distractors = out.get(meta, "metadata", "distractor_skills", _str_list, "expected a list of strings")
    if distractors is not None:
        out.settings["distractor_skills"] = tuple(distractors)
    description = out.get(task, "task", "description", lambda v: isinstance(v, str), "expected a string")
    out.put("metadata", "description", description if description is not None else first_line(instruction or ""))


def _map_environment(out: _Mapper, env: dict[str, Any]) -> None:
    if (cpus := out.get(env, "environment", "cpus", _positive_number, "expected a number greater than 0")) is not None:
        out.put("environment", "cpus", float(cpus))
    memory_mb = out.get(env, "environment", "memory_mb", _positive_int, "expected a whole number of megabytes > 0")
    memory = out.get(env, "environment", "memory", _memory, 'expected a size such as "2G", "512M" or "1.5Gi"')
    if memory_mb is not None:
        out.put("environment", "memory_mb", memory_mb)
        if memory is not None:  # both given: memory_mb is the current key and wins; the old one is kept
            out.unused["environment.memory"] = memory
    elif memory is not None:
        out.put("environment", "memory_mb", parse_memory(memory), "[environment] memory")
    if (allow := out.get(env, "environment", "allow_internet", _bool, "expected true or false")) is not None:
        out.settings["allow_internet"] = allow
    image = out.get(env, "environment", "docker_image", _non_empty_str, "expected an image reference (a string)")
    if image is not None:
        out.settings["docker_image"] = image.strip()
    build = out.get(env, "environment", "build_timeout_sec", _positive_number, "expected seconds greater than 0")
    if build is not None:
        out.settings["build_timeout_sec"] = float(build)


_SECTIONS: Final = ("metadata", "task", "agent", "verifier", "solution", "environment", "comet")


def first_line(text: str) -> str:
    """The first line of *text* that says something, without Markdown's heading marks, at most 200
    characters: Harbor 1.0 has no description, and the instruction's opening line is the one a reader
    of a task list needs (a whole instruction would flood ``comet tasks list``)."""
    for line in text.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped if len(stripped) <= DESCRIPTION_LIMIT else stripped[: DESCRIPTION_LIMIT - 3] + "..."
    return ""


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _str_table(value: object) -> bool:
    return isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())


def _non_empty_str(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _bool(value: object) -> bool:
    return isinstance(value, bool)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _memory(value: object) -> bool:
    return parse_memory(value) is not None


def _positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


class _Mapper(HarborMapping):
    def __init__(self, toml_path: Path) -> None:
        super().__init__()
        self.file = toml_path

    def table(self, raw: Mapping[str, Any], section: str) -> dict[str, Any]:
        """A copy of the table *section* (empty when absent); a value that is no table is a problem for the
        sections we read, kept as written for the rest."""
        value = raw.get(section)
        if value is None:
            return {}
        if isinstance(value, Mapping):
            return dict(value)
        self.problems.append(Problem(self.file, "expected a table", f"[{section}]", value))
        return {}

    def get(self, body: dict[str, Any], section: str, key: str, ok: Callable[[Any], bool], message: str) -> Any:
        """Remove *key* from *body*, the table *section* of their task.toml (what stays in a table at the end
        is unused). Its value when *ok* says it is usable; else a problem naming the key and None."""
        if key not in body:
            return None
        value = body.pop(key)
        if ok(value):
            return value
        if key == "env" and isinstance(value, Mapping):
            # The names of the entries that are not strings, never their values: env tables hold API keys.
            bad = sorted(str(k) for k, v in value.items() if not isinstance(v, str))
            self.problems.append(Problem(self.file, f"{message}; not strings: {', '.join(bad)}", f"[{section}.env]"))
            return None
        shown = f"[{section}.env]" if key == "env" else f"[{section}] {key}"
        self.problems.append(Problem(self.file, message, shown, value))
        return None

    def put(self, section: str, key: str, value: Any, theirs: str | None = None) -> None:
        """Our *section*'s *key*; *theirs*: the key of theirs it came from, when it is named otherwise."""
        self.spec[section][key] = value
        if theirs is not None:
            self.origin[f"[{section}] {key}"] = theirs

    def keep(self, prefix: str, value: object) -> None:
        """*value* under *prefix* in ``unused``, a table's leaves one by one (``metadata.author_name``)."""
        if isinstance(value, Mapping) and value:
            for key, item in value.items():
                self.keep(f"{prefix}.{key}", item)
        elif not (isinstance(value, Mapping) and prefix in _SECTIONS):
            self.unused[prefix] = value

    def result(self) -> HarborMapping:
        return HarborMapping(self.spec, self.settings, self.unused, self.origin, self.problems)
