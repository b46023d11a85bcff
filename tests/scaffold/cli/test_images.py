"""``comet images list`` and ``comet images aliases``, and the session's warning for a task whose image's
Python no stand-in has: what each FROM image is built on, with no alias list to write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold.cli.main import main
from scaffold.session import HarnessSession, Options


def harbor_tasks(root: Path, images: dict[str, str]) -> Path:
    """A folder of Harbor tasks, each ``FROM`` its image (task name -> image)."""
    for name, image in images.items():
        folder = root / name
        (folder / "environment").mkdir(parents=True)
        (folder / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\n")
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
        (folder / "tests").mkdir()
        (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
        (folder / "task.toml").write_text('version = "1.0"\n')
        (folder / "instruction.md").write_text("Do it.\n")
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    images = {
        "exo": "python:3.9.19-slim",
        "cruise": "ubuntu:24.04",
        "tfidf": "python:3.11-slim",
        "certs": "python:3.13-slim-bookworm",
        "corewars": "debian:13.0-slim",
        "fuzz": "gcr.io/oss-fuzz-base/base-runner",
    }
    return harbor_tasks(tmp_path / "tasks", images)


def test_aliases_prints_what_each_image_builds_on_and_names_every_python_mismatch(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMET_IMAGE_ALIASES", raising=False)
    monkeypatch.delenv("COMET_IMAGE_ALIAS_FILE", raising=False)
    assert main(["images", "aliases", str(corpus)]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(("image", "warning"))}
    assert lines["python:3.9.19-slim"].split()[1:4] == ["comet-eval/base:bookworm", "stand-in", "3.9"]
    assert "3.9 -> 3.11" in lines["python:3.9.19-slim"] and lines["python:3.9.19-slim"].endswith("exo")
    assert "3.12 -> 3.11" in lines["ubuntu:24.04"]
    assert lines["python:3.11-slim"].split()[1:4] == ["comet-eval/base:bookworm", "stand-in", "3.11"]
    assert lines["debian:13.0-slim"].split()[1] == "comet-eval/base:trixie"
    assert "gcr.io/oss-fuzz-base/base-runner:latest" not in out  # no rule covers it: built as written
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3  # 3.9, 3.12 and the 3.13 of a -bookworm tag; never 3.11 or debian:13
    assert any("python:3.9.19-slim has Python 3.9" in w and "(tasks: exo)" in w for w in warnings)


def test_aliases_json_with_an_alias_over_the_rule(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "images",
        "aliases",
        str(corpus),
        "--json",
        "--rules",
        "--image-alias",
        "ubuntu:24.04=comet-eval/base:trixie",
    ]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    ubuntu = next(row for row in data["images"] if row["image"] == "ubuntu:24.04")
    assert (ubuntu["local"], ubuntu["by"], ubuntu["asks"], ubuntu["serves"]) == (
        "comet-eval/base:trixie",
        "alias",
        "3.12",
        "3.13",
    )
    assert ubuntu["tasks"] == ["cruise"]
    assert {row["image"] for row in data["rules"]} >= {"python:3.12-slim", "debian:13.0-slim"}


def test_aliases_of_tasks_on_the_base_image(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "own" / "t"
    (folder / "environment").mkdir(parents=True)
    (folder / "environment" / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    (folder / "task.yaml").write_text("metadata:\n  name: t\n")
    assert main(["images", "aliases", str(tmp_path / "own")]) == 0
    assert "none of the" in capsys.readouterr().out


def test_list_names_each_stand_in_and_its_python_without_an_engine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    assert main(["images", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(s["tag"], s["python"]) for s in data["stand_ins"]] == [
        ("comet-eval/base:bookworm", "3.11"),
        ("comet-eval/base:trixie", "3.13"),
    ]
    assert data["engine_problem"]
    assert main(["images"]) == 0  # the list is the group's default
    out = capsys.readouterr().out
    assert "comet-eval/base:trixie" in out and "3.13" in out and "unknown (no engine)" in out


def test_a_docker_session_warns_of_a_python_no_stand_in_has(corpus: Path, tmp_path: Path) -> None:
    options = Options(root=tmp_path, tasks_dirs=(corpus,), backend="docker", tasks=("exo", "tfidf"))
    warnings = HarnessSession(options, environ={}).task_warnings()
    assert warnings == [
        "task exo: python:3.9.19-slim has Python 3.9, its stand-in comet-eval/base:bookworm has Python 3.11 (no "
        "stand-in has 3.9): a pin without a wheel for 3.11 may not install"
    ]
