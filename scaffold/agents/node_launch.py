"""How this machine starts an agent CLI installed from npm: on the harness's Node.js, with a compile cache.

An npm CLI (Claude Code, Codex) is a Node.js script whose ``#!/usr/bin/env node`` would pick whatever
``node`` comes first on PATH. The harness starts it as ``<node> --require <cache>/enable-cache.cjs
<script>`` instead, with the Node.js it installs once per machine (the one the docker backend mounts in
containers, scaffold.workspaces.docker.agent_layer.node_runtime): the same runtime on every backend, and
one whose compile cache loads the CLI without compiling it again (0.3 CPU s of each Claude Code trial
here). The CLI itself, its version and its arguments are the user's.

Kept as it is, found on PATH as before: a program that is not a Node.js script, an install that is not
npm's, and a package with compiled addons (``*.node``, built for the Node.js they were installed with).
Where the harness's Node.js cannot be installed, the CLI starts as it is, with a warning.
"""

from __future__ import annotations

import platform
import threading
import warnings
from pathlib import Path

from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import InstallSpec

__all__ = ["local_command", "node_script"]

_lock = threading.Lock()
_commands: dict[tuple[Path, str], list[str]] = {}


def local_command(program: Path, install: InstallSpec) -> list[str]:
    """The start of the command line that runs *program* (the CLI found on this machine), decided once
    per program and session: ``[node, --require, preload, script]``, or ``[program]``."""
    with _lock:  # two trials in flight on one worker must not install or fill twice
        key = (program, install.key)
        if key not in _commands:
            _commands[key] = _decide(program, install)
        return _commands[key]


def node_script(path: Path) -> bool:
    """Whether *path* is a Node.js script (its first line runs ``node``)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _decide(program: Path, install: InstallSpec) -> list[str]:
    # The docker backend's module, imported here only: a run without an npm CLI never loads it.
    from scaffold.workspaces.docker.agent_layer import (
        ENABLE_CACHE_FILE,
        compile_cache,
        install_agent,
        native_addons,
        node_runtime,
    )

    as_is = [str(program)]
    script = program.resolve()
    package = _package_root(script)
    if install.kind != "npm" or not node_script(script) or package is None or native_addons(package):
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
    key = f"{node.host.name} {install.key} {stat.st_size} {stat.st_mtime_ns}"
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
