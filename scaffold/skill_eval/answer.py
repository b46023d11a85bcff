"""The task generator's answer: JSON found leniently in what an agent wrote, and its tasks' shape checked.

Agents wrap JSON in prose, Markdown fences or another object (``{"result": "{\\"tasks\\": ...}"}``), so the
answer is searched rather than parsed once: fenced blocks, the whole text, each line from the end, then
every ``{``/``[`` where a JSON value starts; inside what parses, the first mapping holding a ``tasks``
list wins (JSON inside strings is opened too). The shape checks here are the generator's own (2-4
tasks, known fields, names); the manifest validator decides the rest, exactly as for an authored file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["MAX_TASKS", "MIN_TASKS", "AnswerError", "check_tasks", "find_tasks"]

MIN_TASKS: Final = 2
MAX_TASKS: Final = 4
TASK_FIELDS: Final = ("name", "prompt", "workspace", "expect", "rubric")
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_FENCE: Final = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_MAX_DEPTH: Final = 8


class AnswerError(ValueError):
    """The generator's answer holds no usable task list; the message says what was wrong."""


def find_tasks(answer: object) -> list[Any]:
    """The ``tasks`` list of the first task object in *answer* (text or already-parsed JSON)."""
    found_json = False
    for value in _json_values(answer):
        found_json = True
        tasks = _tasks_in(value, 0)
        if tasks is not None:
            return tasks
    if not found_json:
        raise AnswerError("task_generation: the generator did not return JSON")
    raise AnswerError('task_generation: the generator\'s JSON holds no object with a "tasks" list')


def check_tasks(tasks: list[Any]) -> list[str]:
    """Every problem of the task list's shape (empty when it can be handed to the manifest validator)."""
    problems: list[str] = []
    if not MIN_TASKS <= len(tasks) <= MAX_TASKS:
        problems.append(f"generated tasks: expected {MIN_TASKS}-{MAX_TASKS} tasks, got {len(tasks)}")
    names: dict[str, int] = {}
    for i, task in enumerate(tasks):
        where = f"tasks[{i}]"
        if not isinstance(task, Mapping):
            problems.append(f"{where}: must be an object with name, prompt and expect")
            continue
        extra = sorted(str(k) for k in task if k not in TASK_FIELDS)
        if extra:
            problems.append(f"{where}: unsupported fields {extra}; allowed: {', '.join(TASK_FIELDS)}")
        name = task.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append(f"{where}.name: must match {_NAME.pattern} (got {name!r})")
        elif name in names:
            problems.append(f"{where}.name: duplicates tasks[{names[name]}].name: {name!r}")
        else:
            names[name] = i
        if not isinstance(task.get("prompt"), str) or not task["prompt"].strip():
            problems.append(f"{where}.prompt: a non-empty string is required")
        if not isinstance(task.get("expect"), Mapping) or not task["expect"]:
            problems.append(f"{where}.expect: an object with at least one deterministic expect is required")
        if "workspace" in task and not isinstance(task["workspace"], str):
            problems.append(f"{where}.workspace: must be a path inside the skill")
        rubric = task.get("rubric")
        if rubric is not None and not (isinstance(rubric, list) and all(isinstance(r, str) and r for r in rubric)):
            problems.append(f"{where}.rubric: must be a list of non-empty strings")
    return problems


def _json_values(answer: object) -> Iterator[Any]:
    """Every JSON value *answer* may hold, most likely first."""
    if not isinstance(answer, str):
        yield answer
        return
    text = answer.strip()
    for block in _FENCE.findall(text):
        yield from _loads(block.strip())
    yield from _loads(text)
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line[:1] in ("{", "["):
            yield from _loads(line)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        yield value


def _loads(text: str) -> Iterator[Any]:
    try:
        yield json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return


def _tasks_in(value: Any, depth: int) -> list[Any] | None:
    """The first ``tasks`` list of a mapping in *value*, searched depth first (JSON in strings too)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        if isinstance(value.get("tasks"), list):
            return list(value["tasks"])
        children: list[Any] = list(value.values())
    elif isinstance(value, list):
        children = value
    elif isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        children = list(_loads(value.strip()))
    else:
        return None
    for child in children:
        found = _tasks_in(child, depth + 1)
        if found is not None:
            return found
    return None
