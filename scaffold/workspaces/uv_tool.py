"""The ``uv`` binaries of the stand-in for Harbor verifiers that bootstrap uv from the internet.

Terminal-Bench 2 and most SkillsBench verifiers start with ``curl -LsSf https://astral.sh/uv/0.9.x/
install.sh | sh``: astral.sh is not a package registry, so where only the registries are reachable
the installer fails, ``uvx`` is missing and the reward is 0 whatever the agent did. The stand-in is uv
itself, from its PyPI wheel (a static binary), fetched once into a host cache shared by every session
and copied into the container before ``test.sh`` (scaffold.validation.harbor).
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Final

from scaffold.errors import WorkspaceError
from scaffold.util.atomic import locked
from scaffold.util.run_process import run_captured

__all__ = ["UV_VERSION", "uv_binaries"]

UV_VERSION: Final = "0.9.5"
"""The uv that Terminal-Bench 2's verifiers install (``astral.sh/uv/0.9.5``)."""
_PLATFORMS: Final = {"x86_64": "manylinux_2_17_x86_64", "aarch64": "manylinux_2_17_aarch64"}
_FETCH_TIMEOUT_S: Final = 300.0


def _cache_root() -> Path:
    return Path(tempfile.gettempdir()) / "comet-eval" / "tools"


def uv_binaries(version: str = UV_VERSION, *, cache_root: Path | None = None, machine: str | None = None) -> Path:
    """A host folder holding ``uv`` and ``uvx`` (Linux, this machine's architecture), fetched from the
    package registry with pip on first use and kept; concurrent sessions and workers fetch it once."""
    arch = machine or platform.machine()
    if arch not in _PLATFORMS:
        raise WorkspaceError(f"the uv stand-in has no build for {arch}; known: {', '.join(sorted(_PLATFORMS))}")
    folder = (cache_root or _cache_root()) / f"uv-{version}-{arch}"
    if (folder / "uv").is_file():
        return folder
    with locked(folder.with_name(folder.name + ".lock")):
        if (folder / "uv").is_file():
            return folder
        with tempfile.TemporaryDirectory(prefix="comet-uv-") as tmp:
            wheel = _download(version, _PLATFORMS[arch], Path(tmp))
            staged = Path(tmp) / "bin"
            staged.mkdir()
            _extract(wheel, staged)
            folder.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(folder, ignore_errors=True)
            shutil.move(str(staged), folder)
    return folder


def _download(version: str, platform_tag: str, dest: Path) -> Path:
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        f"uv=={version}",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        platform_tag,
        "--python-version",
        "3.11",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
    ]
    done = run_captured(argv, timeout=_FETCH_TIMEOUT_S)
    if done.timed_out:
        raise WorkspaceError(f"fetching uv {version} for the verifier's stand-in took over {_FETCH_TIMEOUT_S:g}s")
    wheels = sorted(dest.glob("uv-*.whl"))
    if done.exit_code != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise WorkspaceError(
            f"cannot fetch uv {version} for the verifier's stand-in (pip download exited {done.exit_code}: {last}); "
            'set [comet] uv_shim = "never" in the task.toml to run the verifier as written'
        )
    return wheels[0]


def _extract(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            base = name.rsplit("/", 1)[-1]
            if "/scripts/" in name and base in ("uv", "uvx"):
                target = dest / base
                target.write_bytes(archive.read(name))
                os.chmod(target, 0o755)  # noqa: PTH101
    if not (dest / "uv").is_file():
        raise WorkspaceError(f"{wheel.name} holds no uv binary")
