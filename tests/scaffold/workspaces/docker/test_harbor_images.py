"""Harbor-format task images against a real engine: the base images, aliases, the host's CA in a build
that installs from PyPI, the variant without skills and the leak check, a prebuilt docker_image, and the
errors of an image that is missing.

Needs ``DOCKER_HOST``; builds ``comet-eval/base:bookworm`` and ``:trixie`` once when missing (CI builds them
first). Skipped without an engine, except under ``COMET_REQUIRE_DOCKER=1`` where that is a failure. Nothing
is pulled from a registry: the missing image is on ``registry.invalid``, which resolves nowhere.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import HarborSettings, Task, TaskSpec, load_task
from scaffold.errors import ImageBuildError, SkillLeakError, WorkspaceError
from scaffold.workspaces.docker import DockerBackend
from scaffold.workspaces.docker.base_image import base_tag
from scaffold.workspaces.docker.harbor_image import find_skills
from scaffold.workspaces.docker.host_trust import host_ca_bundle
from tests.support.factories import TaskFactory

pytestmark = pytest.mark.docker

Make = Callable[..., DockerBackend]
TRIXIE = base_tag("trixie")
BOOKWORM = base_tag("bookworm")


@pytest.fixture
def bases(docker_base_image: str, docker_trixie_image: str) -> tuple[str, str]:
    return docker_base_image, docker_trixie_image


def harbor_task(
    root: Path,
    dockerfile: str,
    *,
    files: Mapping[str, str] | None = None,
    without_skills: bool = False,
    docker_image: str | None = None,
    build_timeout_sec: float | None = None,
) -> Task:
    """A Harbor-format task as the loader makes one (only what the image needs)."""
    name = f"h-{uuid.uuid4().hex[:10]}"
    env = root / name / "environment"
    env.mkdir(parents=True)
    (env / "Dockerfile").write_text(dockerfile)
    for rel, text in (files or {}).items():
        (env / rel).parent.mkdir(parents=True, exist_ok=True)
        (env / rel).write_text(text)
    return Task(
        name=name,
        root=root / name,
        spec=TaskSpec.model_validate({"metadata": {"name": name}}),
        format="harbor",
        harbor=HarborSettings(docker_image=docker_image, build_timeout_sec=build_timeout_sec),
        without_skills=without_skills,
    )


def variant(task: Task, *, without_skills: bool) -> Task:
    return dataclasses.replace(task, without_skills=without_skills)


@pytest.fixture
def make_backend(tmp_path: Path) -> Iterator[Callable[..., DockerBackend]]:
    """Backends with the given image aliases, closed at the end."""
    made: list[DockerBackend] = []

    def make(aliases: Mapping[str, str] | None = None) -> DockerBackend:
        made.append(DockerBackend(tmp_path / f"ws{len(made)}", image_aliases=aliases))
        return made[-1]

    yield make
    for backend in made:
        backend.close()


def output(client: Any, image: str, command: str) -> str:
    out = client.containers.run(image, ["bash", "-c", command], remove=True, network_mode="none")
    return bytes(out).decode()


# --- the base images -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "python"), [("bookworm", "3.11"), ("trixie", "3.13")])
def test_a_base_image_has_what_python_slim_and_ubuntu_images_have(
    bases: tuple[str, str], docker_client: Any, release: str, python: str
) -> None:
    commands = "bash sh ls cat grep sed awk find xargs tar gzip ps kill apt-get dpkg python python3 pip pip3"
    script = (
        f"for c in {commands} node npm git curl; do command -v $c >/dev/null || echo missing $c; done; "
        "python --version; pip --version | cut -d' ' -f1; python -m venv /tmp/v && /tmp/v/bin/python -c 'print(1)'; "
        'echo "PEP668=$PIP_BREAK_SYSTEM_PACKAGES"; echo "PATH=$PATH"; '
        # The interpreter's headers, as the python:* images (-slim too) have them; no compiler, as -slim.
        "python3-config --includes; "
        'test -f "$(python3 -c \'import sysconfig; print(sysconfig.get_paths()["include"])\')/Python.h" '
        "&& echo Python.h; command -v gcc || echo no-gcc; "
        "test -s /etc/ssl/certs/ca-certificates.crt && echo ca"
    )
    out = output(docker_client, base_tag(release), script)
    assert f"-I/usr/include/python{python}" in out and "Python.h" in out and "no-gcc" in out, out
    assert "missing" not in out
    assert f"Python {python}." in out and "pip" in out and "\n1\n" in out
    assert "PEP668=1" in out and "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in out
    assert out.rstrip().endswith("ca")


@pytest.mark.parametrize("release", ["bookworm", "trixie"])
def test_pip_is_installed_by_pip_and_so_can_replace_itself(
    bases: tuple[str, str], docker_client: Any, release: str
) -> None:
    # Debian's python3-pip marked pip "installed by debian": `pip install --upgrade pip==25.2`, common in
    # Terminal-Bench 2 Dockerfiles, failed with "Cannot uninstall pip". A reinstall (offline) removes it first.
    script = (
        "pip --version; python -c 'import setuptools' && echo setuptools; "
        "pip install -q --force-reinstall --no-index --find-links /usr/share/python-wheels pip && echo reinstalled"
    )
    out = output(docker_client, base_tag(release), script)
    assert "/usr/local/lib/python3" in out.splitlines()[0], out
    assert "setuptools" in out and out.rstrip().endswith("reinstalled"), out


def test_build_base_takes_the_release(bases: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    from scaffold.cli.main import main

    assert main(["images", "build-base", "--release", "trixie"]) == 0
    assert "comet-eval/base:trixie already present, reused" in capsys.readouterr().out


# --- aliases and the host's CA ---------------------------------------------------------------------------

PIP_INSTALL = "FROM python:3.13-slim-bookworm\nRUN pip install --no-cache-dir --retries 0 --timeout 30 six==1.17.0\n"


def _pypi_needs_the_host_ca(client: Any) -> bool:
    """Whether HTTPS to PyPI fails from a container that lacks the host's bundle (a TLS-intercepting proxy)."""
    probe = (
        "import urllib.request, ssl\ntry:\n urllib.request.urlopen('https://pypi.org/simple/six/', timeout=20)\n"
        "except ssl.SSLError: print('needs-ca')\n"
        "except Exception as e:\n print('needs-ca' if 'CERTIFICATE' in str(e) else e)\n"
    )
    return "needs-ca" in bytes(client.containers.run(TRIXIE, ["python3", "-c", probe], remove=True)).decode()


@pytest.mark.slow
def test_an_aliased_build_installs_from_pypi_over_https_with_the_host_ca(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path, docker_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = harbor_task(tmp_path, PIP_INSTALL)
    backend = make_backend({"python:3.13-slim-bookworm": TRIXIE})
    backend.prepare(task)
    image = backend._image_of(task).tag
    assert image.startswith(f"comet-eval/task-{task.name}:")
    assert "six.py" in output(docker_client, image, "python -c 'import six; print(six.__file__)'")
    if host_ca_bundle() is not None:
        env = output(docker_client, image, "echo $PIP_CERT $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS")
        assert env.split() == ["/usr/local/share/comet-eval/host-ca.pem"] * 3
    # Without the host's bundle, the same build fails where HTTPS goes through an intercepting proxy.
    if host_ca_bundle() is not None and _pypi_needs_the_host_ca(docker_client):
        monkeypatch.setenv("COMET_CA_BUNDLE", "none")
        with pytest.raises(WorkspaceError, match=r"(?i)certificate|ssl"):
            make_backend({"python:3.13-slim-bookworm": TRIXIE}).prepare(harbor_task(tmp_path, PIP_INSTALL))


def test_an_alias_is_part_of_the_image_tag(bases: tuple[str, str], make_backend: Make, tmp_path: Path) -> None:
    task = harbor_task(tmp_path, "FROM ubuntu:24.04\nRUN true\n")
    one = make_backend({"ubuntu:24.04": TRIXIE}).image_tag(task)
    assert make_backend({"docker.io/library/ubuntu:24.04": TRIXIE}).image_tag(task) == one
    assert make_backend({"ubuntu:24.04": BOOKWORM}).image_tag(task) != one


def test_without_an_alias_each_image_builds_on_its_default_stand_in(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path
) -> None:
    ubuntu = harbor_task(tmp_path, "FROM ubuntu:24.04\nRUN true\n")
    assert make_backend().image_tag(ubuntu) == make_backend({"ubuntu:24.04": BOOKWORM}).image_tag(ubuntu)
    assert make_backend().image_tag(ubuntu) != make_backend({"ubuntu:24.04": TRIXIE}).image_tag(ubuntu)
    python = harbor_task(tmp_path, "FROM python:3.13-slim\nRUN true\n")
    assert make_backend().image_tag(python) == make_backend({"python:3.13-slim": TRIXIE}).image_tag(python)


def test_our_own_tasks_keep_their_image_tags(bases: tuple[str, str], make_backend: Make, factory: TaskFactory) -> None:
    task = load_task(factory.task("own-tag"))
    assert make_backend({"ubuntu:24.04": TRIXIE}).image_tag(task) == make_backend().image_tag(task)


# --- skills ----------------------------------------------------------------------------------------------

SKILLS_DOCKERFILE = "FROM ubuntu:24.04\nCOPY skills /root/.claude/skills\nCOPY . /app\nWORKDIR /app\n"
SKILL_FILES = {"skills/demo/SKILL.md": "---\nname: demo\n---\n", "data.txt": "data"}


def test_without_skills_the_image_has_none_and_both_variants_coexist(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path, docker_client: Any
) -> None:
    with_skills = harbor_task(tmp_path, SKILLS_DOCKERFILE, files=SKILL_FILES)
    control = variant(with_skills, without_skills=True)
    backend = make_backend({"ubuntu:24.04": BOOKWORM})
    backend.prepare(control)
    backend.prepare(with_skills)
    bare, full = backend._image_of(control).tag, backend._image_of(with_skills).tag
    assert "-without-skills:" in bare and "-without-skills" not in full
    assert find_skills(docker_client, bare) == ()
    assert find_skills(docker_client, full) == ("/app/skills/demo/SKILL.md", "/root/.claude/skills/demo/SKILL.md")
    assert "data.txt" in output(docker_client, bare, "ls /app")


# SkillsBench's ab-testing-stats copies its skills with a glob, and projects copy optional folders the same
# way (BuildKit copies nothing for a wildcard that matches nothing; the classic builder the API gives us stops).
GLOB_DOCKERFILE = (
    "FROM ubuntu:24.04\nCOPY skill[s] /tmp/skills_src/\nCOPY plugin[s]/ /opt/plugins/\nCOPY data.txt /app/\n"
)


def test_a_glob_copy_of_the_skills_builds_in_both_variants_and_reaches_no_skill_without_them(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path, docker_client: Any
) -> None:
    with_skills = harbor_task(tmp_path, GLOB_DOCKERFILE, files=SKILL_FILES)
    control = variant(with_skills, without_skills=True)
    backend = make_backend({"ubuntu:24.04": BOOKWORM})
    backend.prepare(with_skills)  # the leak check of the variant without skills passes too, or this raises
    backend.prepare(control)
    full, bare = backend._image_of(with_skills).tag, backend._image_of(control).tag
    assert find_skills(docker_client, full) == ("/tmp/skills_src/demo/SKILL.md",)
    assert find_skills(docker_client, bare) == ()
    listing = output(
        docker_client, bare, "ls /app; test -e /opt/plugins || echo no-plugins; ls -A /tmp/skills_src; true"
    )
    assert listing.split() == ["data.txt", "no-plugins"]  # the optional folder is not made, and no skill


@pytest.mark.parametrize(
    ("line", "step", "said"),
    [
        ("COPY missing.txt /app/", "COPY missing.txt /app/", "file not found in build context"),
        ("FOO bar", "", "unknown instruction: FOO"),  # refused before any step (HTTP 400)
    ],
)
def test_a_dockerfile_that_cannot_be_built_is_a_build_error_of_the_task(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path, line: str, step: str, said: str
) -> None:
    task = harbor_task(tmp_path, f"FROM ubuntu:24.04\n{line}\n")
    with pytest.raises(ImageBuildError) as caught:
        make_backend({"ubuntu:24.04": BOOKWORM}).prepare(task)
    assert caught.value.step == step
    assert said in str(caught.value) and said in caught.value.log
    assert str(caught.value).startswith(f"task {task.name}: building the image comet-eval/task-{task.name}:")


def test_a_skill_that_reaches_the_image_another_way_is_a_leak(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path
) -> None:
    dockerfile = "FROM ubuntu:24.04\nRUN mkdir -p /usr/share/skills/x && echo skill > /usr/share/skills/x/SKILL.md\n"
    task = harbor_task(tmp_path, dockerfile, without_skills=True)
    backend = make_backend({"ubuntu:24.04": BOOKWORM})
    with pytest.raises(SkillLeakError) as caught:
        backend.prepare(task)
    assert caught.value.paths == ("/usr/share/skills/x/SKILL.md",)
    assert "/usr/share/skills/x/SKILL.md" in str(caught.value)
    with pytest.raises(SkillLeakError) as again:  # every further trial fails at once, without a new search
        backend.prepare(task)
    assert again.value is caught.value
    backend.prepare(variant(task, without_skills=False))  # with its skills, a SKILL.md is no leak


# --- prebuilt images and missing ones --------------------------------------------------------------------


def test_a_prebuilt_docker_image_on_the_engine_is_used_without_building(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path, docker_client: Any
) -> None:
    prebuilt = f"comet-eval-test/prebuilt-{uuid.uuid4().hex[:8]}:20251031"
    docker_client.images.get(BOOKWORM).tag(prebuilt)
    try:
        # The Dockerfile names an image nobody can get: building it would fail.
        task = harbor_task(tmp_path, "FROM registry.invalid/nobody/never:1\n", docker_image=prebuilt)
        backend = make_backend()
        backend.prepare(task)
        assert backend._image_of(task).tag == prebuilt
    finally:
        docker_client.images.remove(prebuilt)


def test_a_missing_base_image_that_cannot_be_pulled_names_the_fix(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path
) -> None:
    task = harbor_task(tmp_path, "FROM registry.invalid/comet-eval/missing:1\nRUN true\n")
    with pytest.raises(WorkspaceError) as caught:
        make_backend().prepare(task)
    message = str(caught.value)
    assert "registry.invalid/comet-eval/missing:1 is not on the engine and cannot be pulled" in message
    assert "--image-alias registry.invalid/comet-eval/missing:1=comet-eval/base:trixie" in message
    assert "comet images build-base --release trixie" in message


def test_an_alias_to_a_missing_local_image_names_the_fix(
    bases: tuple[str, str], make_backend: Make, tmp_path: Path
) -> None:
    task = harbor_task(tmp_path, "FROM ubuntu:24.04\n")
    with pytest.raises(
        WorkspaceError, match=r"ubuntu:24\.04 is aliased to comet-eval/base:nonexistent, which is not on"
    ):
        make_backend({"ubuntu:24.04": "comet-eval/base:nonexistent"}).prepare(task)


def test_the_tasks_build_timeout_applies(bases: tuple[str, str], make_backend: Make, tmp_path: Path) -> None:
    task = harbor_task(tmp_path, f"FROM ubuntu:24.04\nRUN echo {uuid.uuid4()} && sleep 95\n", build_timeout_sec=2)
    with pytest.raises(WorkspaceError, match="took longer than 2s and was cancelled"):
        make_backend({"ubuntu:24.04": BOOKWORM}).prepare(task)
