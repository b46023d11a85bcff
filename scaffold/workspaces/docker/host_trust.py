"""The host's CA bundle and proxy settings, for images and containers that reach PyPI, Debian or npm.

Behind a corporate (TLS-intercepting) proxy, HTTPS from inside a container fails unless the container
trusts the proxy's CA, which the host has in its bundle and the image has not. So a Harbor-format task's
build gets the host's bundle (:mod:`.dockerfile` copies it in after every ``FROM`` and points pip,
requests, curl, uv, openssl, git and node at it), and its containers get the same variables (the lead's
runtime copies the bundle to :data:`HOST_CA_PATH` in a prebuilt ``docker_image``). The proxy variables
of the host go to the build as Docker's predefined build arguments (never stored in the image).

Which bundle, first found wins (only an existing file counts):

1. ``$COMET_CA_BUNDLE`` (``none`` turns the injection off);
2. ``$PIP_CERT``, ``$REQUESTS_CA_BUNDLE``, ``$SSL_CERT_FILE``;
3. ``cert =`` in pip's configuration files, in pip's precedence (``$PIP_CONFIG_FILE``,
   ``~/.config/pip/pip.conf``, ``~/.pip/pip.conf``, ``/etc/xdg/pip/pip.conf``, ``/etc/pip.conf``): a host
   whose pip is set up for the proxy says where its bundle is.

The bundle replaces the image's own trust store for those tools, so it must hold the public CAs as well
(``/etc/ssl/certs/ca-certificates.crt`` after ``update-ca-certificates`` does); ``NODE_EXTRA_CA_CERTS``
adds to node's own.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "CA_BUNDLE_ENV",
    "CA_ENV_NAMES",
    "HOST_CA_PATH",
    "PROXY_NAMES",
    "ca_environment",
    "host_ca_bundle",
    "installer_environment",
    "proxy_build_args",
]

CA_BUNDLE_ENV = "COMET_CA_BUNDLE"
HOST_CA_PATH = "/usr/local/share/comet-eval/host-ca.pem"
"""Where the host's bundle goes inside an image or container."""
CA_ENV_NAMES = (
    "PIP_CERT",  # pip
    "REQUESTS_CA_BUNDLE",  # requests (and what uses it)
    "CURL_CA_BUNDLE",  # curl
    "SSL_CERT_FILE",  # openssl's default, Python's ssl, uv
    "GIT_SSL_CAINFO",  # git over https
    "NODE_EXTRA_CA_CERTS",  # node and npm: added to node's own store
)
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "FTP_PROXY", "ALL_PROXY")
"""Docker's predefined build arguments (each also in lower case): no ``ARG`` line needed, not in history."""
_DIRECT = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")


def host_ca_bundle(
    environ: Mapping[str, str] | None = None, *, pip_configs: Sequence[Path] | None = None
) -> Path | None:
    """The host's CA bundle (see the module docstring for the order), or None when it has none."""
    env = os.environ if environ is None else environ
    explicit = env.get(CA_BUNDLE_ENV, "").strip()
    if explicit.lower() == "none":
        return None
    for value in (explicit, *(env.get(name, "").strip() for name in _DIRECT)):
        if value and Path(value).is_file():
            return Path(value).absolute()
    for config in _pip_configs(env) if pip_configs is None else pip_configs:
        cert = _pip_cert(config)
        if cert is not None and cert.is_file():
            return cert.absolute()
    return None


def installer_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """*environ* (the process's) for npm run on this machine: node told to trust the host's bundle too
    (``NODE_EXTRA_CA_CERTS``) when the host has one and nothing says so already. pip reads its own
    configuration (where the bundle was found), npm does not: a host set up for a TLS-intercepting proxy
    through pip alone would otherwise install agent CLIs only from a shell that exported the variable."""
    env = dict(os.environ if environ is None else environ)
    if not env.get("NODE_EXTRA_CA_CERTS"):
        bundle = host_ca_bundle(env)
        if bundle is not None:
            env["NODE_EXTRA_CA_CERTS"] = str(bundle)
    return env


def ca_environment(path: str = HOST_CA_PATH) -> dict[str, str]:
    """The variables that make pip, requests, curl, uv, openssl, git and node trust the bundle at *path*
    (inside a container)."""
    return dict.fromkeys(CA_ENV_NAMES, path)


def proxy_build_args(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host's proxy variables that are set (upper and lower case, as Docker's build arguments)."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name in PROXY_NAMES:
        for key in (name, name.lower()):
            if env.get(key):
                out[key] = env[key]
    return out


def _pip_configs(env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME") or Path.home())
    found = [Path(env["PIP_CONFIG_FILE"])] if env.get("PIP_CONFIG_FILE") else []
    xdg = [Path(p) / "pip" / "pip.conf" for p in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if p]
    # pip's own precedence: the named file over the user's over the machine's.
    return [*found, home / ".config" / "pip" / "pip.conf", home / ".pip" / "pip.conf", *xdg, Path("/etc/pip.conf")]


def _pip_cert(config: Path) -> Path | None:
    """``cert`` of ``[global]`` (or ``[install]``) in a pip configuration file."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(config, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    for section in ("global", "install"):
        value = parser.get(section, "cert", fallback="").strip()
        if value:
            return Path(value).expanduser()
    return None
