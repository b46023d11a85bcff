"""The manifest's tasks as real task folders, so a session runs them exactly like any other task.

An inline task becomes::

    <dest>/<name>/task.toml              written from the manifest (rubric -> [evaluation] rubric_criteria)
    <dest>/<name>/instruction.md         the prompt
    <dest>/<name>/environment/           the built-in generic-skill-smoke environment, then the task's
                                         ``workspace`` files copied over it (its Dockerfile is kept)
    <dest>/<name>/validation/test_expect.py   the check script: one NAMED check per expect
    <dest>/<name>/validation/expect.json      what it checks (data, never code)
    <dest>/<name>/solution/solve.sh      the oracle's "solution": none exists, so it does nothing

The checks run after the agent, like every validation script (scaffold.validation.runner): on the local
backend and inside a Docker container alike, with only the standard library and the validation helpers
(scaffold.python.validation.core, which also holds the JSON path dialect). A source task is copied as it is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.catalog.builtin import ENVIRONMENT_TASK
from scaffold.catalog.tasks import INDEX_FILE, Task, TaskSpec, load_task
from scaffold.errors import SelectionError
from scaffold.skill_eval.manifest import InlineTask, Manifest, SourceTask
from scaffold.util.atomic import locked

__all__ = ["CHECK_SCRIPT", "EXPECT_FILE", "INLINE_TIMEOUT_SEC", "plan_tasks", "write_tasks"]

CHECK_SCRIPT = "test_expect.py"
EXPECT_FILE = "expect.json"
INLINE_TIMEOUT_SEC = 900
_MARKER = ".written-by-comet-eval"
_LOCK = ".tasks.lock"
# Room for the script itself beyond its commands' own timeouts.
_SCRIPT_MARGIN_SEC = 120

_CHECK_SOURCE = '''"""Checks of an inline eval.yaml task (written by comet eval; see validation/expect.json)."""

import sys
from pathlib import Path

from scaffold.python.validation.expect import run_expect

if __name__ == "__main__":
    sys.exit(run_expect(Path(__file__).parent / "expect.json"))
'''
"""The task's validation script: the checks themselves are scaffold.python.validation.expect, which the
harness makes importable in the workspace with the other validation helpers."""

_SOLVE = """#!/bin/sh
# An inline eval.yaml task declares what to check, not how to do it: there is no reference solution.
echo "inline task: no reference solution (the manifest declares only its checks)" >&2
"""


def write_tasks(
    manifest: Manifest,
    selected: Sequence[str] | None,
    dest: Path,
    *,
    environment: Path,
) -> Path:
    """Write the manifest's tasks (all, or those named in *selected*, in the manifest's order) as task
    folders under *dest*; returns *dest*. *environment* is the folder inline tasks start from
    (scaffold.catalog.builtin.builtin_environment()). A folder of an earlier write (a resumed experiment)
    is replaced."""
    by_name = {task.name: task for task in manifest.tasks}
    if selected is not None:
        unknown = [name for name in selected if name not in by_name]
        if unknown:
            raise SelectionError(
                f"{', '.join(unknown)}: not a task of {manifest.file or manifest.skill.root}; "
                f"its tasks are: {', '.join(by_name) or 'none'}"
            )
    names = [task.name for task in manifest.tasks if selected is None or task.name in selected]
    digest = _digest(manifest, names, environment)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Every process of a session (pytest-xdist workers) asks for the same folder: one writes, the
    # others wait and find it written (the marker holds the digest of what was written).
    with locked(dest.parent / _LOCK):
        if (dest / _MARKER).is_file() and (dest / _MARKER).read_text(encoding="utf-8").strip() == digest:
            return dest
        _write_all(manifest, by_name, names, dest, environment)
        (dest / _MARKER).write_text(digest + "\n", encoding="utf-8")
    return dest


def plan_tasks(manifest: Manifest, selected: Sequence[str] | None, dest: Path, *, environment: Path) -> dict[str, Task]:
    """The tasks write_tasks would write, built in memory and written nowhere (``--collect-only``): the
    inline ones as if under *dest*, the source ones where they are."""
    planned: dict[str, Task] = {}
    for task in manifest.tasks:
        if selected is not None and task.name not in selected:
            continue
        if isinstance(task, SourceTask):
            planned[task.name] = load_task(task.folder)
        else:
            spec = TaskSpec.model_validate(tomllib.loads(_task_toml(manifest, task)))
            planned[task.name] = Task(name=task.name, root=dest / task.name, spec=spec)
    _ = environment  # inline tasks read it only when written
    return planned


def _digest(manifest: Manifest, names: Sequence[str], environment: Path) -> str:
    """What the written folder depends on: the manifest file, the selection, and every input file."""
    sha = hashlib.sha256()
    sha.update(json.dumps([str(manifest.file), list(names), repr(manifest)]).encode())
    roots = [environment] + [
        t.folder if isinstance(t, SourceTask) else t.workspace
        for t in manifest.tasks
        if t.name in names and (isinstance(t, SourceTask) or t.workspace is not None)
    ]
    for root in roots:
        assert root is not None
        for item in sorted(root.rglob("*")):
            if item.is_file():
                sha.update(str(item).encode() + b"\0" + item.read_bytes() + b"\0")
    return "sha256:" + sha.hexdigest()


def _write_all(
    manifest: Manifest,
    by_name: Mapping[str, InlineTask | SourceTask],
    names: Sequence[str],
    dest: Path,
    environment: Path,
) -> None:
    _claim(dest)
    for name in names:
        task = by_name[name]
        staging = dest / f".{name}.writing"
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(task, SourceTask):
            shutil.copytree(task.folder, staging, symlinks=False)
        else:
            _write_inline(manifest, task, staging, environment)
        final = dest / name
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
    index = "# Written by comet eval: the tasks of an eval.yaml.\ntasks:\n" + "".join(
        f"- name: {json.dumps(name)}\n" for name in names
    )
    (dest / INDEX_FILE).write_text(index, encoding="utf-8")


def _claim(dest: Path) -> None:
    """Make *dest* ours: a new or empty folder, or one an earlier write_tasks made (then its tasks are
    cleared: the index must list exactly the folders present). Anything else is refused, never emptied."""
    marker = dest / _MARKER
    if dest.is_dir() and any(dest.iterdir()) and not marker.is_file():
        raise SelectionError(f"{dest}: not empty and not written by comet eval; choose an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    for item in dest.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
    marker.write_text("writing\n", encoding="utf-8")


def _write_inline(manifest: Manifest, task: InlineTask, folder: Path, environment: Path) -> None:
    shutil.copytree(environment, folder / "environment", symlinks=False)
    if task.workspace is not None:
        for item in sorted(task.workspace.rglob("*")):
            rel = item.relative_to(task.workspace)
            if rel.as_posix() == "Dockerfile":
                continue  # the environment's Dockerfile builds the image; the workspace gives files only
            target = folder / "environment" / rel
            if item.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(item, target)
    (folder / "instruction.md").write_text(task.prompt.rstrip("\n") + "\n", encoding="utf-8")
    (folder / "validation").mkdir()
    (folder / "validation" / CHECK_SCRIPT).write_text(_CHECK_SOURCE, encoding="utf-8")
    expect = {
        "files": list(task.expect.files),
        "contains": {name: list(needles) for name, needles in task.expect.contains.items()},
        "json": [{"file": j.file, "path": j.path, "equals": j.equals} for j in task.expect.json],
        "commands": [{"run": c.run, "timeout": c.timeout} for c in task.expect.commands],
    }
    (folder / "validation" / EXPECT_FILE).write_text(
        json.dumps(expect, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / "solution").mkdir()
    solve = folder / "solution" / "solve.sh"
    solve.write_text(_SOLVE, encoding="utf-8")
    solve.chmod(0o755)
    (folder / "task.toml").write_text(_task_toml(manifest, task), encoding="utf-8")


def _task_toml(manifest: Manifest, task: InlineTask) -> str:
    script_timeout = _SCRIPT_MARGIN_SEC + sum(c.timeout for c in task.expect.commands)
    sections: dict[str, Mapping[str, object]] = {
        "metadata": {
            "name": task.name,
            "description": f"Inline task of the eval.yaml of skill {manifest.skill.name}.",
            "category": "skill-eval",
            "default_treatments": ["CONTROL"],
            "tags": ["eval.yaml", "inline"],
        },
        "environment": {
            "description": f"The built-in {ENVIRONMENT_TASK} environment"
            + (" with the task's workspace files." if task.workspace else "."),
            "dockerfile": "environment/Dockerfile",
            "timeout_sec": INLINE_TIMEOUT_SEC,
        },
        "validation": {"test_scripts": [CHECK_SCRIPT], "timeout": script_timeout},
        "evaluation": {
            **({"profile": manifest.skill.profile} if manifest.skill.profile else {}),
            "expected_artifacts": list(dict.fromkeys([*task.expect.files, *manifest.expected_artifacts])),
            "required_skills": list(manifest.required_skills or ()),
            # requiredSkills: [] says no skill is required, not even the one under test (scaffold.rubrics.
            # expected); only then is the key written, so the tasks of every other manifest stay as they were.
            **({"expect_skills_under_test": False} if manifest.required_skills == () else {}),
            "rubric_criteria": list(task.rubric),
        },
    }
    if manifest.interaction:
        sections["interaction"] = dict(manifest.interaction)
    text = "# Written by comet eval from an inline eval.yaml task; edit the manifest, not this file.\n"
    for section, values in sections.items():
        text += f"\n[{section}]\n"
        for key, value in values.items():
            text += f"{key} = {_toml_value(value)}\n"
    tomllib.loads(text)  # a writer bug must fail here, not as a confusing task error later
    return text


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # A JSON string is a TOML basic string, except that TOML also wants DEL escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")
