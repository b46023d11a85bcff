"""The backend of a session, by name: ``local`` (built in, needs nothing) or ``docker``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from scaffold.errors import SelectionError, WorkspaceError
from scaffold.workspaces.base import NO_NETWORK, AgentNetwork, Backend, InstallSpec
from scaffold.workspaces.engines import Engine, default_engine
from scaffold.workspaces.local import LocalBackend
from scaffold.workspaces.owners import sweep_dead

__all__ = ["create_backend", "known_backends", "sweep_crashed"]


def known_backends() -> list[str]:
    return ["docker", "local"]


def create_backend(
    name: str,
    *,
    workspace_root: Path,
    network: AgentNetwork = NO_NETWORK,
    agent_install: InstallSpec | None = None,
    image_aliases: Mapping[str, str] | None = None,
    engines: Sequence[Engine] = (),
    pool: Sequence[Engine] = (),
    say: Callable[[str], None] | None = None,
    private: Sequence[Path] = (),
    confine: bool = True,
    session_token: str | None = None,
) -> Backend:
    """The backend *name*, making workspaces under *workspace_root*.

    *network* is what the agent must reach (scaffold.workspaces.base.AgentNetwork); *agent_install* is its
    program, made available in every workspace. The local backend needs neither: its commands run on
    this machine, with this machine's network and programs. The docker backend gives the agent's
    container a network only when *network* asks for one: this machine only (an endpoint served here),
    only the listed endpoints through the egress proxy, or else the engine's default bridge.
    *image_aliases* (docker only): ``REF -> LOCAL`` for the images Harbor-format Dockerfiles name
    (scaffold.workspaces.image_aliases). *engines* (docker only): the live engines of a pool in this
    worker's order (scaffold.workspaces.engines.order), the first one bound; empty: the environment's
    engine. *pool*: every engine of the pool, where a missing base image may be copied from. *say*
    reports an engine that dies. *private* (local only): folders the agents must not reach besides the
    workspaces, the experiment's (a container sees none of the host's folders anyway); *confine* (local
    only) False for an agent that runs no program of its own (scaffold.workspaces.confine).
    *session_token* (docker only): shared by the session's processes; a task image that cannot be built is
    built once under it (scaffold.workspaces.docker.build_failures).
    """
    # What killed sessions left (workspaces, control folders, agents' HOMEs) goes before this one makes its own.
    sweep_dead(workspace_root)
    if name == "local":
        return LocalBackend(workspace_root, private=private, confine=confine)
    if name == "docker":
        # Imported only when chosen: the docker SDK costs about a tenth of a second to import.
        from scaffold.workspaces.docker import DockerBackend

        def make(engine: Engine | None) -> DockerBackend:
            return DockerBackend(
                workspace_root,
                network=network.enabled,
                network_scope="host" if network.on_this_machine else "internet",
                agent_install=agent_install,
                egress=network.endpoints,
                image_aliases=image_aliases,
                engine=engine,
                image_sources=[default_engine(os.environ), *pool],
                session_token=session_token,
            )

        if not engines:
            return make(None)
        from scaffold.workspaces.docker.pool import PoolBackend

        return PoolBackend(engines, make, say=say)
    raise SelectionError(f"--backend={name}: unknown backend; known: {', '.join(known_backends())}")


def sweep_crashed(name: str, engines: Sequence[Engine] = ()) -> None:
    """Remove now what crashed processes left in the engine of backend *name* (docker; nothing else keeps
    state outside the workspace root). For a pytest-xdist controller whose worker died (SIGKILL, the OOM
    killer): that worker never closes its backend, and the workers whose close would sweep it may have
    closed already (xdist shuts a worker down once its last test is sent), so nobody else might. With a
    pool, every engine of *engines* (the environment's otherwise)."""
    if name != "docker":
        return
    from scaffold.workspaces.docker import sweep
    from scaffold.workspaces.docker.engine import connect

    targets: list[Engine | None] = [*engines] or [None]
    for engine in targets:
        try:
            client = connect(engine, timeout=30)
        except WorkspaceError:
            continue  # no engine: nothing of ours runs in it
        try:
            sweep(client)
        except Exception:
            pass  # a container that resists removal, an engine dying: the next session's sweep tries again
        finally:
            client.close()
