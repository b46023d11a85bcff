"""The egress proxy: the allowed endpoint is reachable both ways a proxy is used, nothing else is."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scaffold.errors import WorkspaceError
from scaffold.workspaces.base import endpoint_of
from scaffold.workspaces.docker.egress import EgressProxy


class Upstream:
    """A real HTTP server on loopback that counts the requests it got."""

    def __init__(self, name: str) -> None:
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(f"{self.path} connection={self.headers.get('Connection')}")
                body = f"hello from {name} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.seen = seen
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[Upstream, Upstream]]:
    allowed, other = Upstream("allowed"), Upstream("other")
    yield allowed, other
    allowed.close()
    other.close()


def opener(proxy: EgressProxy) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))


def tunnel(proxy: EgressProxy, target: str) -> tuple[bytes, socket.socket]:
    sock = socket.create_connection(proxy.address, timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            break
        head += chunk
    return head, sock


def test_plain_http_reaches_the_allowed_endpoint_only(servers: tuple[Upstream, Upstream]) -> None:
    allowed, other = servers
    with EgressProxy([f"127.0.0.1:{allowed.port}"]) as proxy:
        with opener(proxy).open(f"http://127.0.0.1:{allowed.port}/v1/messages?x=1", timeout=10) as response:
            assert response.read() == b"hello from allowed /v1/messages?x=1"
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener(proxy).open(f"http://127.0.0.1:{other.port}/steal", timeout=10)
        assert refused.value.code == 403
        assert f"127.0.0.1:{other.port} refused" in refused.value.read().decode()
        assert [r.target for r in proxy.refusals] == [f"127.0.0.1:{other.port}"]
        assert proxy.relayed == [f"127.0.0.1:{allowed.port}"]
    assert other.seen == []  # the refused server never saw a byte
    assert allowed.seen == ["/v1/messages?x=1 connection=close"]  # one request per connection


def test_connect_tunnels_to_the_allowed_endpoint_only(servers: tuple[Upstream, Upstream]) -> None:
    allowed, other = servers
    with EgressProxy([f"127.0.0.1:{allowed.port}"]) as proxy:
        head, sock = tunnel(proxy, f"127.0.0.1:{allowed.port}")
        with sock:
            assert head.startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = b""
            while chunk := sock.recv(4096):
                reply += chunk
        assert reply.endswith(b"hello from allowed /through")
        head, sock = tunnel(proxy, f"127.0.0.1:{other.port}")
        sock.close()
        assert head.startswith(b"HTTP/1.1 403")
    assert other.seen == []


def test_names_and_ports_must_match_exactly(servers: tuple[Upstream, Upstream]) -> None:
    allowed, _ = servers
    with EgressProxy([f"https://localhost:{allowed.port}/v1"]) as proxy:
        assert proxy.allowed == {f"localhost:{allowed.port}"}
        head, sock = tunnel(proxy, f"127.0.0.1:{allowed.port}")  # the same server under another name
        sock.close()
        assert head.startswith(b"HTTP/1.1 403")
        head, sock = tunnel(proxy, f"localhost:{allowed.port}")
        sock.close()
        assert head.startswith(b"HTTP/1.1 200")


def test_garbage_and_unreachable_targets_get_errors_not_hangs() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    dead_port = free.getsockname()[1]
    free.close()
    with EgressProxy([f"127.0.0.1:{dead_port}"]) as proxy:
        with socket.create_connection(proxy.address, timeout=10) as sock:
            sock.sendall(b"NONSENSE\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 400")
        head, sock = tunnel(proxy, f"127.0.0.1:{dead_port}")
        sock.close()
        assert head.startswith(b"HTTP/1.1 502")
        assert proxy.refusals[-1].reason.startswith("cannot connect")


def test_endpoint_of_defaults_ports_by_scheme() -> None:
    assert endpoint_of("https://API.Anthropic.com/v1") == "api.anthropic.com:443"
    assert endpoint_of("http://10.0.0.2:8080") == "10.0.0.2:8080"
    assert endpoint_of("http://model.local/v1") == "model.local:80"
    assert endpoint_of("api.openai.com") == "api.openai.com:443"


def test_an_address_not_on_this_machine_is_a_clear_error() -> None:
    with pytest.raises(WorkspaceError, match="must be on this machine"):
        EgressProxy(["x:1"], host="192.0.2.1").start()


def test_agents_name_their_endpoints() -> None:
    from scaffold.agents import create_agent

    claude = create_agent("claude-code", {"ANTHROPIC_API_KEY": "k"})
    assert claude.network.endpoints == ("api.anthropic.com:443",)
    local = create_agent("claude-code", {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://gw.example:8080"})
    assert local.network.endpoints == ("gw.example:8080",)
    codex = create_agent("codex", {"OPENAI_API_KEY": "k"})
    assert codex.network.endpoints == ("api.openai.com:443",)
    qoder = create_agent("qoder", {"QODER_PERSONAL_ACCESS_TOKEN": "k"})
    assert qoder.network.endpoints == ()  # unknown: open egress instead


@pytest.mark.parametrize(("value", "mode"), [("", "proxy"), ("proxy", "proxy"), ("OPEN", "open")])
def test_egress_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, mode: str) -> None:
    from scaffold.workspaces.docker import egress_mode

    monkeypatch.setenv("COMET_DOCKER_EGRESS", value)
    assert egress_mode() == mode


def test_a_wrong_egress_mode_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from scaffold.workspaces.docker import egress_mode

    monkeypatch.setenv("COMET_DOCKER_EGRESS", "wide")
    with pytest.raises(WorkspaceError, match="COMET_DOCKER_EGRESS='wide'"):
        egress_mode()
