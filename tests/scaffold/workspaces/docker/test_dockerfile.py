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
