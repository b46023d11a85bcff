"""How this machine starts an agent CLI installed from npm: on the harness's Node.js, with a compile cache.

An npm CLI (Claude Code, Codex) is a Node.js script whose ``#!/usr/bin/env node`` would pick whatever
``node`` comes first on PATH. The harness starts it as ``<node> --require <cache>/enable-cache.cjs
<script>`` instead, with the Node.js it installs once per machine (the one the docker backend mounts in
containers, scaffold.workspaces.docker.agent_layer.node_runtime): the same runtime on every backend, and
one whose compile cache loads the CLI without compiling it again (0.3 CPU s of each Claude Code trial
here). The CLI itself, its version and its arguments are the user's.

The local backend asks it for each agent-phase command started by its path (an adapter starts the CLI
it found by path, scaffold.agents.locate). Kept as it is: a program that is not a Node.js script, one
outside an npm package, and a package with addons compiled at install time (built for the Node.js that
installed them).
Where the harness's Node.js cannot be installed, the CLI starts as it is, with a warning.
"""

from __future__ import annotations

import platform
import threading
import warnings
from pathlib import Path

from scaffold.errors import WorkspaceError
from scaffold.workspaces.files import node_script

__all__ = ["local_command"]

_lock = threading.Lock()
_commands: dict[str, list[str]] = {}


def local_command(program: str) -> list[str]:
    """The start of the command line that runs *program* (an agent phase's command on this machine, by
    its path), decided once per program and session: ``[node, --require, preload, script]``, or
    ``[program]``."""
    with _lock:  # two trials in flight on one worker must not install or fill twice
        if program not in _commands:
            _commands[program] = _decide(Path(program))
        return _commands[program]


def _decide(program: Path) -> list[str]:
    as_is = [str(program)]
    script = program.resolve()
    if not node_script(script):
        return as_is
    # The docker backend's module, imported here only: a run without a Node.js CLI never loads it.
    from scaffold.workspaces.docker.agent_layer import (
        ENABLE_CACHE_FILE,
        compile_cache,
        install_agent,
        native_addons,
        node_runtime,
    )

    package = _package_root(script)
    if package is None or native_addons(package):
        return as_is
    spec = node_runtime(platform.machine())
    if spec is None:
        return as_is
    try:
        node = install_agent(spec)
    except WorkspaceError as exc:
        warnings.warn(f"the agent CLI runs on the first node on PATH: {exc}", stacklevel=3)
        return as_is
    assert node is not None
    node_bin = str(node.host / "node_modules" / ".bin" / "node")
    stat = script.stat()  # an upgrade in place gets a cache of its own
    key = f"{node.host.name} {stat.st_size} {stat.st_mtime_ns}"
    try:
        cache = compile_cache(node, script, key)
    except WorkspaceError as exc:
        warnings.warn(f"the agent CLI starts without a compile cache: {exc}", stacklevel=3)
        return [node_bin, str(script)]
    return [node_bin, "--require", str(cache.host / ENABLE_CACHE_FILE), str(script)]


def _package_root(script: Path) -> Path | None:
    """The npm package *script* belongs to: the nearest folder above it with a ``package.json``."""
    for folder in script.parents:
        if (folder / "package.json").is_file():
            return folder
    return None
