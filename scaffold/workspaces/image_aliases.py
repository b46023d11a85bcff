"""Image aliases: ``REF=LOCAL`` pairs mapping the images a Dockerfile names to images already on the engine.

A Harbor-format task's Dockerfile says ``FROM python:3.13-slim-bookworm`` or ``FROM ubuntu:24.04``; an
engine that cannot pull (offline, air-gapped) builds it ``FROM`` a local stand-in instead, such as
``comet-eval/base:trixie`` (``comet images build-base --release trixie``). ``python:*``, ``debian:*`` and
``ubuntu:*`` images have a default stand-in (scaffold.workspaces.stand_ins); an alias overrides it, and
``REF=REF`` builds the image as written. The aliases of a session come from, later ones winning for the
same REF:

1. a TOML file (``--image-alias-file FILE``, else ``$COMET_IMAGE_ALIAS_FILE``) with one table::

       [image-aliases]
       "ubuntu:24.04" = "comet-eval/base:trixie"
       "python:3.13-slim-bookworm" = "comet-eval/base:trixie"

2. ``$COMET_IMAGE_ALIASES``: ``REF=LOCAL`` pairs separated by commas or whitespace (for CI);
3. ``--image-alias REF=LOCAL`` on the command line, repeatable.

References are compared as Docker compares them: ``docker.io/library/python:3.13`` is ``python:3.13``, and a
reference without a tag is ``:latest``. Pure: strings in, a mapping out (the file is read, nothing runs).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from scaffold.errors import SelectionError

__all__ = [
    "ALIASES_ENV",
    "ALIAS_FILE_ENV",
    "ALIAS_TABLE",
    "alias_for",
    "load_alias_file",
    "normalise_ref",
    "parse_image_alias",
    "resolve_image_aliases",
]

ALIASES_ENV = "COMET_IMAGE_ALIASES"
ALIAS_FILE_ENV = "COMET_IMAGE_ALIAS_FILE"
ALIAS_TABLE = "image-aliases"
_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")
_DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")


def normalise_ref(ref: str) -> str:
    """*ref* as Docker Hub short names spell it: ``docker.io/library/x`` is ``x``, no tag is ``:latest``."""
    ref = ref.strip()
    name, at, digest = ref.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    repo, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, "")
    parts = repo.split("/")
    if len(parts) > 1 and parts[0].lower() in _DOCKER_HUB:
        parts = parts[1:]
    if len(parts) == 2 and parts[0] == "library":
        parts = parts[1:]
    if not tag and not at:
        tag = "latest"
    return "/".join(parts) + (f":{tag}" if tag else "") + (f"@{digest}" if at else "")


def alias_for(ref: str, aliases: Mapping[str, str]) -> str | None:
    """The local image *ref* is aliased to (keys normalised), or None. A pinned ``ref@sha256:...`` also
    matches an alias of its name without the digest: the alias says which image stands in for that name."""
    if not aliases:
        return None
    normal = normalise_ref(ref)
    if normal in aliases:
        return aliases[normal]
    if "@" in normal:
        return aliases.get(normalise_ref(normal.partition("@")[0]))
    return None


def parse_image_alias(entry: str, *, where: str = "--image-alias") -> tuple[str, str]:
    """``REF=LOCAL`` as (normalised REF, LOCAL); SelectionError naming *where* when it is not one."""
    ref, eq, local = entry.partition("=")
    ref, local = ref.strip(), local.strip()
    if not eq or not _REF.match(ref) or not _REF.match(local):
        raise SelectionError(
            f"{where}: {entry!r} is not REF=LOCAL (e.g. ubuntu:24.04=comet-eval/base:trixie): two image "
            "references without spaces"
        )
    return normalise_ref(ref), local


def load_alias_file(path: Path) -> dict[str, str]:
    """The ``[image-aliases]`` table of the TOML file *path* (SelectionError naming the file and key)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SelectionError(f"{path}: the image alias file cannot be read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SelectionError(f"{path}: not valid TOML: {exc}") from None
    table = data.get(ALIAS_TABLE)
    if not isinstance(table, dict):
        raise SelectionError(f'{path}: needs a [{ALIAS_TABLE}] table of "REF" = "LOCAL" entries')
    out: dict[str, str] = {}
    for ref, local in table.items():
        if not isinstance(local, str):
            raise SelectionError(f"{path}: [{ALIAS_TABLE}] {ref}: must be a string (the local image), got {local!r}")
        key, value = parse_image_alias(f"{ref}={local}", where=f"{path}: [{ALIAS_TABLE}]")
        out[key] = value
    return out


def resolve_image_aliases(
    entries: Sequence[str], file: Path | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The aliases of a session: *file* (else ``$COMET_IMAGE_ALIAS_FILE``), then ``$COMET_IMAGE_ALIASES``,
    then *entries* (``--image-alias``), later ones winning for the same REF."""
    environ = environ or {}
    out: dict[str, str] = {}
    named = file or (Path(environ[ALIAS_FILE_ENV]) if environ.get(ALIAS_FILE_ENV) else None)
    if named is not None:
        out.update(load_alias_file(named))
    for entry in re.split(r"[,\s]+", environ.get(ALIASES_ENV, "").strip()):
        if entry:
            key, value = parse_image_alias(entry, where=f"${ALIASES_ENV}")
            out[key] = value
    for entry in entries:
        key, value = parse_image_alias(entry)
        out[key] = value
    return out
