"""The offline base images of the docker backend, ``comet-eval/base:<release>`` (bookworm, trixie).

No registry is reachable where evaluations run, so nothing is ever pulled: an image is made with
``debootstrap`` from the Debian mirror the machine's apt already uses, then imported through the Docker
API (``comet images build-base --release bookworm|trixie``). Building it takes a file lock, so
pytest-xdist workers (or two shells) build it once.

``comet-eval/base:bookworm`` is what our own tasks build ``FROM ${BASE_IMAGE}``. Both releases are also
local stand-ins for the ``python:*``, ``debian:*`` and ``ubuntu:*`` images Harbor-format tasks name (each
maps to one by default: scaffold.workspaces.stand_ins): the same commands, ``python``/``pip`` under the
names those images use, the interpreter's headers as they have them, and pip allowed to install into the
system Python (PEP 668) as it is there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from scaffold.errors import WorkspaceError
from scaffold.util.process_result import tail
from scaffold.util.run_process import run_captured, run_process, streamed
from scaffold.workspaces.docker.engine import connect, file_lock, image_id, safe_name, state_dir
from scaffold.workspaces.stand_ins import STAND_INS, version_text

__all__ = [
    "APT_PACKAGES",
    "BASE_ENV",
    "BASE_PACKAGES",
    "BASE_SUITE",
    "BASE_TAG",
    "PIP_SETUP",
    "RELEASES",
    "BaseImage",
    "base_tag",
    "build_base_image",
    "debian_mirror",
]

BASE_SUITE = "bookworm"
BASE_TAG = "comet-eval/base:bookworm"
RELEASES: Mapping[str, str] = {s.release: version_text(s.python) for s in STAND_INS}
"""The Debian releases ``comet images build-base --release`` knows, with the Python each ships (the
stand-ins of scaffold.workspaces.stand_ins, which says why there is no 3.12)."""
# Everything a task script, a validation script or an npm-installed agent CLI needs, and the commands the
# python:*-slim and ubuntu:* images have (bash, coreutils, grep, sed, mawk, findutils, tar, gzip, procps,
# ca-certificates, apt-get and dpkg: most are Essential, so minbase has them; named anyway, so a release
# that demotes one still has it). util-linux (setsid, kill) is Essential. Node.js comes from Debian itself.
# curl is not in those images, but it is here: Harbor verifiers and Dockerfiles `apt-get install curl` to
# bootstrap uv, and with curl present that step is a no-op that works where no Debian mirror is
# reachable (the uv download after it then fails the documented way, not with "curl: not found").
BASE_PACKAGES = (
    "python3",
    "nodejs",
    "ca-certificates",
    "bash",
    "coreutils",
    "procps",
    "git",
    "grep",
    "sed",
    "mawk",
    "findutils",
    "tar",
    "gzip",
    "curl",
)
# npm depends on virtual packages (node-has, node-cli-table3, node-cssesc...) that debootstrap's resolver
# cannot satisfy (it ignores Provides); apt-get inside the new root resolves them, so npm goes there, and
# so do venv (with the release's pip and setuptools wheels) and python (python-is-python3).
# python3-dev: the official python:* images, -slim ones too, carry the interpreter's headers (Python.h,
# python3-config) because they build CPython from source; a package without a wheel for the image's Python
# compiles against them (SkillsBench's exoplanet-detection-period: batman-package, after the Dockerfile's
# own `apt-get install build-essential`). No compiler comes with it: the -slim images have none either,
# and the tasks that compile install gcc themselves, as they must on those images (their non-slim
# siblings add gcc and ~400 MB of -dev libraries, which no stand-in tries to match).
APT_PACKAGES = ("npm", "python3-venv", "python-is-python3", "python3-dev")
PIP_SETUP = (
    'python3 "$(ls /usr/share/python-wheels/pip-*.whl)/pip" install --ignore-installed --no-index '
    "--find-links /usr/share/python-wheels pip setuptools && pip --version"
)
"""pip and setuptools as the official python images have them: installed by pip itself into /usr/local
(pip run from the wheel Debian ships for venv, offline), never as Debian packages. Debian's python3-pip
marks its pip "installed by debian", so a Dockerfile's ``pip install --upgrade pip==25.2`` (common in
Terminal-Bench 2) failed with "Cannot uninstall pip"; a pip that pip installed upgrades. (Debian
disables ``ensurepip`` for the system Python, hence the wheel run as a program, which pip supports.)
setuptools comes on every release, as tasks written for python:3.11 expect it; wheel does not: Debian
ships no wheel of it, and the python:3.12+ images no longer have it either."""
BASE_ENV: Mapping[str, str] = {
    "LANG": "C.UTF-8",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    # Debian marks its Python externally managed (PEP 668); python:*-slim images do not, and tasks
    # written for them `pip install` into the system Python.
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
}
OWNER_LABEL = "comet-eval.owner"
OWNER = "comet-eval"
DEBOOTSTRAP_TIMEOUT_S = 1800.0
IMPORT_TIMEOUT_S = 1800.0
"""The longest the root file system's tar may take to stream into the engine's import."""
# Plain Debian suites: a mirror serving one serves the others (the fallback of debian_mirror).
_DEBIAN_SUITES = frozenset(
    ("buster", "bullseye", "bookworm", "trixie", "forky", "sid", "oldstable", "stable", "testing", "unstable")
)


def base_tag(release: str) -> str:
    """``comet-eval/base:<release>``."""
    return f"comet-eval/base:{release}"


Log = Callable[[str], None]


def _say(message: str) -> None:
    print(message, flush=True)


def debian_mirror(apt_dir: Path = Path("/etc/apt"), suite: str = BASE_SUITE) -> str:
    """The Debian mirror apt uses for *suite*: ``sources.list``, ``sources.list.d/*.list`` and ``*.sources``;
    for a Debian release apt does not list (trixie on a bookworm machine), the mirror of one it does."""
    entries: list[tuple[str, str]] = []  # (uri, suite)
    files = [apt_dir / "sources.list"]
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        entries += _deb822_entries(text) if path.suffix == ".sources" else _one_line_entries(text)
    web = [(uri, s) for uri, s in entries if uri.startswith(("http://", "https://", "ftp://", "file:"))]
    for uri, entry_suite in web:
        if entry_suite == suite:
            return uri
    # A machine running bookworm lists no trixie mirror, but the archive serving its release serves every
    # Debian release (deb.debian.org/debian, or a local mirror of it): use that for another plain suite.
    if suite in _DEBIAN_SUITES:
        for uri, entry_suite in web:
            if entry_suite in _DEBIAN_SUITES:
                return uri
    raise WorkspaceError(
        f"no Debian mirror for {suite!r} in {apt_dir}/sources.list or {apt_dir}/sources.list.d/; "
        "pass one explicitly (e.g. --mirror http://deb.debian.org/debian)"
    )


def _one_line_entries(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()  # drop "[signed-by=...]"
        if len(words) >= 3 and words[0] == "deb":
            out.append((words[1], words[2]))
    return out


def _deb822_entries(text: str) -> list[tuple[str, str]]:
    out = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        out += [(uri, s) for uri in fields.get("uris", "").split() for s in fields.get("suites", "").split()]
    return out


@dataclass(frozen=True, slots=True)
class BaseImage:
    tag: str
    image_id: str
    built: bool  # False when an existing image was reused
    duration_s: float
    recipe: Mapping[str, Any] = field(default_factory=dict)


def build_base_image(
    tag: str = BASE_TAG,
    *,
    mirror: str | None = None,
    suite: str = BASE_SUITE,
    packages: Sequence[str] = BASE_PACKAGES,
    apt_packages: Sequence[str] = APT_PACKAGES,
    force: bool = False,
    log: Log = _say,
    client: Any = None,
    apt_dir: Path = Path("/etc/apt"),
) -> BaseImage:
    """Make the offline base image: ``debootstrap --variant=minbase --include=<packages>`` *suite*, then
    ``apt-get install <apt_packages>`` inside that root, imported as *tag* through the Docker API.

    Reuses an existing *tag* unless *force*, or unless it was made from another recipe (suite, packages,
    environment: an image of an older version of this function lacks what is expected of it). Needs root
    and ``debootstrap`` (apt-get install debootstrap);
    takes one to two minutes, most of it downloading packages from *mirror* (default: apt's own). Only
    the Debian mirror is contacted; nothing is pulled from an image registry.
    """
    t0 = time.monotonic()
    client = client or connect(timeout=600)
    with file_lock(f"base-{tag}"):  # pytest-xdist workers (or two shells) build it once
        return _build_base_locked(tag, mirror, suite, packages, apt_packages, force, log, client, apt_dir, t0)


def _build_base_locked(
    tag: str,
    mirror: str | None,
    suite: str,
    packages: Sequence[str],
    apt_packages: Sequence[str],
    force: bool,
    log: Log,
    client: Any,
    apt_dir: Path,
    t0: float,
) -> BaseImage:
    existing = image_id(client, tag)
    wanted = {
        "suite": suite,
        "packages": list(packages),
        "apt_packages": list(apt_packages),
        "env": dict(BASE_ENV),
        "pip": PIP_SETUP,
    }
    if existing and not force:
        recipe = _recipe_of(client, tag)
        stale = {key for key, value in wanted.items() if recipe.get(key) != value}
        if not stale or recipe.get("tool") != "debootstrap":  # an image of the user's own: theirs to replace
            log(f"{tag} already exists ({existing[:19]}); reusing it (force a rebuild with --force)")
            return BaseImage(tag, existing, False, time.monotonic() - t0, recipe)
        # An image of an older recipe (fewer packages): what tasks and aliases expect of it is missing.
        log(f"{tag} ({existing[:19]}) was built with another {', '.join(sorted(stale))}; rebuilding it")
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if debootstrap is None:
        raise WorkspaceError("debootstrap is not installed; install it: apt-get install -y debootstrap")
    if os.geteuid() != 0:
        raise WorkspaceError("debootstrap must run as root to build the base image; run this command as root")
    mirror = mirror or debian_mirror(apt_dir, suite)
    recipe = {
        "tool": "debootstrap",
        "variant": "minbase",
        "suite": suite,
        "mirror": mirror,
        "packages": list(packages),
        "apt_packages": list(apt_packages),
        "env": dict(BASE_ENV),
        "pip": PIP_SETUP,
        "debootstrap": _debootstrap_version(),
    }
    logs = state_dir() / "builds"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{safe_name(tag)}.debootstrap.log"
    log_path.write_bytes(b"")
    with tempfile.TemporaryDirectory(prefix="comet-base-", dir=os.environ.get("COMET_BUILD_TMPDIR")) as tmp:
        rootfs = Path(tmp) / "rootfs"
        then = f", then apt-get install {' '.join(apt_packages)} in it" if apt_packages else ""
        log(f"[1/3] debootstrap {suite} (minbase + {', '.join(packages)}) from {mirror}{then}; log: {log_path}")
        mark = time.monotonic()
        argv = [debootstrap, "--variant=minbase", f"--include={','.join(packages)}", suite, str(rootfs), mirror]
        try:
            _run_logged(
                argv, log_path, DEBOOTSTRAP_TIMEOUT_S, "debootstrap", inner=rootfs / "debootstrap/debootstrap.log"
            )
            if apt_packages:
                install = " ".join(["apt-get install -y -q --no-install-recommends", *apt_packages])
                script = f"apt-get update -q && {install} && apt-get clean"
                _run_logged(["chroot", str(rootfs), "sh", "-c", script], log_path, DEBOOTSTRAP_TIMEOUT_S, script)
                pip = f"PIP_BREAK_SYSTEM_PACKAGES=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore {PIP_SETUP}"
                _run_logged(["chroot", str(rootfs), "sh", "-c", pip], log_path, DEBOOTSTRAP_TIMEOUT_S, "pip setup")
        finally:
            log(f"      {time.monotonic() - mark:.0f}s elapsed")
        _trim_rootfs(rootfs)
        log(f"[2/3] importing the root file system into Docker as {tag}")
        mark = time.monotonic()
        new_id = _import_rootfs(client, rootfs, tag, recipe)
        log(f"      done in {time.monotonic() - mark:.0f}s")
    log(f"[3/3] checking the image: {_smoke_test(client, tag)}")
    duration = time.monotonic() - t0
    log(f"built {tag} ({new_id[:19]}) in {duration:.0f}s")
    return BaseImage(tag, new_id, True, duration, recipe)


def _recipe_of(client: Any, tag: str) -> dict[str, Any]:
    labels = client.images.get(tag).labels or {}
    try:
        recipe = json.loads(labels.get("comet-eval.recipe", "{}"))
    except json.JSONDecodeError:
        return {}
    return recipe if isinstance(recipe, dict) else {}


def _debootstrap_version() -> str:
    try:
        out = run_captured(["dpkg-query", "-W", "-f=${Version}", "debootstrap"], timeout=60)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _run_logged(argv: Sequence[str], log_path: Path, timeout: float, what: str, *, inner: Path | None = None) -> None:
    """Run *argv* appending its output to *log_path*; on failure append *inner* (a tool's own log) too."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"}
    env.update({k: v for k, v in os.environ.items() if k in ("LANG", "http_proxy", "https_proxy", "no_proxy")})
    with log_path.open("ab") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
    done = run_process(
        argv, cwd=Path("/"), env=env, timeout=timeout, stdout_path=log_path, stderr_path=log_path, append=True
    )
    if done.exit_code == 0:
        return
    problem = f"took longer than {timeout:g}s" if done.timed_out else f"failed with exit code {done.exit_code}"
    if inner is not None and inner.is_file():
        with log_path.open("ab") as out:
            out.write(f"\n--- {inner.name} ---\n".encode() + inner.read_bytes())
    raise WorkspaceError(f"{what} {problem}; log {log_path}:\n{tail(log_path)}")


def _trim_rootfs(rootfs: Path) -> None:
    """Drop what an image does not need: downloaded .debs and package lists (apt-get update restores them)."""
    for folder in (rootfs / "var/cache/apt/archives", rootfs / "var/lib/apt/lists"):
        for path in folder.glob("*"):
            if path.is_file():
                path.unlink()


def _import_rootfs(client: Any, rootfs: Path, tag: str, recipe: Mapping[str, Any]) -> str:
    """Stream ``tar -C rootfs -c .`` into the engine's image import (the API behind ``docker import``)."""
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:
        repository, version = tag, "latest"
    changes = [
        f"LABEL {OWNER_LABEL}={OWNER}",
        f"LABEL comet-eval.recipe={json.dumps(json.dumps(recipe, sort_keys=True))}",
        *(f"ENV {key}={value}" for key, value in BASE_ENV.items()),
        'CMD ["bash"]',
    ]
    argv = ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs)]
    argv += ["--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-c", "."]
    with streamed(argv, timeout=IMPORT_TIMEOUT_S) as tar:
        try:
            result = client.api.import_image(
                src=_chunks(tar.stdout), repository=repository, tag=version, changes=changes, stream_src=True
            )
        except Exception as exc:
            raise WorkspaceError(f"importing the root file system as {tag} failed: {exc}") from None
    if tar.exit_code != 0:
        ended = "took longer than" if tar.exit_code is None else f"failed with exit code {tar.exit_code} within"
        raise WorkspaceError(f"tar of {rootfs} {ended} {IMPORT_TIMEOUT_S:g}s")
    for line in str(result).splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            if "error" in json.loads(line):
                raise WorkspaceError(f"importing {tag} failed: {line}")
    new_id = image_id(client, tag)
    if new_id is None:
        raise WorkspaceError(f"importing {tag} reported success but the image is missing: {result}")
    return new_id


def _chunks(stream: IO[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    while chunk := stream.read(size):
        yield chunk


def _smoke_test(client: Any, tag: str) -> str:
    command = (
        "python --version && pip --version | cut -d' ' -f1-2 && node --version && npm --version"
        " && git --version | head -c 40 && curl --version | head -c 12 && command -v setsid"
        ' && test -f "$(python3 -c \'import sysconfig; print(sysconfig.get_paths()["include"])\')/Python.h"'
        " && echo Python.h"
    )
    try:
        out = client.containers.run(tag, ["bash", "-c", command], remove=True, network_mode="none")
    except Exception as exc:
        raise WorkspaceError(f"the new image {tag} does not run: {exc}") from None
    return " ".join(bytes(out).decode("utf-8", "replace").split())
