"""Image aliases: REF=LOCAL from the command line, $COMET_IMAGE_ALIASES and a TOML file."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.errors import SelectionError
from scaffold.session import HarnessSession, Options
from scaffold.workspaces.image_aliases import alias_for, normalise_ref, parse_image_alias, resolve_image_aliases


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("python:3.13-slim-bookworm", "python:3.13-slim-bookworm"),
        ("docker.io/library/python:3.13-slim-bookworm", "python:3.13-slim-bookworm"),
        ("index.docker.io/library/ubuntu:24.04", "ubuntu:24.04"),
        ("docker.io/alexgshaw/task:20251031", "alexgshaw/task:20251031"),
        ("ubuntu", "ubuntu:latest"),
        ("gcr.io/oss-fuzz-base/base-runner", "gcr.io/oss-fuzz-base/base-runner:latest"),
        ("localhost:5000/x", "localhost:5000/x:latest"),
        ("localhost:5000/x:1", "localhost:5000/x:1"),
        ("python@sha256:abc", "python@sha256:abc"),
    ],
)
def test_references_are_compared_as_docker_compares_them(written: str, normal: str) -> None:
    assert normalise_ref(written) == normal


def test_an_alias_matches_every_spelling_and_a_pinned_digest() -> None:
    aliases = dict([parse_image_alias("python:3.13-slim-bookworm=comet-eval/base:trixie")])
    assert alias_for("docker.io/library/python:3.13-slim-bookworm", aliases) == "comet-eval/base:trixie"
    assert alias_for("python:3.13-slim-bookworm@sha256:0123", aliases) == "comet-eval/base:trixie"
    assert alias_for("python:3.13-slim", aliases) is None
    assert alias_for("ubuntu", {"ubuntu:latest": "x"}) == "x"


@pytest.mark.parametrize("entry", ["ubuntu:24.04", "=x", "ubuntu:24.04=", "a b=c", "x=y z"])
def test_a_malformed_alias_is_a_usage_error_naming_the_form(entry: str) -> None:
    with pytest.raises(SelectionError, match="REF=LOCAL"):
        parse_image_alias(entry)


def test_file_then_environment_then_command_line(tmp_path: Path) -> None:
    file = tmp_path / "aliases.toml"
    file.write_text(
        '[image-aliases]\n"ubuntu:24.04" = "from-file"\n"python:3.11-slim" = "from-file"\n"debian:13.0-slim" = "f"\n'
    )
    environ = {"COMET_IMAGE_ALIASES": "ubuntu:24.04=from-env, python:3.11-slim=from-env"}
    got = resolve_image_aliases(["python:3.11-slim=from-cli"], file, environ)
    assert got == {"ubuntu:24.04": "from-env", "python:3.11-slim": "from-cli", "debian:13.0-slim": "f"}
    # The file may also be named by the environment.
    assert resolve_image_aliases([], None, {"COMET_IMAGE_ALIAS_FILE": str(file)})["ubuntu:24.04"] == "from-file"


@pytest.mark.parametrize(
    ("text", "message"),
    [("[other]\n", r"\[image-aliases\] table"), ("[image-aliases]\nx = 1\n", "must be a string"), ("[", "not valid")],
)
def test_a_bad_alias_file_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "aliases.toml"
    file.write_text(text)
    with pytest.raises(SelectionError, match=message) as caught:
        resolve_image_aliases([], file, {})
    assert str(file) in str(caught.value)


def test_the_session_resolves_the_aliases_it_hands_the_backend(tmp_path: Path) -> None:
    options = Options(root=tmp_path, image_aliases=("ubuntu:24.04=comet-eval/base:trixie",))
    session = HarnessSession(options, environ={"COMET_IMAGE_ALIASES": "python:3.13=comet-eval/base:trixie"})
    assert session.image_aliases() == {
        "ubuntu:24.04": "comet-eval/base:trixie",
        "python:3.13": "comet-eval/base:trixie",
    }


def test_comet_eval_hands_the_aliases_to_the_pytest_session(tmp_path: Path) -> None:
    from scaffold.cli.eval import command
    from scaffold.cli.eval.command import plan_eval
    from tests.scaffold.cli.eval.test_plan import args, manifest_data, skill

    folder = skill(tmp_path / "skills", manifest_data())
    parsed = args(folder, "--agent", "oracle", "--image-alias", "ubuntu:24.04=comet-eval/base:trixie")
    parsed.image_alias_file = tmp_path / "aliases.toml"
    parsed.image_alias_file.write_text('[image-aliases]\n"python:3.13" = "comet-eval/base:trixie"\n')
    plan = plan_eval(parsed, process_env={"HOME": str(tmp_path)})
    argv = command.pytest_arguments(plan, parsed, plan.manifest.file)
    assert "--comet-image-alias=ubuntu:24.04=comet-eval/base:trixie" in argv
    assert f"--comet-image-alias-file={tmp_path / 'aliases.toml'}" in argv


def test_the_plugin_reads_the_alias_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
        from pytest_comet.state import _options

        def test_options(request):
            options = _options(request.config, {})
            assert options.image_aliases == ("ubuntu:24.04=local:1", "python:3.13=local:2")
            assert str(options.image_alias_file).endswith("a.toml")
        """
    )
    result = pytester.runpytest_inprocess(
        "--comet-image-alias=ubuntu:24.04=local:1", "--image-alias=python:3.13=local:2", "--image-alias-file=a.toml"
    )
    result.assert_outcomes(passed=1)
