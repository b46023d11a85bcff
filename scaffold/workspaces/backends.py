"""The backend of a session, by name: ``local`` (built in, needs nothing) or ``docker``."""

from __future__ import annotations

from pathlib import Path

from scaffold.errors import SelectionError
from scaffold.workspaces.base import NO_NETWORK, AgentNetwork, Backend, InstallSpec
from scaffold.workspaces.local import LocalBackend

__all__ = ["create_backend", "known_backends"]


def known_backends() -> list[str]:
    return ["docker", "local"]


def create_backend(
    name: str,
    *,
    workspace_root: Path,
    network: AgentNetwork = NO_NETWORK,
    agent_install: InstallSpec | None = None,
) -> Backend:
    """The backend *name*, making workspaces under *workspace_root*.

    *network* is what the agent must reach (scaffold.workspaces.base.AgentNetwork); *agent_install* is its
    program, made available in every workspace. The local backend needs neither: its commands run on
    this machine, with this machine's network and programs. The docker backend gives the agent's
    container a network only when *network* asks for one: this machine only (an endpoint served here),
    only the listed endpoints through the egress proxy, or else the engine's default bridge.
    """
    if name == "local":
        return LocalBackend(workspace_root)
    if name == "docker":
        # Imported only when chosen: the docker SDK costs about a tenth of a second to import.
        from scaffold.workspaces.docker import DockerBackend

        return DockerBackend(
            workspace_root,
            network=network.enabled,
            network_scope="host" if network.on_this_machine else "internet",
            agent_install=agent_install,
            egress=network.endpoints,
        )
    raise SelectionError(f"--backend={name}: unknown backend; known: {', '.join(known_backends())}")
