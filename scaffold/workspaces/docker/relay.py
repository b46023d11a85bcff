"""The egress proxy of a remote engine: a relay container on the engine itself.

On this machine's engine the egress proxy runs here, on the host-only network's gateway (this machine's
side of it). A remote engine's host-only network has that engine's host as its gateway, where this
process cannot listen; so the same proxy (scaffold.workspaces.docker.egress, which imports the standard
library only) runs there instead, in a container of the base image that joins both the internal
host-only network (where the agents' containers reach it) and the engine's default bridge (from where
it reaches the model endpoint). The agents keep exactly the rule of this machine: only the endpoint's
``host:port``, everything else refused, and each refusal kept as evidence (one JSON line of the relay's
output, read back through the API).

A model endpoint on this machine's loopback (the scripted model server, a local gateway) is reached at
this machine's address as the engine's host sees it: :func:`controller_address`. The endpoint must
listen on that address (``0.0.0.0``); ``COMET_CONTROLLER_ADDRESS`` overrides the address found.

The relay carries the session's labels: the session's close removes it, and a killed session's relay is
swept with its containers by the next session on that engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker.egress import Refusal
from scaffold.workspaces.docker.sessions import OWNER, remove_container
from scaffold.workspaces.engines import Engine

__all__ = ["CONTROLLER_ADDRESS_ENV", "RELAY_PORT", "EngineRelay", "controller_address"]

RELAY_PORT: Final = 3128
CONTROLLER_ADDRESS_ENV: Final = "COMET_CONTROLLER_ADDRESS"
_READY_TIMEOUT_S: Final = 30.0


def controller_address(engine: Engine, environ: Mapping[str, str] = os.environ) -> str:
    """This machine's address as *engine*'s host reaches it: ``COMET_CONTROLLER_ADDRESS``, else the
    source address this machine uses towards the engine's host (the address the engine saw us from)."""
    override = environ.get(CONTROLLER_ADDRESS_ENV, "").strip()
    if override:
        return override
    host = urlsplit(engine.url).hostname
    if not host:
        raise WorkspaceError(f"{engine.url}: no host to find this machine's address from")
    try:
        family, _, _, _, address = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(address)  # UDP: no packet is sent, the kernel only picks the route
            return str(probe.getsockname()[0])
    except OSError as exc:
        raise WorkspaceError(
            f"cannot find this machine's address towards {host}: {exc}; set {CONTROLLER_ADDRESS_ENV}"
        ) from None


class EngineRelay:
    """One relay container on *client*'s engine, letting *allowed* (``host:port``) through; started on
    first use of :attr:`url`."""

    def __init__(
        self, client: Any, api: Any, *, image: str, network: str, allowed: Sequence[str], labels: Mapping[str, str]
    ) -> None:
        self._client = client
        self._api = api
        self._image = image
        self._network = network
        self.allowed = tuple(allowed)
        self._labels = {**OWNER, **labels, "comet-eval.role": "relay"}
        self._container: str | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            self._url = self._start()
        return self._url

    def _start(self) -> str:
        from scaffold.workspaces.docker import egress

        source = Path(egress.__file__).read_text(encoding="utf-8")
        name = f"comet-eval-relay-{uuid.uuid4().hex[:12]}"
        api = self._api
        try:
            created = api.create_container(
                self._image,
                command=["python3", "-c", source, str(RELAY_PORT), *self.allowed],
                name=name,
                labels=self._labels,
                host_config=api.create_host_config(network_mode=self._network),
                entrypoint=[],
            )
            self._container = str(created["Id"])
            # On the bridge as well: the one way out of the internal network, and only for this container.
            api.connect_container_to_network(self._container, "bridge")
            api.start(self._container)
        except Exception as exc:
            self.close()
            raise WorkspaceError(f"cannot start the egress relay on the engine: {exc}") from None
        address = self._address()
        self._wait_listening()
        return f"http://{address}:{RELAY_PORT}"

    def _address(self) -> str:
        assert self._container is not None
        networks = (self._api.inspect_container(self._container).get("NetworkSettings") or {}).get("Networks") or {}
        address = (networks.get(self._network) or {}).get("IPAddress")
        if not address:
            self.close()
            raise WorkspaceError(f"the egress relay has no address on the network {self._network}")
        return str(address)

    def _wait_listening(self) -> None:
        assert self._container is not None
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if any("listening" in line for line in self._lines()):
                return
            state = (self._api.inspect_container(self._container).get("State") or {}).get("Status")
            if state not in ("created", "running"):
                output = self._output()[-1000:]
                self.close()
                raise WorkspaceError(f"the egress relay stopped ({state}): {output}")
            time.sleep(0.05)
        self.close()
        raise WorkspaceError(f"the egress relay did not start listening in {_READY_TIMEOUT_S:.0f} s")

    def _output(self) -> str:
        if self._container is None:
            return ""
        try:
            raw = self._api.logs(self._container, stdout=True, stderr=True)
        except Exception:
            return ""
        return bytes(raw).decode("utf-8", "replace")

    def _lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self._output().splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    lines.append(value)
        return lines

    @property
    def refusals(self) -> list[Refusal]:
        """What the relay refused so far, read from its output."""
        return [
            Refusal(str(line["refused"]), str(line.get("reason", ""))) for line in self._lines() if "refused" in line
        ]

    def close(self) -> None:
        container, self._container = self._container, None
        self._url = None
        if container is not None:
            remove_container(self._api, container)
