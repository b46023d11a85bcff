"""The agent's network in the docker backend: which network its container joins, and leaving it.

Validation never has a network. The agent's container, when the agent calls a model endpoint, joins:

* the internal **host-only** network (its only reachable peer is this machine, the network's gateway)
  for an endpoint served on this machine;
* the same host-only network with ``HTTPS_PROXY`` pointing at the egress proxy on its gateway
  (scaffold.workspaces.docker.egress), which opens connections to the endpoint's ``host:port`` only,
  for a provider elsewhere whose address is known;
* the engine's default **bridge** otherwise (an unknown endpoint, or ``COMET_DOCKER_EGRESS=open``).

On a remote engine (``tcp://``, ``ssh://``) the host-only network's gateway is the engine's host, not
this machine, so the proxy runs there, as a relay container (scaffold.workspaces.docker.relay), with the
same allow-list: the provider's endpoint, or for an endpoint on this machine's loopback, this machine's
address as the engine sees it (the agent's base URL is rewritten to that address).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.egress import EgressProxy, Refusal
from scaffold.workspaces.docker.engine import engine_lock
from scaffold.workspaces.docker.relay import EngineRelay, controller_address
from scaffold.workspaces.docker.sessions import OWNER
from scaffold.workspaces.engines import Engine

__all__ = ["EGRESS_ENV", "HOST_ONLY_NETWORK", "AgentNetworking", "egress_mode"]

HOST_ONLY_NETWORK: Final = "comet-eval-host-only"
EGRESS_ENV: Final = "COMET_DOCKER_EGRESS"
_PROXY_VARIABLES: Final = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")


def egress_mode() -> Literal["proxy", "open"]:
    """``COMET_DOCKER_EGRESS``: ``proxy`` (default) lets an agent reach only its model endpoint, through
    the egress proxy; ``open`` gives it the engine's default bridge (for a remote engine, where this
    machine cannot serve a proxy on the engine's network)."""
    value = os.environ.get(EGRESS_ENV, "proxy").strip().lower() or "proxy"
    if value not in ("proxy", "open"):
        raise WorkspaceError(f"{EGRESS_ENV}={value!r}: use proxy (only the model endpoint) or open (any host)")
    return "proxy" if value == "proxy" else "open"


class AgentNetworking:
    """The network the agents' containers of one backend join (see the module docstring)."""

    def __init__(
        self,
        client: Any,
        api: Any,
        *,
        scope: Literal["host", "internet"],
        endpoints: Sequence[str],
        engine: Engine | None = None,
        relay_image: Callable[[], str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self._client = client
        self._api = api
        self._engine = engine
        self.remote = engine is not None and not engine.local
        """The engine is elsewhere: the proxy is a relay container there, and this machine is reached at
        :attr:`controller`, through it."""
        # Found only for an endpoint on this machine: nothing else is rewritten to it.
        self.controller: str | None = None
        if engine is not None and self.remote and scope == "host":
            self.controller = controller_address(engine)
        egress: tuple[str, ...] = ()
        if scope == "internet" and egress_mode() == "proxy":
            egress = tuple(endpoints)
        elif self.controller is not None:
            # The endpoint listens on this machine's loopback port: reached at this machine's address.
            egress = tuple(f"{_bracket(self.controller)}:{e.rpartition(':')[2]}" for e in endpoints)
        self.egress = egress
        """The endpoints reached through the egress proxy (or relay); empty when there is none."""
        self.host_only = scope == "host" or bool(self.egress)
        self.name = HOST_ONLY_NETWORK if self.host_only else "bridge"
        self._ready = not self.host_only
        self._proxy: EgressProxy | None = None
        self._relay: EngineRelay | None = None
        self._relay_image = relay_image
        self._labels = dict(labels or {})
        self._gateway: str | None = None

    def mode(self) -> str:
        """The ``network_mode`` of an agent's container; the internal host-only network is created on first
        use, by one process at a time per engine (:meth:`_ensure_network`)."""
        if not self._ready:
            with engine_lock(self._engine, f"network-{self.name}"):
                self._ensure_network()
            self._ready = True
        return self.name

    def _ensure_network(self) -> None:
        """Make the host-only network unless it is there. An engine does not refuse a second network of
        the same name: workers that each found none and created one left several, and every later use
        of the name was refused as ambiguous. So creation takes the engine's lock here (and asks the
        engine to check, for sessions of other machines), and duplicates a lost race left are removed,
        keeping the oldest."""
        import docker.errors

        found = [n for n in self._client.networks.list(names=[self.name]) if n.name == self.name]
        if not found:
            try:
                self._client.networks.create(
                    self.name, driver="bridge", internal=True, labels=dict(OWNER), check_duplicate=True
                )
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise WorkspaceError(f"cannot create the network {self.name}: {exc}") from exc
            return
        found.sort(key=lambda n: (str(n.attrs.get("Created", "")), n.id))
        for extra in found[1:]:
            try:
                extra.remove()
            except docker.errors.APIError as exc:
                if exc.status_code != 404:
                    raise WorkspaceError(
                        f"the engine has {len(found)} networks named {self.name}, and {extra.id[:12]} cannot be "
                        f"removed ({exc}); remove the extra ones (docker network rm ID) and run again"
                    ) from exc

    def dns_options(self) -> list[str] | None:
        # On the host-only network no name outside resolves, and Docker's DNS takes 10 s to say so;
        # answer fast instead, or every lookup an agent CLI tries (telemetry, updates) costs 10 s.
        return ["timeout:1", "attempts:1"] if self.host_only else None

    def proxy_environment(self) -> dict[str, str]:
        """The variables that send an agent's HTTP(S) through the egress proxy (none without one)."""
        if not self.egress:
            return {}
        proxy = self._egress_proxy()
        local = "localhost,127.0.0.1"
        return {**dict.fromkeys(_PROXY_VARIABLES, proxy), "NO_PROXY": local, "no_proxy": local}

    def _egress_proxy(self) -> str:
        """The proxy's URL as containers see it, started on first use: on the host-only network's gateway
        address (this machine's side of that network), or as the relay of a remote engine."""
        if self.remote:
            if self._relay is None:
                if self._relay_image is None:
                    raise WorkspaceError("a remote engine's egress relay needs an image")
                self._relay = EngineRelay(
                    self._client,
                    self._api,
                    image=self._relay_image(),
                    network=self.mode(),
                    allowed=self.egress,
                    labels=self._labels,
                )
            return self._relay.url
        if self._proxy is None:
            network = self._client.networks.get(self.mode())
            configs = (network.attrs.get("IPAM") or {}).get("Config") or []
            gateway = next((c.get("Gateway") for c in configs if c.get("Gateway")), None)
            if not gateway:
                raise WorkspaceError(f"the network {self.name} has no gateway address for the egress proxy")
            self._proxy = EgressProxy(self.egress, host=gateway).start()
        return self._proxy.url

    @property
    def refusals(self) -> list[Refusal]:
        """Connections the egress proxy refused so far (targets other than the model endpoint)."""
        if self._relay is not None:
            return self._relay.refusals
        return list(self._proxy.refusals) if self._proxy else []

    def gateway(self, container_id: str) -> str | None:
        """This machine's address as the agent's containers reach it, the same for every container: the
        agent network's gateway (inspected once), or on a remote engine the address the engine sees."""
        if self.controller is not None:
            return self.controller
        if self._gateway is None:
            settings = self._api.inspect_container(container_id).get("NetworkSettings") or {}
            networks = settings.get("Networks") or {}
            # The agent's network first: a compose task's container is on the trial's network too.
            ours = (networks.get(self.name) or {}).get("Gateway")
            gateways = [n.get("Gateway") for n in networks.values()]
            self._gateway = next((g for g in [ours, settings.get("Gateway"), *gateways] if g), None)
        return self._gateway

    def leave(self, container_id: str) -> bool:
        """Disconnect a container from the agent's network (forced); False when the engine refuses."""
        try:
            self._api.disconnect_container_from_network(container_id, self.name, force=True)
        except Exception:
            return False
        return True

    def join_bridge(self, container_id: str) -> None:
        """Put a container on the engine's default bridge as well (a Harbor verifier that the task lets
        reach the internet, after an agent that had only its endpoint)."""
        if self.name == "bridge":
            return
        try:
            self._api.connect_container_to_network(container_id, "bridge")
        except Exception as exc:
            raise WorkspaceError(f"cannot put the container {container_id[:12]} on the bridge network: {exc}") from None

    def proxy_reset(self) -> dict[str, str]:
        """Variables that undo :meth:`proxy_environment` for one command (empty values: no proxy)."""
        if not self.egress:
            return {}
        return dict.fromkeys((*_PROXY_VARIABLES, "NO_PROXY", "no_proxy"), "")

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None


def _bracket(address: str) -> str:
    return f"[{address}]" if ":" in address else address
