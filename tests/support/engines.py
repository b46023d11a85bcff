"""Docker engines on "other hosts", for tests: each a ``dockerd`` in a network namespace of its own,
reached over TCP with TLS (client certificates, as a remote engine is reached), in a mount namespace
whose ``/tmp`` is private, so it cannot see the folders where the harness keeps workspaces.

Needs root, iproute2, util-linux (nsenter, unshare), openssl and ``dockerd``: what ``.ci/run``
provisions. Data roots are kept between runs (like the CI engine's), so an image loaded into an engine
once stays there. :func:`missing` says what is absent; callers decide whether to skip or fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.netns import FarHost

CERTS = Path("/var/lib/comet-test-engine-certs")
"""The CA, each engine's server certificate, and the client's, per engine IP: ``client/<ip>/``
(``DOCKER_CERT_PATH=client``: the per-host folder convention of scaffold.workspaces.engines)."""


def missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network and mount namespaces)"
    for tool in ("ip", "nsenter", "unshare", "dockerd", "openssl"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def _ec_key(path: Path) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(path))


def _sign(name: str, subject: str, extensions: str, folder: Path) -> None:
    """``<name>-key.pem`` and ``<name>-cert.pem`` in *folder*, signed by the test CA."""
    _ec_key(folder / f"{name}-key.pem")
    (folder / f"{name}.ext").write_text(extensions)
    _openssl(
        "req", "-new", "-key", str(folder / f"{name}-key.pem"), "-out", str(folder / f"{name}.csr"), "-subj", subject
    )
    _openssl(
        "x509", "-req", "-in", str(folder / f"{name}.csr"), "-CA", str(CERTS / "ca.pem"),
        "-CAkey", str(CERTS / "ca-key.pem"), "-CAcreateserial", "-out", str(folder / f"{name}-cert.pem"),
        "-days", "30", "-extfile", str(folder / f"{name}.ext"),
    )  # fmt: skip


def ensure_certificates(ip: str) -> Path:
    """The certificates for an engine at *ip* (made once); returns the client's folder for it."""
    CERTS.mkdir(parents=True, exist_ok=True)
    if not (CERTS / "ca.pem").exists():
        _ec_key(CERTS / "ca-key.pem")
        _openssl(
            "req", "-x509", "-new", "-key", str(CERTS / "ca-key.pem"), "-out", str(CERTS / "ca.pem"),
            "-days", "30", "-subj", "/CN=comet-eval test CA",
        )  # fmt: skip
    engine = CERTS / "engines" / ip
    client = CERTS / "client" / ip
    if not (client / "cert.pem").exists():
        engine.mkdir(parents=True, exist_ok=True)
        client.mkdir(parents=True, exist_ok=True)
        _sign("server", f"/CN={ip}", f"subjectAltName=IP:{ip}\nextendedKeyUsage=serverAuth\n", engine)
        _sign("client", "/CN=comet-eval test client", "extendedKeyUsage=clientAuth\n", engine)
        shutil.copyfile(CERTS / "ca.pem", client / "ca.pem")
        shutil.copyfile(engine / "client-cert.pem", client / "cert.pem")
        shutil.copyfile(engine / "client-key.pem", client / "key.pem")
    return client


@dataclass
class FarEngine:
    """One engine on its own "host". *index* picks its addresses: 10.231.(90+index).1/2."""

    name: str
    index: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def far(self) -> FarHost:
        return FarHost(f"comet-{self.name}", f"cmt{self.name[:6]}0", f"cmt{self.name[:6]}1", self.host_ip, self.ip)

    @property
    def ip(self) -> str:
        return f"10.231.{90 + self.index}.2"

    @property
    def host_ip(self) -> str:
        return f"10.231.{90 + self.index}.1"

    @property
    def url(self) -> str:
        return f"tcp://{self.ip}:2376"

    @property
    def root(self) -> Path:
        return Path(f"/var/lib/comet-test-engine-{self.name}")

    @property
    def pidfile(self) -> Path:
        return Path(f"/run/comet-test-engine-{self.name}.pid")

    @property
    def log(self) -> Path:
        return Path(f"/tmp/comet-test-engine-{self.name}.log")

    @property
    def client_certs(self) -> Path:
        return CERTS / "client" / self.ip

    def start(self, *, fresh_network: bool = True) -> None:
        """Start the engine (after stopping one left by an earlier run) and wait until it answers."""
        self.stop()
        if fresh_network:
            self.far.create()
        ensure_certificates(self.ip)
        engine_certs = CERTS / "engines" / self.ip
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        (self.root / "exec").mkdir(parents=True, exist_ok=True)
        # nsenter, not `ip netns exec`: the latter remounts /sys, hiding the cgroup hierarchy dockerd needs.
        script = (
            f"mount -t tmpfs tmpfs /tmp && exec dockerd --data-root {self.root / 'data'} "
            f"--exec-root {self.root / 'exec'} --pidfile {self.pidfile} -H {self.url} --tlsverify "
            f"--tlscacert {CERTS / 'ca.pem'} --tlscert {engine_certs / 'server-cert.pem'} "
            f"--tlskey {engine_certs / 'server-key.pem'}"
        )
        enter = ["nsenter", f"--net=/run/netns/{self.far.netns}", "unshare", "--mount", "--propagation", "private"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*enter, "sh", "-c", script], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.wait()

    def client(self, timeout: float = 120) -> Any:
        """A client of this engine, through the harness's own connection (TLS with the test CA), pinged."""
        from scaffold.workspaces.docker.engine import connect
        from scaffold.workspaces.engines import Engine

        return connect(Engine(self.url, tls=True, tls_verify=True, cert_path=self.client_certs), timeout=timeout)

    def wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client(timeout=5).close()
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no log)"
                    raise RuntimeError(f"the engine {self.url} did not answer: {exc}\n{tail}") from None
                time.sleep(0.3)

    def kill(self) -> None:
        """SIGKILL the engine, as a host that dies: its API stops answering at once."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int(self.pidfile.read_text().strip()), signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)

    def stop(self) -> None:
        """Stop the engine and leave its namespace up; quiet when it is not running."""
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            pid = int(self.pidfile.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            for _ in range(150):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        self.pidfile.unlink(missing_ok=True)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process = None

    def remove(self) -> None:
        """Kill the engine (a graceful stop waits ~15 s for its containers) and remove its namespace."""
        self.kill()
        self.pidfile.unlink(missing_ok=True)
        self.process = None
        self.far.remove()

    def load_image(self, source: Any, tag: str) -> None:
        """Copy *tag* from the engine *source* unless this engine has it already."""
        client = self.client(timeout=600)
        try:
            try:
                client.images.get(tag)
            except Exception:
                client.images.load(source.images.get(tag).save(named=True))
        finally:
            client.close()
