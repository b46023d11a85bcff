"""The default stand-ins: which local image each python, debian and ubuntu tag is built on, which Python
it asks for, and the mismatch named; the tag parser and the mapper under hypothesis too."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.workspaces.stand_ins import (
    STAND_INS,
    ImageAsk,
    choose_image,
    parse_image,
    stand_in_for,
    stand_in_named,
)
from tests.support.factories import REPO

BOOKWORM = "comet-eval/base:bookworm"
TRIXIE = "comet-eval/base:trixie"
CORPORA = REPO.parent / "shared" / "corpora"


@pytest.mark.parametrize(
    ("ref", "local", "asks"),
    [
        # The tags of the real corpora (../shared/corpora): each gets the stand-in its pins build on.
        ("python:3.13-slim-bookworm", BOOKWORM, (3, 13)),  # the tag's Debian release wins
        ("python:3.9.19-slim", BOOKWORM, (3, 9)),
        ("python:3.10-slim", BOOKWORM, (3, 10)),
        ("python:3.11-slim", BOOKWORM, (3, 11)),
        ("ubuntu:24.04", BOOKWORM, (3, 12)),  # a tie between 3.11 and 3.13 goes to the older
        ("debian:13.0-slim", TRIXIE, (3, 13)),
        # Other spellings.
        ("docker.io/library/python:3.12-slim-bookworm", BOOKWORM, (3, 12)),
        ("python:3.13", TRIXIE, (3, 13)),
        ("python:3.13.1-slim-trixie", TRIXIE, (3, 13)),
        ("python:3.11-slim-trixie", TRIXIE, (3, 11)),
        ("python:3.14-rc-slim", TRIXIE, (3, 14)),
        ("python:3.12.0rc2-slim", BOOKWORM, (3, 12)),
        ("python:3.10-bullseye", BOOKWORM, (3, 10)),
        ("python:3", TRIXIE, None),
        ("python:slim", TRIXIE, None),
        ("python", TRIXIE, None),
        ("python:bookworm", BOOKWORM, None),
        ("python:3.11-slim@sha256:0123abcd", BOOKWORM, (3, 11)),
        ("ubuntu:22.04", BOOKWORM, (3, 10)),
        ("ubuntu:jammy-20240911", BOOKWORM, (3, 10)),
        ("ubuntu:noble", BOOKWORM, (3, 12)),
        ("ubuntu:25.04", TRIXIE, (3, 13)),
        ("ubuntu:latest", TRIXIE, None),
        ("debian:12", BOOKWORM, (3, 11)),
        ("debian:12.5-slim", BOOKWORM, (3, 11)),
        ("debian:bookworm-20240110-slim", BOOKWORM, (3, 11)),
        ("debian:trixie", TRIXIE, (3, 13)),
        ("debian:11", BOOKWORM, (3, 9)),
        ("debian:stable-slim", TRIXIE, (3, 13)),
        ("debian:oldstable", BOOKWORM, (3, 11)),
        ("debian:sid", TRIXIE, None),
        ("debian", TRIXIE, (3, 13)),
    ],
)
def test_each_image_maps_to_its_closest_stand_in(ref: str, local: str, asks: tuple[int, int] | None) -> None:
    choice = choose_image(ref, {})
    assert choice is not None
    assert (choice.local, choice.by, choice.asks) == (local, "stand-in", asks)


@pytest.mark.parametrize(
    "ref",
    [
        "python:3.11-alpine",
        "python:3.12-alpine3.19",
        "python:3.11-windowsservercore-ltsc2022",
        "python:2.7-slim",
        "node:20-bookworm",
        "alexgshaw/openssl-selfsigned-cert:20251031",
        "comet-eval/base:bookworm",
        "registry.invalid/comet-eval/missing:1",
        "scratch",
    ],
)
def test_images_no_rule_covers_are_built_as_written(ref: str) -> None:
    assert choose_image(ref, {}) is None


def test_an_alias_wins_and_an_alias_to_itself_keeps_the_image() -> None:
    aliases = {"ubuntu:24.04": TRIXIE, "python:3.11-slim": "python:3.11-slim", "python:3.10-slim": "mine:1"}
    alias = choose_image("docker.io/library/ubuntu:24.04", aliases)
    assert alias is not None and (alias.local, alias.by, alias.serves) == (TRIXIE, "alias", (3, 13))
    assert choose_image("python:3.11-slim", aliases) is None  # as written: the engine pulls it, or has it
    assert choose_image("python:3.11-slim@sha256:0123", aliases) is None
    own = choose_image("python:3.10-slim", aliases)
    assert own is not None and own.serves is None and own.mismatch is None  # not a stand-in: unknown Python
    assert choose_image("python:3.12-slim", aliases, stand_ins=False) is None


def test_a_mismatch_names_both_pythons() -> None:
    ubuntu = choose_image("ubuntu:24.04", {})
    assert ubuntu is not None and ubuntu.mismatch is not None
    assert "ubuntu:24.04 has Python 3.12, its stand-in comet-eval/base:bookworm has Python 3.11" in ubuntu.mismatch
    assert "no stand-in has 3.12" in ubuntu.mismatch
    bookworm = choose_image("python:3.13-slim-bookworm", {})
    assert bookworm is not None and bookworm.mismatch is not None
    assert "has Python 3.13" in bookworm.mismatch and "its tag names Debian bookworm" in bookworm.mismatch
    same = choose_image("python:3.11-slim", {})
    assert same is not None and same.mismatch is None


def test_every_image_of_the_corpora_has_a_stand_in_whose_python_the_readme_asks_for() -> None:
    """../shared/corpora/README.md: ubuntu:24.04 and python <= 3.11 on bookworm (numpy==1.26.4 pins),
    python:3.13-slim-bookworm on bookworm (its tag), debian:13 on trixie."""
    dockerfiles = sorted(CORPORA.glob("*/*/environment/Dockerfile"))
    if not dockerfiles:
        pytest.skip(f"no corpora at {CORPORA}")
    for dockerfile in dockerfiles:
        ref = next(line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("FROM "))
        choice = choose_image(ref, {})
        assert choice is not None, dockerfile
        assert choice.local == (TRIXIE if ref.startswith("debian:13") else BOOKWORM), (dockerfile, ref)


def test_stand_ins_are_known_by_their_tags() -> None:
    assert [s.tag for s in STAND_INS] == [BOOKWORM, TRIXIE]
    assert stand_in_named("docker.io/comet-eval/base:trixie") is STAND_INS[1]
    assert stand_in_named("comet-eval/base:other") is None


# --- properties ------------------------------------------------------------------------------------------

minors = st.integers(min_value=0, max_value=30)
patches = st.one_of(st.just(""), st.integers(min_value=0, max_value=40).map(lambda n: f".{n}"))
variants = st.lists(st.sampled_from(["slim", "bookworm", "trixie", "bullseye", "buster", "rc", "slim-bookworm"]))
prefixes = st.sampled_from(["", "docker.io/library/", "index.docker.io/library/", "library/"])
digests = st.one_of(st.just(""), st.text("0123456789abcdef", min_size=8, max_size=64).map(lambda h: f"@sha256:{h}"))


@given(prefixes, minors, patches, variants, digests)
def test_a_python_tag_asks_for_its_version_and_a_named_release_decides(
    prefix: str, minor: int, patch: str, words: list[str], digest: str
) -> None:
    ref = f"{prefix}python:3.{minor}{patch}{''.join('-' + w for w in words)}{digest}"
    ask = parse_image(ref)
    assert ask is not None and ask.family == "python" and ask.python == (3, minor)
    choice = choose_image(ref, {})
    assert choice is not None and choice.asks == (3, minor) and choice.by == "stand-in"
    named = [w for w in "-".join(words).split("-") if w in ("bookworm", "trixie", "bullseye", "buster")]
    if named:  # the first Debian release the tag names wins over the Python version
        assert choice.local == (TRIXIE if named[0] == "trixie" else BOOKWORM)
    else:  # the nearest Python, the older on a tie
        assert choice.local == (BOOKWORM if minor <= 12 else TRIXIE)
    assert (choice.mismatch is None) == (choice.asks == choice.serves)


@given(st.text(min_size=1, max_size=40))
def test_parsing_any_reference_never_raises_and_maps_to_a_stand_in_or_nothing(ref: str) -> None:
    ask = parse_image(ref)
    choice = choose_image(ref, {})
    assert (ask is None) == (choice is None)
    if choice is not None:
        assert choice.local in {s.tag for s in STAND_INS}


@given(
    st.sampled_from(["python", "debian", "ubuntu"]),
    st.one_of(st.none(), st.tuples(st.just(3), minors)),
    st.one_of(st.none(), st.integers(min_value=5, max_value=20)),
)
def test_the_stand_in_is_the_nearest_on_the_deciding_axis(
    family: str, python: tuple[int, int] | None, debian: int | None
) -> None:
    chosen = stand_in_for(ImageAsk(family, python, None, debian))
    if debian is not None:
        distance = abs(chosen.debian - debian)
        assert all(abs(s.debian - debian) >= distance for s in STAND_INS)
    elif python is not None:
        distance = abs(chosen.python[1] - python[1])
        assert all(abs(s.python[1] - python[1]) >= distance for s in STAND_INS)
        # a tie goes to the older stand-in
        assert not any(abs(s.python[1] - python[1]) == distance and s.python < chosen.python for s in STAND_INS)
    else:
        assert chosen == STAND_INS[-1]


@given(prefixes, minors, st.sampled_from(["ubuntu:24.04", "debian:12"]), st.text("abc:/.-", max_size=10))
def test_an_alias_always_wins_over_the_rule(prefix: str, minor: int, other: str, junk: str) -> None:
    ref = f"{prefix}python:3.{minor}-slim"
    local = f"mine/{junk or 'x'}:1"
    choice = choose_image(ref, {f"python:3.{minor}-slim": local, other: TRIXIE})
    assert choice is not None and (choice.local, choice.by) == (local, "alias")
