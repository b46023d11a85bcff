"""Where an agent's program is found on this machine, in this order:

1. ``$COMET_AGENT_BIN_DIR`` (one or more folders, ``:``-separated): asked for explicitly, so it wins;
2. the prefix ``comet agents install`` fills by default, ``~/.comet/eval/agents`` (``COMET_EVAL_HOME``
   moves it): the pinned versions the adapters are checked against come before whatever else is
   installed;
3. ``PATH``.

The local backend runs the program found here (scaffold.agents.cli); a session checks at collection
that there is one (scaffold.agents.install), so a missing CLI is a usage error rather than a run of
trials that all fail to start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scaffold.agents.credentials import eval_home
from scaffold.workspaces.base import InstallSpec

__all__ = [
    "BIN_DIR_ENV",
    "Lookup",
    "default_prefix",
    "installed_npm_version",
    "locate",
    "prefix_bin_dirs",
    "search_places",
]

BIN_DIR_ENV = "COMET_AGENT_BIN_DIR"


def default_prefix(env: Mapping[str, str]) -> Path:
    """``~/.comet/eval/agents``: where ``comet agents install`` puts the agent CLIs unless told otherwise."""
    return eval_home(env) / "agents"


def prefix_bin_dirs(prefix: Path) -> tuple[Path, Path]:
    """The folders of programs in an install prefix: npm's ``node_modules/.bin`` and the pip venv's ``bin``."""
    return prefix / "node_modules" / ".bin", prefix / "venv" / "bin"


def search_places(env: Mapping[str, str]) -> list[tuple[str, list[Path]]]:
    """Where programs are looked for, in order, each with how it is named in messages."""
    places: list[tuple[str, list[Path]]] = []
    given = [Path(p).expanduser() for p in env.get(BIN_DIR_ENV, "").split(os.pathsep) if p]
    if given:
        places.append((f"${BIN_DIR_ENV}", given))
    places.append(("the comet agents prefix", list(prefix_bin_dirs(default_prefix(env)))))
    places.append(("PATH", [Path(p) for p in env.get("PATH", os.defpath).split(os.pathsep) if p]))
    return places


@dataclass(frozen=True, slots=True)
class Lookup:
    """The outcome of looking for a program: where it is (None: nowhere) and every place looked at."""

    program: str
    found: Path | None
    looked: tuple[str, ...]
    """``$COMET_AGENT_BIN_DIR (/opt/x)``, ``PATH (/usr/bin:/bin)``...: for messages."""


def locate(program: str, env: Mapping[str, str]) -> Lookup:
    """Find *program* (a name, or a path used as it is) in the places of :func:`search_places`."""
    if os.sep in program:
        path = Path(program).expanduser()
        return Lookup(program, path if _runnable(path) else None, (str(path),))
    looked = []
    for label, folders in search_places(env):
        looked.append(f"{label} ({os.pathsep.join(str(f) for f in folders)})")
        for folder in folders:
            candidate = folder / program
            if _runnable(candidate):
                return Lookup(program, candidate, tuple(looked))
    return Lookup(program, None, tuple(looked))


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def installed_npm_version(spec: InstallSpec, prefix: Path) -> str | None:
    """The version of npm package *spec* installed under *prefix*, read from its package.json; None when
    it is not there."""
    if spec.kind != "npm" or not spec.package:
        return None
    manifest = prefix / "node_modules" / spec.package / "package.json"
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None
