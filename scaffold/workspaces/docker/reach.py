"""Whether an agent's containers can reach a model endpoint served on this machine's loopback, asked
once before any trial.

A container reaches this machine at its network's gateway, never at 127.0.0.1 (its own loopback), so
the harness points a loopback base URL at the gateway (scaffold.agents.cli). A server that listens on
127.0.0.1 only (the model server's default) does not answer there: every model call of every trial
then retried for minutes and the trial was excluded as network noise. So a session on this machine's
engine asks first: a TCP connection from here to the endpoint's port at the engine's bridge gateway,
an address of this machine where a server bound to every address answers and one bound to loopback
does not.
"""

from __future__ import annotations

import socket
from typing import Any

__all__ = ["loopback_problem"]

_CONNECT_TIMEOUT_S = 2.0


def loopback_problem(endpoint: str, client: Any) -> str | None:
    """Why the containers of the engine *client* talks to cannot reach *endpoint* (``host:port`` on this
    machine's loopback); None when they can, or when the engine does not say where its bridge is."""
    host, _, port_text = endpoint.rpartition(":")
    host, port = host.strip("[]") or "127.0.0.1", int(port_text)
    gateway = _bridge_gateway(client)
    if gateway is None or _answers(gateway, port):
        return None
    if not _answers(host, port):
        return f"nothing answers at the model endpoint {endpoint}: start the model server (or gateway) first"
    return (
        f"the model endpoint {endpoint} listens on this machine's loopback only, and a Docker container "
        f"reaches this machine at {gateway}, where nothing answers on port {port}: serve it on every "
        f"address (comet model-server ... --host 0.0.0.0), or run with --backend local"
    )


def _bridge_gateway(client: Any) -> str | None:
    try:
        configs = client.api.inspect_network("bridge").get("IPAM", {}).get("Config") or []
    except Exception:  # an engine without the default bridge (rootless setups, other runtimes)
        return None
    return next((str(c["Gateway"]) for c in configs if c.get("Gateway") and ":" not in c["Gateway"]), None)


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError:
        return False
    return True
