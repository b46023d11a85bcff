"""Real task folders, treatments and skills on disk, and a real Runner over them, for tests."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["PASSING_CHECK", "REPO", "TaskFactory", "make_runner", "to_toml", "toml_value"]

REPO = Path(__file__).resolve().parent.parent.parent

PASSING_CHECK = textwrap.dedent(
    """\
    from pathlib import Path
    from scaffold.python.validation.core import write_test_results

    ok = Path("out.txt").is_file() and Path("out.txt").read_text().strip() == "done"
    write_test_results({"passed": ["out.txt says done"]} if ok else {"failed": ["out.txt says done"]})
    """
)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


def to_toml(data: Mapping[str, Mapping[str, Any]]) -> str:
    lines = []
    for section, body in data.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in body.items())
        lines.append("")
    return "\n".join(lines)


class TaskFactory:
    """Writes task folders under ``<root>/tasks`` and keeps ``index.yaml`` in step."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tasks_dir = root / "tasks"
        self.treatments_dir = root / "treatments"
        self.tasks_dir.mkdir(parents=True, exist_ok=True)
        self.treatments_dir.mkdir(parents=True, exist_ok=True)
        self.index: list[dict[str, Any]] = []

    def spec(self, name: str, **sections: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {
            "metadata": {
                "name": name,
                "description": f"task {name}",
                "category": "generic",
                "default_treatments": ["CONTROL"],
            },
            "environment": {"timeout_sec": 30},
            "validation": {"test_scripts": ["check.py"], "timeout": 30},
        }
        for section, body in sections.items():
            data.setdefault(section, {}).update(body)
        return data

    def task(
        self,
        name: str,
        *,
        toml: str | Mapping[str, Mapping[str, Any]] | None = None,
        solve: str = "echo done > out.txt\n",
        scripts: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        instruction: str = "Write done into out.txt. Run id: {run_id}\n",
        register: bool = True,
        **sections: Mapping[str, Any],
    ) -> Path:
        folder = self.tasks_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        spec = toml if toml is not None else self.spec(name, **sections)
        (folder / "task.toml").write_text(spec if isinstance(spec, str) else to_toml(spec))
        (folder / "instruction.md").write_text(instruction)
        (folder / "environment").mkdir(exist_ok=True)
        (folder / "environment" / "Dockerfile").write_text(
            "ARG BASE_IMAGE=comet-eval/base:bookworm\nFROM ${BASE_IMAGE}\n"
        )
        for rel, text in (files or {}).items():
            (folder / "environment" / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / "environment" / rel).write_text(text)
        (folder / "validation").mkdir(exist_ok=True)
        for rel, text in (scripts if scripts is not None else {"check.py": PASSING_CHECK}).items():
            (folder / "validation" / rel).write_text(text)
        (folder / "solution").mkdir(exist_ok=True)
        (folder / "solution" / "solve.sh").write_text("set -eu\n" + solve)
        if register and isinstance(spec, Mapping):
            meta = spec["metadata"]
            self.index = [e for e in self.index if e["name"] != name]
            self.index.append(
                {
                    "name": name,
                    "category": meta.get("category", "generic"),
                    "default_treatments": list(meta.get("default_treatments", ["CONTROL"])),
                    "description": meta.get("description", ""),
                }
            )
        elif register:
            self.index = [e for e in self.index if e["name"] != name] + [{"name": name}]
        self.write_index()
        return folder

    def write_index(self) -> None:
        entries = sorted(self.index, key=lambda e: e["name"])
        (self.tasks_dir / "index.yaml").write_text(yaml.safe_dump({"tasks": entries}, sort_keys=False))

    def skill(self, name: str, *, extra: Mapping[str, str] | None = None) -> Path:
        folder = self.root / "skills" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: test skill {name}\n---\nUse it.\n")
        for rel, text in (extra or {}).items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        return folder

    def treatments(self, filename: str, data: Mapping[str, Any] | str) -> Path:
        path = self.treatments_dir / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(dict(data), sort_keys=False))
        return path


def make_runner(
    tasks_dirs: list[Path],
    treatments_dirs: list[Path],
    root: Path,
    *,
    agent: str = "oracle",
    experiment_id: str = "exp-1",
    **settings: Any,
) -> Any:
    """A real Runner over real folders, workspaces under *root*/ws and logs under *root*/logs."""
    from scaffold.agents import create_agent
    from scaffold.catalog.tasks import load_catalog
    from scaffold.catalog.treatments import load_treatments
    from scaffold.experiment import Experiment
    from scaffold.trial.runner import Runner, Settings
    from scaffold.workspaces.backends import create_backend

    return Runner(
        load_catalog(tasks_dirs),
        load_treatments(treatments_dirs),
        Experiment.under(root / "logs", experiment_id),
        Settings(agent=agent, **settings),
        create_backend("local", workspace_root=root / "ws"),
        create_agent(agent),
    )
