"""``comet agents list|install``: the agent CLIs on this machine, and installing the pinned ones."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """``comet agents list|install``."""
    agents = commands.add_parser("agents", help="the agent CLIs: what is installed, and installing them")
    agent_commands = agents.add_subparsers(title="agents commands", metavar="COMMAND")
    agents_list = agent_commands.add_parser(
        "list", help="every agent: its program (found or not, its version) and credentials (set or not, masked)"
    )
    agents_list.add_argument("--json", action="store_true", help="print JSON")
    agents_list.set_defaults(func=_agents_list)
    agents_install = agent_commands.add_parser(
        "install",
        help="install the pinned agent CLIs (npm, pip) into a prefix runs look in by default",
        description="Install the programs of the agents named (default: the built-in CLIs with a pinned "
        "version) into DIR (default: ~/.comet/eval/agents, which runs look in without any setting).",
    )
    agents_install.add_argument("names", nargs="*", metavar="NAME", help="agents (default: the pinned built-ins)")
    agents_install.add_argument("--prefix", type=Path, default=None, metavar="DIR", help="install folder")
    agents_install.set_defaults(func=_agents_install)


def _agents_list(args: argparse.Namespace) -> int:
    from scaffold.agents.install import agent_statuses

    statuses, problems = agent_statuses()
    if args.json:
        print(json.dumps([status.as_json() for status in statuses], indent=2))
        return 0
    for status in statuses:
        if status.install is None:
            print(f"{status.name}  ({status.origin}; runs no program of its own)")
            continue
        install = status.install
        package = f"{install.kind} {install.package}@{install.version or 'latest'}" if install.package else "none"
        print(f"{status.name}  ({status.origin}; {package})")
        found = status.lookup.found if status.lookup else None
        if found:
            print(f"  program      {install.executable}: {found}, version {status.version or 'unknown'}")
        else:
            print(f"  program      {install.executable}: not found (comet agents install {status.name})")
        print("  credentials  one of: " + ", ".join(c.shown() for c in status.credentials))
    for problem in problems:
        print(f"invalid adapter: {problem}")
    return 0


def _agents_install(args: argparse.Namespace) -> int:
    from scaffold.agents.install import install_agents

    return install_agents(args.names, args.prefix)
