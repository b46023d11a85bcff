"""``comet env`` and ``comet profiles``: the settings a run resolves, and the evaluation profiles."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet env`` and ``comet profiles``."""
    env = commands.add_parser(
        "env",
        help="every setting comet-eval reads, its value and where it comes from; secrets masked",
        description="The settings as a run resolves them: the process environment, then ~/.comet/eval/.env "
        "(COMET_EVAL_HOME moves it), then the default. Credentials are shown as ******** (set) or 'not set', "
        "never their value. Reads only: the file is created by the first comet eval run.",
    )
    env.add_argument("--json", action="store_true", help="print JSON")
    env.set_defaults(func=_env)
    profiles = commands.add_parser(
        "profiles",
        help="the evaluation profiles: their rubric dimensions and weights, and their default interaction",
        description="Each profile a task can be scored by. Which one scores a task: --profile, else the "
        "manifest's skill.profile, else the task.toml's [evaluation] profile, else inferred (category "
        "'comet' or a name starting 'comet-': comet-workflow; otherwise generic).",
    )
    profiles.add_argument("--json", action="store_true", help="print JSON")
    profiles.set_defaults(func=_profiles)


def _profiles(args: argparse.Namespace) -> int:
    from scaffold.rubrics.profiles import get_profile, known_profiles

    found = [get_profile(name) for name in known_profiles()]
    if args.json:
        data = [
            {
                "name": p.name,
                "description": p.description,
                "dimensions": [{"name": n, "weight": w} for n, w in p.weights],
                "weight_sum": round(sum(w for _, w in p.weights), 6),
                "interaction": p.interaction,
                "max_turns": p.max_turns,
            }
            for p in found
        ]
        print(json.dumps(data, indent=2))
        return 0
    for profile in found:
        total = sum(w for _, w in profile.weights)
        print(f"{profile.name}: {profile.description}")
        print(f"  default interaction: {profile.interaction}, max_turns {profile.max_turns}")
        print(f"  {len(profile.weights)} dimensions (weights sum to {total:g}):")
        width = max((len(n) for n, _ in profile.weights), default=0)
        for name, weight in profile.weights:
            print(f"    {name:<{width}}  {weight:g}")
    return 0


def _env(args: argparse.Namespace) -> int:
    from scaffold.cli.user_env import environment_report, sections, user_env_file

    settings = environment_report()
    file = user_env_file()
    if args.json:
        data = [s.as_json() for s in settings]
        print(json.dumps({"file": str(file), "exists": file.is_file(), "settings": data}, indent=2))
        return 0
    state = "" if file.is_file() else " (not created yet: the first comet eval run creates it from the template)"
    print(f"settings file: {file}{state}")
    print("order: the process environment, then that file, then the default")
    width = max(len(s.name) for s in settings)
    for title, rows in sections(settings):
        print(f"\n[{title}]")
        for row in rows:
            if row.source == "not set":
                print(f"  {row.name:<{width}}  not set")
            else:
                print(f"  {row.name:<{width}}  {row.shown}  ({row.source})")
    return 0
