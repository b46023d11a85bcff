"""The rewrite of a Harbor-format Dockerfile (aliases, skills left out, the host's CA) and the host's trust
settings: no engine needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.workspaces.docker.dockerfile import (
    CA_CONTEXT_NAME,
    context_entries,
    make_context,
    rewrite_dockerfile,
    skill_folders,
)
from scaffold.workspaces.docker.host_trust import (
    HOST_CA_PATH,
    ca_environment,
    host_ca_bundle,
    installer_environment,
    proxy_build_args,
)

ALIASES = {"python:3.13-slim-bookworm": "comet-eval/base:trixie", "ubuntu:24.04": "comet-eval/base:trixie"}


def instructions(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


# --- FROM ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("FROM python:3.13-slim-bookworm", "FROM comet-eval/base:trixie"),
        ("FROM docker.io/library/python:3.13-slim-bookworm", "FROM comet-eval/base:trixie"),
        ("from ubuntu:24.04 AS build", "FROM comet-eval/base:trixie AS build"),
        ("FROM --platform=linux/amd64 ubuntu:24.04 as b", "FROM --platform=linux/amd64 comet-eval/base:trixie AS b"),
    ],
)
def test_an_aliased_from_is_mapped(line: str, expected: str) -> None:
    rewrite = rewrite_dockerfile(f"{line}\nRUN true\n", aliases=ALIASES)
    assert instructions(rewrite.text) == [expected, "RUN true"]
    assert rewrite.bases == ("comet-eval/base:trixie",)
    assert rewrite.aliased[0][1] == "comet-eval/base:trixie"


def test_a_from_through_a_build_argument_is_mapped_with_its_default() -> None:
    text = 'ARG PY="3.13"\nFROM python:${PY}-slim-bookworm\nARG PY\n'
    assert instructions(rewrite_dockerfile(text, aliases=ALIASES).text)[1] == "FROM comet-eval/base:trixie"
    # A value given to the build wins over the default; an argument without any value is left alone.
    given_value = rewrite_dockerfile(text, aliases=ALIASES, build_args={"PY": "3.11"})
    assert given_value.bases == ("python:3.11-slim-bookworm",) and not given_value.aliased
    assert rewrite_dockerfile("FROM ${UNSET}\n", aliases=ALIASES).bases == ()


def test_stages_and_scratch_are_not_images_to_find() -> None:
    text = "FROM ubuntu:24.04 AS build\nRUN make\nFROM build AS test\nFROM scratch\nCOPY --from=build /x /x\n"
    rewrite = rewrite_dockerfile(text)
    assert rewrite.bases == ("ubuntu:24.04",)
    assert rewrite.text == text  # nothing aliased, no CA: byte for byte as written


def test_an_unaliased_dockerfile_is_unchanged_byte_for_byte() -> None:
    text = "# syntax=docker/dockerfile:1\nFROM debian:bullseye-slim\r\nRUN apt-get update \\\n  && true\nCOPY . /app"
    assert rewrite_dockerfile(text, aliases=ALIASES, without_skills=True).text == text


def test_with_stand_ins_every_known_image_is_mapped_and_an_alias_still_wins() -> None:
    text = "FROM python:3.9.19-slim AS deps\nFROM ubuntu:24.04\nFROM node:20\nFROM debian:13.0-slim\n"
    rewrite = rewrite_dockerfile(text, aliases={"ubuntu:24.04": "comet-eval/base:trixie"}, stand_ins=True)
    assert instructions(rewrite.text) == [
        "FROM comet-eval/base:bookworm AS deps",
        "FROM comet-eval/base:trixie",  # the alias, over the rule's bookworm
        "FROM node:20",  # no rule covers it: built as written (pulled, or named in the error)
        "FROM comet-eval/base:trixie",
    ]
    assert rewrite.aliased == (
        ("python:3.9.19-slim", "comet-eval/base:bookworm"),
        ("ubuntu:24.04", "comet-eval/base:trixie"),
        ("debian:13.0-slim", "comet-eval/base:trixie"),
    )
    # An alias of the image to itself keeps it as written: no rewrite at all.
    kept = rewrite_dockerfile("FROM ubuntu:24.04\n", aliases={"ubuntu:24.04": "ubuntu:24.04"}, stand_ins=True)
    assert kept.text == "FROM ubuntu:24.04\n" and kept.bases == ("ubuntu:24.04",) and not kept.aliased
    # Without stand_ins (the default of the pure rewrite), only aliases map.
    assert rewrite_dockerfile("FROM ubuntu:24.04\n").text == "FROM ubuntu:24.04\n"


# --- without skills --------------------------------------------------------------------------------------

SKILLSBENCH = """FROM ubuntu:24.04
WORKDIR /root
COPY data /root/data
COPY skills /root/.claude/skills
COPY ./skills/ /root/.codex/skills
COPY skills/pdf /root/.agents/skills/pdf
COPY --chown=root:root skills data /opt/
COPY ["skills", "/root/.goose/skills"]
ADD skills \\
    /root/.factory/skills
COPY --from=builder /skills /root/elsewhere
COPY skillset /root/skillset
"""


def test_copy_skills_lines_are_neutralised_only_without_skills() -> None:
    assert rewrite_dockerfile(SKILLSBENCH).text == SKILLSBENCH
    rewrite = rewrite_dockerfile(SKILLSBENCH, without_skills=True)
    assert instructions(rewrite.text) == [
        "FROM ubuntu:24.04",
        "WORKDIR /root",
        "COPY data /root/data",
        "COPY --chown=root:root data /opt/",  # the other source stays
        "COPY --from=builder /skills /root/elsewhere",  # from a stage, not the context
        "COPY skillset /root/skillset",  # another name
    ]
    assert len(rewrite.neutralised) == 6
    assert rewrite.text.count("# comet-eval, without the environment's skills:") == 6
    assert "# COPY skills /root/.claude/skills" in rewrite.text


def test_other_folders_holding_a_skill_are_neutralised_too() -> None:
    text = "FROM ubuntu:24.04\nCOPY tools/helper /opt/helper\nCOPY tools/other /opt/other\n"
    rewrite = rewrite_dockerfile(text, without_skills=True, skill_dirs=("skills", "tools/helper"))
    assert instructions(rewrite.text) == ["FROM ubuntu:24.04", "COPY tools/other /opt/other"]


def test_a_json_copy_keeps_its_other_sources_as_json() -> None:
    rewrite = rewrite_dockerfile('FROM x\nCOPY ["skills", "a b", "/d/"]\n', without_skills=True)
    assert json.loads(instructions(rewrite.text)[1].removeprefix("COPY ")) == ["a b", "/d/"]


def test_a_heredoc_body_is_not_read_as_instructions() -> None:
    text = "FROM ubuntu:24.04\nRUN <<EOF\nFROM ubuntu:24.04\nCOPY skills /x\nEOF\nCOPY skills /y\n"
    rewrite = rewrite_dockerfile(text, aliases=ALIASES, without_skills=True)
    assert rewrite.text.count("FROM comet-eval/base:trixie") == 1
    assert "\nCOPY skills /x\n" in rewrite.text and "# COPY skills /y" in rewrite.text


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=8)
_path = st.lists(_word, min_size=1, max_size=3).map("/".join)


def test_flags_end_at_a_double_dash_as_docker_reads_them() -> None:
    text = "FROM x\nCOPY --chown=1 -- --odd skills /d/\nCOPY -- skills /e/\n"
    rewrite = rewrite_dockerfile(text, without_skills=True)
    assert instructions(rewrite.text) == ["FROM x", "COPY --chown=1 -- --odd /d/"]


@given(
    # A leading word that starts with "--" is a flag, not a source (the test above): none is generated.
    sources=st.lists(
        st.one_of(
            _path.filter(lambda p: not p.startswith("--")),
            st.sampled_from(["skills", "./skills", "skills/x", "./skills/a/"]),
        ),
        min_size=1,
    ),
    dest=_path,
)
def test_no_copy_of_skills_survives_and_nothing_else_is_lost(sources: list[str], dest: str) -> None:
    text = f"FROM ubuntu:24.04\nCOPY {' '.join(sources)} /{dest}/\n"
    left = instructions(rewrite_dockerfile(text, without_skills=True).text)
    kept = [s for s in sources if not (s.strip("./") == "skills" or s.lstrip("./").startswith("skills/"))]
    assert left == ["FROM ubuntu:24.04", *([f"COPY {' '.join(kept)} /{dest}/"] if kept else [])]


# --- wildcard sources -------------------------------------------------------------------------------------
# COPY lines of real Dockerfiles: SkillsBench's ab-testing-stats (quoted in the issue), and two public
# projects that copy optional folders with BuildKit's empty-wildcard rule (agora's and giorgio's Dockerfiles).

AB_TESTING_STATS = "FROM ubuntu:24.04\nWORKDIR /root\nCOPY data /root/data\nCOPY skill[s] /tmp/skills_src/\n"
AGORA = "FROM python:3.12-slim\nRUN mkdir -p skills/public skills/learned skills/custom\nCOPY skill[s]/ skills/\n"
GIORGIO = "FROM node:22-slim AS runtime\nCOPY soul.md* ./\nCOPY skill[s]/ ./skills/\nCOPY plugin[s]/ ./plugins/\n"
CONTEXT = frozenset({"Dockerfile", "data", "data/x.csv", "skills", "skills/pdf", "skills/pdf/SKILL.md"})
WITHOUT_SKILLS_NOTE = "# comet-eval, without the environment's skills:"
EMPTY_NOTE = "# comet-eval, no source matches in the context (BuildKit copies nothing; the classic builder stops):"


def test_a_wildcard_that_copies_the_skills_is_left_out_without_them() -> None:
    with_skills = rewrite_dockerfile(AB_TESTING_STATS, context=CONTEXT)
    assert with_skills.text == AB_TESTING_STATS  # skill[s] matches the skills folder: built as written
    control = rewrite_dockerfile(AB_TESTING_STATS, without_skills=True, context=CONTEXT)
    assert instructions(control.text) == ["FROM ubuntu:24.04", "WORKDIR /root", "COPY data /root/data"]
    assert control.neutralised == ("COPY skill[s] /tmp/skills_src/",) and not control.emptied
    assert f"{WITHOUT_SKILLS_NOTE}\n# COPY skill[s] /tmp/skills_src/\n" in control.text


def test_buildkits_empty_wildcard_rule_holds_for_the_classic_builder_too() -> None:
    """BuildKit copies nothing for a wildcard that matches nothing; the classic builder (the Docker API's)
    stops on a COPY none of whose sources match: such a line is left out, in every variant."""
    no_plugins = rewrite_dockerfile(GIORGIO, context=CONTEXT | {"soul.md"})
    assert instructions(no_plugins.text) == [
        "FROM node:22-slim AS runtime",
        "COPY soul.md* ./",
        "COPY skill[s]/ ./skills/",
    ]
    assert no_plugins.emptied == ("COPY plugin[s]/ ./plugins/",)
    assert f"{EMPTY_NOTE}\n# COPY plugin[s]/ ./plugins/\n" in no_plugins.text
    # A task without any skills folder: agora's optional copy is left out with or without skills.
    bare = frozenset({"Dockerfile", "data"})
    for without in (False, True):
        rewrite = rewrite_dockerfile(AGORA, without_skills=without, context=bare)
        assert instructions(rewrite.text)[-1] == "RUN mkdir -p skills/public skills/learned skills/custom"
        assert rewrite.emptied == ("COPY skill[s]/ skills/",) and not rewrite.neutralised
    # Without the entries of the context nothing is matched: the text stays as written.
    assert rewrite_dockerfile(GIORGIO).text == GIORGIO


@pytest.mark.parametrize(
    ("line", "left"),
    [
        # Another source of the line still matches: the classic builder copes, nothing changes.
        ("COPY data skill[s] /app/", "COPY data /app/"),
        ("COPY requirements*.txt data /app/", "COPY requirements*.txt data /app/"),
        # Matches in the skills and elsewhere: kept, the context without skills gives only the rest.
        ("COPY [ds]* /opt/", "COPY [ds]* /opt/"),
        # Under a folder that is not there BuildKit fails as well: left for the builder to say so.
        ("COPY assets/*.png /x/", "COPY assets/*.png /x/"),
        # A wildcard inside the skills folder, or its every match there.
        ("COPY ./skills/* /root/.claude/skills/", None),
        ("COPY skills/*/SKILL.md /root/docs/", None),
        ("COPY ski?ls /root/.codex/skills", None),
        ('COPY ["skill[s]", "/root/.goose/skills"]', None),
        ("COPY [s]kills /root/.factory/skills", None),  # the shell form, though it starts with "["
        # Not the context: another stage, a variable, a URL, a pattern Go refuses.
        ("COPY --from=build /src/skill[s] /x/", "COPY --from=build /src/skill[s] /x/"),
        ("COPY $SKILLS* /x/", "COPY $SKILLS* /x/"),
        ("ADD https://example.invalid/a[0-9].tgz /x/", "ADD https://example.invalid/a[0-9].tgz /x/"),
        ("COPY skill[s /x/", "COPY skill[s /x/"),
    ],
)
def test_wildcard_sources_without_skills(line: str, left: str | None) -> None:
    rewrite = rewrite_dockerfile(f"FROM x\n{line}\n", without_skills=True, context=CONTEXT)
    assert instructions(rewrite.text) == ["FROM x", *([left] if left else [])]


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        ("*", ["Dockerfile", "data", "skills"]),  # a star stops at a slash
        ("*/*", ["data/x.csv", "skills/pdf"]),
        ("?ata", ["data"]),
        ("[^ds]*", ["Dockerfile"]),  # Go negates with ^
        ("[a-e]ata/x.csv", ["data/x.csv"]),
        ("d\\ata", ["data"]),  # a backslash escapes the next character
        ("skills/pdf/SKILL.m?", ["skills/pdf/SKILL.md"]),
    ],
)
def test_sources_match_as_gos_filepath_match_does(pattern: str, matched: list[str]) -> None:
    # With skills, nothing is left out: a line is removed only when its pattern matches nothing at all.
    rewrite = rewrite_dockerfile(f"FROM x\nCOPY {pattern} /x/\n", context=CONTEXT)
    assert not rewrite.emptied, matched
    emptied = rewrite_dockerfile(f"FROM x\nCOPY {pattern} /x/\n", context=CONTEXT - set(matched))
    assert emptied.emptied == (f"COPY {pattern} /x/",)


def test_the_context_entries_are_what_the_engine_gets(tmp_path: Path) -> None:
    for name in ("skills/pdf/SKILL.md", "data/x.csv", "notes/a.txt", "Dockerfile"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / ".dockerignore").write_text("# comment\nnotes\n")
    assert context_entries(tmp_path) == {
        ".dockerignore",
        "Dockerfile",
        "data",
        "data/x.csv",
        "skills",
        "skills/pdf",
        "skills/pdf/SKILL.md",
    }
    # An ignored folder is not there for the builder: a wildcard that matches only it matches nothing.
    rewrite = rewrite_dockerfile("FROM x\nCOPY note[s] /n/\n", context=context_entries(tmp_path))
    assert rewrite.emptied == ("COPY note[s] /n/",)


# --- the host's CA ---------------------------------------------------------------------------------------


def test_the_ca_goes_in_after_every_from() -> None:
    text = "FROM ubuntu:24.04 AS a\nRUN true\nFROM python:3.13-slim-bookworm"
    rewrite = rewrite_dockerfile(text, aliases=ALIASES, ca_file=CA_CONTEXT_NAME)
    lines = rewrite.text.splitlines()
    copies = [i for i, line in enumerate(lines) if line == f"COPY {CA_CONTEXT_NAME} {HOST_CA_PATH}"]
    froms = [i for i, line in enumerate(lines) if line.startswith("FROM ")]
    assert [i - 1 for i in copies] == froms
    env = lines[copies[0] + 1]
    for name in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"):
        assert f"{name}={HOST_CA_PATH}" in env


def test_the_host_bundle_is_found_in_order(tmp_path: Path) -> None:
    bundle, other = tmp_path / "corp.pem", tmp_path / "other.pem"
    bundle.write_text("pem")
    other.write_text("pem")
    pip_conf = tmp_path / "pip.conf"
    pip_conf.write_text(f"[global]\ncert = {bundle}\n")
    assert host_ca_bundle({}, pip_configs=[]) is None
    assert host_ca_bundle({}, pip_configs=[tmp_path / "missing.conf", pip_conf]) == bundle
    assert host_ca_bundle({"SSL_CERT_FILE": str(other)}, pip_configs=[pip_conf]) == other
    assert host_ca_bundle({"PIP_CERT": str(bundle), "SSL_CERT_FILE": str(other)}, pip_configs=[]) == bundle
    assert host_ca_bundle({"COMET_CA_BUNDLE": str(other), "PIP_CERT": str(bundle)}, pip_configs=[]) == other
    assert host_ca_bundle({"COMET_CA_BUNDLE": "none", "PIP_CERT": str(bundle)}, pip_configs=[pip_conf]) is None
    assert host_ca_bundle({"PIP_CERT": str(tmp_path / "gone.pem")}, pip_configs=[]) is None  # only files count


def test_npm_on_this_machine_trusts_the_bundle_pip_was_configured_with(tmp_path: Path) -> None:
    bundle = tmp_path / "corp.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    env = installer_environment({"PIP_CERT": str(bundle), "PATH": "/usr/bin"})
    assert env == {"PIP_CERT": str(bundle), "PATH": "/usr/bin", "NODE_EXTRA_CA_CERTS": str(bundle)}
    mine = {"PIP_CERT": str(bundle), "NODE_EXTRA_CA_CERTS": "/mine.pem"}
    assert installer_environment(mine) == mine  # what the user set stays
    assert "NODE_EXTRA_CA_CERTS" not in installer_environment({"COMET_CA_BUNDLE": "none", "PIP_CERT": str(bundle)})


def test_the_environment_for_a_container_and_the_proxies_for_a_build() -> None:
    assert set(ca_environment().values()) == {HOST_CA_PATH}
    assert ca_environment("/x.pem")["NODE_EXTRA_CA_CERTS"] == "/x.pem"
    environ = {"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "HOME": "/root", "HTTP_PROXY": ""}
    assert proxy_build_args(environ) == {"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost"}


# --- the build context -----------------------------------------------------------------------------------


def test_the_context_leaves_out_every_skill_and_adds_the_ca(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    for name in ("skills/pdf/SKILL.md", "tools/helper/SKILL.md", "tools/helper/x.py", "tools/other/y.py", "Dockerfile"):
        (env / name).parent.mkdir(parents=True, exist_ok=True)
        (env / name).write_text(name)
    (env / ".dockerignore").write_text("*\n!tools\n")
    drop = skill_folders(env)
    assert drop == ["skills", "tools/helper"]
    ca = tmp_path / "ca.pem"
    ca.write_text("PEM")
    make_context(env, tmp_path / "ctx", drop=drop, ca_bundle=ca)
    found = sorted(p.relative_to(tmp_path / "ctx").as_posix() for p in (tmp_path / "ctx").rglob("*") if p.is_file())
    assert found == [CA_CONTEXT_NAME, ".dockerignore", "Dockerfile", "tools/other/y.py"]
    assert (tmp_path / "ctx" / ".dockerignore").read_text().endswith(f"\n!{CA_CONTEXT_NAME}\n")
    assert (env / "skills/pdf/SKILL.md").is_file()  # the task's own folder is untouched


def test_a_skill_at_the_top_of_the_context_drops_that_file_alone(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("x")
    (tmp_path / "app.py").write_text("x")
    assert skill_folders(tmp_path) == ["SKILL.md"]
