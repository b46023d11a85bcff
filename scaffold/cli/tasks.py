"""``comet tasks list|check|show``: task folders as a run loads them, every problem named."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scaffold.catalog.compose import Compose
from scaffold.catalog.tasks import Task, TaskCatalog
from scaffold.catalog.treatments import TreatmentCatalog
from scaffold.errors import Problem
from scaffold.experiment.cases import profile_problems, unknown_treatment_problems
from scaffold.session import HarnessSession, Options

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet tasks list|check|show``."""
    tasks = commands.add_parser("tasks", help="list and check task folders")
    task_commands = tasks.add_subparsers(title="tasks commands", metavar="COMMAND")

    listing = task_commands.add_parser("list", help="the tasks of one or more tasks folders")
    _dirs_arguments(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_tasks_list, treatments_dir=[], skill_base=[])

    check = task_commands.add_parser("check", help="every problem in every task; exit 1 when there is any")
    _dirs_arguments(check)
    check.add_argument(
        "--treatments-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="treatments folder(s) to check default_treatments against (default: treatments/ beside each DIR)",
    )
    check.add_argument("--skill-base", action="append", default=[], metavar="NAME=DIR")
    check.add_argument("--json", action="store_true", help="print JSON: each task's format, problems and warnings")
    check.set_defaults(func=_tasks_check)

    show = task_commands.add_parser("show", help="one task as loaded: its format, settings and unused keys")
    show.add_argument("name", metavar="NAME", help="the task's name")
    _dirs_arguments(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_tasks_show, treatments_dir=[], skill_base=[])


def _dirs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dirs", nargs="*", type=Path, metavar="DIR", help="tasks folder(s) (default: local/tasks, else the built-ins)"
    )


def _session(args: argparse.Namespace) -> HarnessSession:
    """The harness session of a ``comet tasks`` command: its folders resolve as a pytest run's do."""
    options = Options(
        root=Path(),
        tasks_dirs=tuple(args.dirs),
        treatments_dirs=tuple(args.treatments_dir),
        skill_bases=tuple(args.skill_base),
    )
    return HarnessSession(options)


def _tasks_list(args: argparse.Namespace) -> int:
    session = _session(args)
    catalog, _ = session.catalogs()
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        task = catalog.tasks.get(name)
        if task is None:
            rows.append({"name": name, "status": "invalid", "problems": len(catalog.broken[name])})
            continue
        meta = task.spec.metadata
        rows.append(
            {
                "name": name,
                "status": "ok",
                "format": task.format,
                "category": meta.category,
                "difficulty": meta.difficulty,
                "default_treatments": list(meta.default_treatments),
                "description": meta.description,
                "path": str(task.root),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no tasks found in " + ", ".join(str(d) for d in session.task_folders()))
        return 0
    width = max(len(r["name"]) for r in rows)
    # At least 8 wide, as before; wider for Harbor's categories ("software-engineering").
    category = max([8, *(len(r["category"]) for r in rows if r["status"] == "ok")])
    for row in rows:
        if row["status"] == "invalid":
            print(f"{row['name']:<{width}}  INVALID ({row['problems']} problems; run: comet tasks check)")
        else:
            treatments = ",".join(row["default_treatments"])
            print(
                f"{row['name']:<{width}}  {row['format']:<6} {row['category']:<{category}} {row['difficulty']:<6} "
                f"{treatments:<30} {row['description']}"
            )
    return 0


def _tasks_check(args: argparse.Namespace) -> int:
    """Every problem, then every warning (accepted: an index.yaml entry that disagrees with task.toml),
    then one line per task with its format and state; exit 1 when there is any problem."""
    catalog, treatments = _session(args).catalogs()
    problems: list[Problem] = []
    cross = _cross_problems(catalog, treatments)
    for problem in [*catalog.problems(), *treatments.problems(), *(p for found in cross.values() for p in found)]:
        if problem not in problems:  # an unreadable treatments file is also named beside each task it may break
            problems.append(problem)
    loaded = {**catalog.partial, **catalog.tasks}
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        task = loaded.get(name)
        rows.append(
            {
                "name": name,
                "format": task.format if task is not None else None,
                "status": "invalid" if name in catalog.broken or name in cross else "ok",
                "problems": [str(p) for p in (*catalog.broken.get(name, ()), *cross.get(name, ()))],
                "warnings": [str(w) for w in task.warnings] if task is not None else [],
            }
        )
    if args.json:
        shown = {"tasks": rows, "problems": [str(p) for p in problems]}
        print(json.dumps(shown, indent=2))
        return 1 if problems else 0
    for problem in problems:
        print(problem)
    for row in rows:
        for warning in row["warnings"]:
            print(f"warning: {warning}")
    width = max((len(row["name"]) for row in rows), default=0)
    for row in rows:
        state = "INVALID" if row["status"] == "invalid" else "ok"
        notes = f" ({len(row['warnings'])} warning(s))" if row["warnings"] else ""
        print(f"  {row['name']:<{width}}  {row['format'] or '?':<6}  {state}{notes}")
    if problems:
        print(f"\n{len(problems)} problem(s); {len(catalog.names())} task(s) checked", file=sys.stderr)
        return 1
    print(f"{len(catalog.tasks)} task(s) OK; {len(treatments.treatments)} treatment(s) OK")
    return 0


def _tasks_show(args: argparse.Namespace) -> int:
    """One task as loaded: what the runtime reads (the mapped spec, Harbor's settings), what was left
    unused (a Harbor task's keys we do not act on, kept as written), its warnings and problems."""
    catalog, _ = _session(args).catalogs()
    task = catalog.tasks.get(args.name) or catalog.partial.get(args.name)
    if task is None and args.name not in catalog.broken:
        known = ", ".join(catalog.names()) or "none"
        print(f"comet: no task {args.name!r}; known: {known}", file=sys.stderr)
        return 2
    shown: dict[str, Any] = {
        "name": args.name,
        "format": task.format if task is not None else None,
        "path": str(task.root) if task is not None else None,
        "spec": task.spec.model_dump(mode="json") if task is not None else None,
        "harbor": _plain_harbor(task),
        "template": dict(task.template) if task is not None else {},
        "warnings": [str(w) for w in task.warnings] if task is not None else [],
        "problems": [str(p) for p in catalog.broken.get(args.name, ())],
    }
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
    else:
        for key, value in shown.items():
            if isinstance(value, dict):
                print(f"{key}:")
                for sub, item in value.items():
                    print(f"  {sub}: {json.dumps(item, default=str)}")
            elif isinstance(value, list):
                print(f"{key}:" + ("" if value else " none"))
                for item in value:
                    print(f"  {item}")
            else:
                print(f"{key}: {value}")
    return 1 if shown["problems"] else 0


def _plain_harbor(task: Task | None) -> dict[str, Any] | None:
    if task is None or task.harbor is None:
        return None
    settings = task.harbor
    # The env tables by name only: SkillsBench's [solution.env] holds API keys, and nothing the harness
    # prints may show a secret.
    return {
        "verifier_env": [name for name, _ in settings.verifier_env],
        "solution_env": [name for name, _ in settings.solution_env],
        "environment_env": [name for name, _ in settings.environment_env],
        "allow_internet": settings.allow_internet,
        "docker_image": settings.docker_image,
        "build_timeout_sec": settings.build_timeout_sec,
        "distractor_skills": list(settings.distractor_skills),
        "uv_shim": settings.uv_shim,
        "compose": _plain_compose(settings.compose),
        "unused": dict(settings.unused),
    }


def _plain_compose(compose: Compose | None) -> dict[str, Any] | None:
    """The compose file's services as they start (sidecars in order, then main); environment by name only."""
    if compose is None:
        return None
    return {
        "file": compose.file,
        "services": [
            {
                "name": s.name,
                "image": s.image,
                "build": None if s.build is None else f"{s.build.context}/{s.build.dockerfile}",
                "depends_on": [f"{d.service} ({d.condition})" for d in s.depends_on],
                "environment": [name for name, _ in s.environment],
            }
            for s in (*compose.services, compose.main)
        ],
        "volumes": list(compose.volumes),
    }


def _cross_problems(catalog: TaskCatalog, treatments: TreatmentCatalog) -> dict[str, list[Problem]]:
    """Problems that only show when tasks meet treatments and profiles, by task, for broken tasks whose
    task.toml is valid too: the same checks (scaffold.experiment.cases) as the INVALID item of a pytest run."""
    problems: dict[str, list[Problem]] = {}
    everything = {**catalog.tasks, **catalog.partial}
    for name in sorted(everything):
        task = everything[name]
        found = unknown_treatment_problems(task, task.spec.metadata.default_treatments, treatments)
        found.extend(profile_problems(task))
        if found:
            problems[name] = found
    return problems
