"""Which build failures are the task's (ImageBuildError) and which the engine's, and the session's memory of
the images that cannot be built: no engine needed (the real builds are in test_docker_backend.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scaffold.errors import ImageBuildError
from scaffold.workspaces.docker.build_failures import FailedBuilds
from scaffold.workspaces.docker.images import deterministic


@pytest.mark.parametrize(
    ("step", "error", "detail", "expected"),
    [
        # What the classic builder says (engine 20.10), step by step.
        ("RUN exit 3", "The command '/bin/sh -c exit 3' returned a non-zero code: 3", {"code": 3}, True),
        ("RUN pip install numpy==1.26.4", "The command ... returned a non-zero code: 1", {"code": 1}, True),
        ("COPY miss[i]ng /x/", "COPY failed: no source files were specified", {}, True),
        ("COPY missing.txt /x", "COPY failed: file not found in build context or excluded by .dockerignore", {}, True),
        # The FROM image could not be had: the registry or the network, not the Dockerfile's steps.
        (
            "FROM nosuch/image:1",
            'Get "https://registry-1.docker.io/v2/": dial tcp: lookup ...: no such host',
            {},
            False,
        ),
        ("", "the engine stopped", {}, False),
        # The engine's own machinery failed under a step.
        ("RUN make", "failed to register layer: write /x: no space left on device", {}, False),
        ("RUN make", "OCI runtime create failed: container_linux.go: starting container process", {}, False),
        ("COPY . /app", "Error processing tar file(exit status 1): unexpected EOF", {}, False),
    ],
)
def test_a_failed_step_is_the_tasks_an_engine_that_failed_is_not(
    step: str, error: str, detail: dict[str, Any], expected: bool
) -> None:
    assert deterministic(step, error, detail) is expected


def _error(image: str = "comet-eval/task-t:abc") -> ImageBuildError:
    return ImageBuildError(
        f"building the image {image} failed at `RUN exit 3`: code 3", image=image, step="RUN exit 3", log="log\n"
    )


def test_the_sessions_processes_share_what_cannot_be_built(tmp_path: Path) -> None:
    worker, other_worker = FailedBuilds("s1", tmp_path), FailedBuilds("s1", tmp_path)
    assert worker.known("comet-eval/task-t:abc") is None
    worker.remember(_error())
    found = other_worker.known("comet-eval/task-t:abc")
    assert found is not None
    assert (str(found), found.image, found.step, found.log) == (str(_error()), _error().image, "RUN exit 3", "log\n")
    assert other_worker.known("comet-eval/task-t:other") is None  # another content is another image
    # Another session (a resumed experiment with --rerun-errors) builds for itself.
    assert FailedBuilds("s2", tmp_path).known("comet-eval/task-t:abc") is None
    (file,) = tmp_path.iterdir()
    assert file.name == "comet-eval_task-t_abc.failed.json"
    assert json.loads(file.read_text())["session"] == "s1"


def test_an_unreadable_memory_builds_again(tmp_path: Path) -> None:
    builds = FailedBuilds("s1", tmp_path)
    builds.remember(_error())
    (file,) = tmp_path.iterdir()
    file.write_text("{not json")
    assert FailedBuilds("s1", tmp_path).known("comet-eval/task-t:abc") is None
    assert builds.known("comet-eval/task-t:abc") is not None  # what this process met, it keeps
