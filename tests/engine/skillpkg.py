"""Write skill packages on disk for the skill front-end tests (plain dicts in, real files out)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.support.factories import REPO

EXAMPLE = REPO / "examples" / "release-notes"


def minimal_skill(name: str = "demo", **changes: Any) -> dict[str, Any]:
    """A valid two-step deterministic skill.yaml as a dict; keyword arguments replace top-level keys."""
    data: dict[str, Any] = {
        "apiVersion": "comet/v1alpha1",
        "kind": "Skill",
        "metadata": {"name": name, "version": "1"},
        "goal": {"statement": "do the thing"},
        "orchestration": {
            "mode": "deterministic",
            "entry": "one",
            "steps": [
                {"id": "one", "action": {"type": "invoke_skill", "ref": "worker"}, "next": "two"},
                {"id": "two", "action": {"type": "checkpoint"}},
            ],
        },
        "skills": ["worker"],
        "agents": [],
        "tools": [],
    }
    data.update(copy.deepcopy(changes))
    return data


def write_package(
    root: Path,
    skill: dict[str, Any] | str | None = None,
    *,
    guardrails: dict[str, Any] | str | None = None,
    checks: dict[str, Any] | None = None,
    evals: dict[str, Any] | None = None,
    eval_manifest: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    skill_md: str | None = None,
) -> Path:
    skill = minimal_skill() if skill is None else skill
    name = skill["metadata"]["name"] if isinstance(skill, dict) else "demo"
    (root / "comet").mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(skill_md if skill_md is not None else f"---\nname: {name}\n---\nDo it.\n")
    _dump(root / "comet" / "skill.yaml", skill)
    for filename, doc in (
        ("guardrails.yaml", guardrails),
        ("checks.yaml", checks),
        ("evals.yaml", evals),
        ("eval.yaml", eval_manifest),
    ):
        if doc is not None:
            _dump(root / "comet" / filename, doc)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def copy_example(target: Path) -> Path:
    shutil.copytree(EXAMPLE, target)
    return target


def _dump(path: Path, doc: dict[str, Any] | str) -> None:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
