"""The images of a compose file's services, made the way a Harbor task's own image is made.

Each service's image goes through :func:`.harbor_image.harbor_image`, so it gets what a task's image gets:
image aliases and the offline stand-ins, a copy from another engine of a pool, the build time limit, a
failed build remembered for the session (``build_failed``), the host's CA bundle. To that end a service is
laid out as a Harbor task of its own in a scratch folder (:func:`service_task`): ``environment`` is a link
to its build context, ``Dockerfile`` its Dockerfile with the compose file's build ``args`` written in as the
defaults of its ``ARG`` lines (the Docker API's build arguments would do the same, but the task build has
none of its own to give, and this way the image's tag covers them). A service named by ``image`` is a
task whose prebuilt ``docker_image`` is that image, used as it is when the engine has it (through the
aliases); otherwise ``FROM <image>`` is built, which finds it as a Dockerfile's ``FROM`` would (a pool's
other engine, a pull), or fails as such a build does.

The main service is the task's own image (:mod:`.task_images`) unless the compose file builds it some
other way (another context, Dockerfile or arguments) or names an image for an environment without a
Dockerfile: then it is made here too. A service whose ``image`` is ``${MAIN_IMAGE_NAME}`` runs the main
service's image, as with Harbor.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from scaffold.catalog.compose import MAIN, main_image_name
from scaffold.catalog.compose_model import Service
from scaffold.catalog.tasks import HarborSettings, Task, TaskSpec
from scaffold.errors import ImageBuildError
from scaffold.workspaces.docker.build_failures import FailedBuilds
from scaffold.workspaces.docker.dockerfile import skill_folders
from scaffold.workspaces.docker.harbor_image import harbor_image
from scaffold.workspaces.engines import Engine

__all__ = ["ServiceImages", "custom_main", "image_maker", "service_task", "with_build_args"]

_ARG: Final = re.compile(
    r"""^(?P<head>[ \t]*ARG[ \t]+)(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\S*))?[ \t]*$""",
    re.IGNORECASE | re.MULTILINE,
)
_ARCHITECTURES: Final = {"amd64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64"), "386": ("i386", "i686")}


def with_build_args(text: str, args: Sequence[tuple[str, str]]) -> str:
    """*text* (a Dockerfile) with each ``ARG NAME[=default]`` line of a given argument defaulting to its
    value: what ``--build-arg NAME=value`` does (an ``ARG`` line naming several arguments is left alone)."""
    values = dict(args)

    def default(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in values:
            return match.group(0)
        quoted = values[name].replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        return f'{match.group("head")}{name}="{quoted}"'

    return _ARG.sub(default, text)


def custom_main(task: Task) -> Service | None:
    """The main service of *task*'s compose file when its image is made here (see the module docstring);
    None when it is the task's own image, built from ``environment/Dockerfile`` (or its ``docker_image``)."""
    compose = task.harbor.compose if task.harbor is not None else None
    if compose is None:
        return None
    main = compose.main
    if main.build is not None and not main.build.default:
        return main
    if main.build is None and main.image is not None and not (task.environment_dir / "Dockerfile").is_file():
        return main
    return None


def service_task(task: Task, service: Service, folder: Path) -> Task:
    """*service* of *task* as a Harbor task laid out in *folder* (empty), for :func:`harbor_image`."""
    assert task.harbor is not None
    environment = folder / "environment"
    settings = HarborSettings(build_timeout_sec=task.harbor.build_timeout_sec)
    without_skills = False
    if service.build is not None:
        context = (task.environment_dir / service.build.context).absolute()
        environment.symlink_to(context, target_is_directory=True)
        text = (context / service.build.dockerfile).read_text(encoding="utf-8")
        (folder / "Dockerfile").write_text(with_build_args(text, service.build.args), encoding="utf-8")
        # A context holding skills leaves them out as the task's own image does; one without any is the
        # same image in both variants, built once.
        without_skills = task.without_skills and bool(skill_folders(context))
    else:
        assert service.image is not None
        environment.mkdir()
        (folder / "Dockerfile").write_text(f"FROM {service.image}\n", encoding="utf-8")
        settings = HarborSettings(docker_image=service.image, build_timeout_sec=task.harbor.build_timeout_sec)
    name = f"{task.name}-{service.name}"
    spec = TaskSpec.model_validate({"metadata": {"name": name}, "environment": {"dockerfile": "Dockerfile"}})
    return Task(name, folder, spec, format="harbor", harbor=settings, without_skills=without_skills)


class ServiceImages:
    """The sidecars' images of the compose tasks of one engine (*client*): made once per task variant
    with *build* (:func:`harbor_image` with the backend's aliases, base image, time limit, pool and failed
    builds bound), checked against the engine's *architecture*; *main_of* gives a task's own image."""

    def __init__(self, build: Callable[[Task], str], *, architecture: str, main_of: Callable[[Task], str]) -> None:
        self._build = build
        self._architecture = architecture
        self._main_of = main_of
        self._made: dict[tuple[str, bool], dict[str, str]] = {}

    def prepare(self, task: Task) -> Mapping[str, str]:
        """Each sidecar's image tag by service name (empty for a task without a compose file)."""
        key = (task.name, task.without_skills)
        if key not in self._made:
            compose = task.harbor.compose if task.harbor is not None else None
            made: dict[str, str] = {}
            for service in compose.services if compose is not None else ():
                made[service.name] = self.image(task, service)
            self._made[key] = made
        return self._made[key]

    def of(self, task: Task) -> Mapping[str, str]:
        """What :meth:`prepare` made for *task* (empty when it has no compose file)."""
        return self._made.get((task.name, task.without_skills), {})

    def image(self, task: Task, service: Service) -> str:
        """The image *service* of *task* runs (see the module docstring)."""
        self._check_platform(task, service)
        if service.build is None and service.image == main_image_name(task.name) and service.name != MAIN:
            return self._main_of(task)
        with tempfile.TemporaryDirectory(prefix="comet-service-") as tmp:
            return self._build(service_task(task, service, Path(tmp)))

    def _check_platform(self, task: Task, service: Service) -> None:
        if service.platform is None:
            return
        os_name, _, arch = service.platform.partition("/")
        arch = arch.split("/")[0]
        if os_name == "linux" and self._architecture in _ARCHITECTURES.get(arch, (arch,)):
            return
        raise ImageBuildError(
            f"task {task.name}: services.{service.name}.platform is {service.platform}, and the engine runs "
            f"linux/{self._architecture}",
            image=service.image or service.name,
        )


def image_maker(
    client: Any,
    engine: Engine,
    *,
    aliases: Mapping[str, str],
    base_image: str,
    build_timeout: float,
    fetch: Callable[[str], bool],
    failed: FailedBuilds,
) -> Callable[[Task], str]:
    """:func:`harbor_image` with one backend's settings bound: how :class:`ServiceImages` makes an image."""

    def build(task: Task) -> str:
        return harbor_image(
            client,
            task,
            aliases=aliases,
            base_image=base_image,
            build_timeout=build_timeout,
            engine=engine,
            fetch=fetch,
            failed=failed,
        )

    return build
