"""The image each task's containers run: made ready once per backend, and what a container takes from it.

Two kinds of task, one way in (:meth:`TaskImages.prepare`):

* ours, ``FROM ${BASE_IMAGE}``: built here on the offline base image (:mod:`.images`), tagged by a hash of
  the environment folder, the Dockerfile, the base image's id and the agent layer's key, and reused while
  that hash holds; the base image is copied from another engine of a pool first when this one lacks it;
* a Harbor-format task, or one of ours whose Dockerfile names its own base image: as :mod:`.harbor_image`
  makes it (its prebuilt ``docker_image``, else its Dockerfile rewritten and built); a variant without the
  environment's skills is searched for any SKILL.md that got in another way.

A build that failed at a step of its Dockerfile (or a skill that leaked) is remembered: every later trial
of the task fails at once with the same error instead of after another build, in this process and (the
build, :mod:`.build_failures`) in the session's other processes. A build the engine or the network broke
is not: the next trial (or ``--retry-excluded``'s next attempt) builds again. This module lives beside
:mod:`.images` rather than in it because it builds on :mod:`.harbor_image`, which itself builds on
:mod:`.images`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.catalog.compose_model import Service
from scaffold.catalog.tasks import Task
from scaffold.errors import ImageBuildError, SkillLeakError, WorkspaceError
from scaffold.workspaces.docker.build_failures import FailedBuilds
from scaffold.workspaces.docker.compose_images import custom_main, service_task
from scaffold.workspaces.docker.engine import connect, engine_lock, image_id, state_dir
from scaffold.workspaces.docker.harbor_image import (
    WITHOUT_SKILLS,
    built_as_written,
    find_skills,
    harbor_image,
    harbor_image_tag,
    plan_build,
)
from scaffold.workspaces.docker.images import build_image, copy_image, task_image_tag
from scaffold.workspaces.docker.sessions import LABEL, OWNER
from scaffold.workspaces.engines import Engine

__all__ = ["PreparedImage", "TaskImages"]


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """A task's image on the engine, with what its containers start from."""

    tag: str
    path: str  # the image's PATH, to put agent bin folders in front of
    workdir: str = "/"  # the image's WORKDIR: a Harbor task's workspace root
    entrypoint: tuple[str, ...] = ()  # the image's ENTRYPOINT: a Harbor task's container starts it too


def _variant(task: Task) -> str:
    """The key of a task's image: its name, and whether the environment's skills are left out."""
    return task.name + (WITHOUT_SKILLS if task.without_skills else "")


class TaskImages:
    """The task images of one engine for one backend: *base_image* is what ``FROM ${BASE_IMAGE}`` names,
    *image_aliases* (normalised keys) map the images Harbor-format Dockerfiles name to local ones, over
    their default stand-ins (scaffold.workspaces.stand_ins),
    *image_sources* are engines to copy a missing image from, *agent_key* is part of our tasks' tags,
    *failed* the session's builds that failed (:mod:`.build_failures`)."""

    def __init__(
        self,
        client: Any,
        engine: Engine,
        *,
        base_image: str,
        build_timeout: float,
        image_aliases: Mapping[str, str],
        image_sources: Sequence[Engine],
        agent_key: str,
        failed: FailedBuilds,
    ) -> None:
        self._client = client
        self._engine = engine
        self.base_image = base_image
        self.build_timeout = build_timeout
        self.image_aliases = dict(image_aliases)
        self.image_sources = tuple(image_sources)
        self._agent_key = agent_key
        self._builds = failed
        self._images: dict[str, PreparedImage] = {}  # by _variant(task)
        self._failed: dict[str, WorkspaceError] = {}  # by _variant(task): what fails the same way every time
        self._skills_found: dict[str, tuple[str, ...]] = {}  # image id -> its SKILL.md files

    def prepare(self, task: Task) -> PreparedImage:
        """Build (or reuse) the task's image, once."""
        key = _variant(task)
        if key in self._failed:  # a broken build (or a skill leak) fails every trial at once, not after another build
            raise self._failed[key]
        if key not in self._images:
            try:
                self._images[key] = self._task_image(task)
            except (ImageBuildError, SkillLeakError) as exc:
                self._failed[key] = exc  # an engine that failed under a build is not: it may be back
                raise
        return self._images[key]

    def of(self, task: Task) -> PreparedImage:
        """The prepared image of *task* (its variant: with or without the environment's skills)."""
        return self._images[_variant(task)]

    def image_tag(self, task: Task) -> str:
        """``comet-eval/task-<name>:<hash>`` of the environment folder, base image id and agent key; for a
        Harbor-format task, of its build as :mod:`.harbor_image` makes it (``-without-skills`` variant)."""
        written = built_as_written(task)
        if written is not None:
            build = plan_build(written, aliases=self.image_aliases, base_image=self.base_image)
            with tempfile.TemporaryDirectory(prefix="comet-harbor-tag-") as tmp:
                return harbor_image_tag(self._client, written, build, Path(tmp))
        base = image_id(self._client, self.base_image)
        extra = {"base": base or f"missing:{self.base_image}", "agent": self._agent_key}
        return task_image_tag(task.name, task.environment_dir, self._dockerfile(task), extra)

    def fetch_image(self, tag: str) -> bool:
        """Make sure the engine has *tag*, copying it from one of :attr:`image_sources` when it does not
        (under the engine's lock: once per engine); False when it is not there and no source has it."""
        if image_id(self._client, tag) is not None:
            return True
        if not self.image_sources:
            return False
        with engine_lock(self._engine, f"load-{tag}"):
            if image_id(self._client, tag) is not None:
                return True
            for source in self.image_sources:
                if source.url == self._engine.url:
                    continue
                try:
                    client = connect(source, timeout=600)
                except WorkspaceError:
                    continue  # that engine is down: another may have it
                try:
                    if copy_image(client, self._client, tag):
                        return True
                finally:
                    client.close()
        return False

    def relay_image(self) -> str:
        """The image of a remote engine's egress relay: the base image (it has python3), copied from
        another engine of the pool when missing."""
        if not self.fetch_image(self.base_image):
            raise WorkspaceError(
                f"the egress relay on {self._engine.url} needs the base image {self.base_image} there: build it "
                f"with `DOCKER_HOST={self._engine.url} comet images build-base`, or load it into that engine"
            )
        return self.base_image

    def _dockerfile(self, task: Task) -> Path:
        return task.root / task.spec.environment.dockerfile

    def _task_image(self, task: Task) -> PreparedImage:
        if (main := custom_main(task)) is not None:  # a compose file's main service, built otherwise
            return self._compose_main(task, main)
        written = built_as_written(task)
        if written is not None:
            return self._harbor(task, written)
        self.fetch_image(self.base_image)
        tag = self.image_tag(task)
        safe = tag.replace("/", "_").replace(":", "_")
        with engine_lock(self._engine, f"image-{safe}"):
            if image_id(self._client, tag) is None:
                known = self._builds.known(tag)
                if known is None:
                    known = self._build(task, tag, state_dir() / "builds" / f"{safe}.log")
                if known is not None:
                    raise known.prefixed(f"task {task.name}: ") from None
        return self._image_config(tag)

    def _compose_main(self, task: Task, main: Service) -> PreparedImage:
        """The image of *task*'s compose main service when it is not the environment's Dockerfile as it is
        (:func:`~.compose_images.custom_main`): made as a Harbor task's image, then searched for skills."""
        with tempfile.TemporaryDirectory(prefix="comet-service-") as tmp:
            return self._harbor(task, service_task(task, main, Path(tmp)))

    def _harbor(self, task: Task, layout: Task) -> PreparedImage:
        """*layout* (a Harbor task, or *task*'s compose main service laid out as one) made as a Harbor
        task's image, then searched for skills when *task* is the variant without them."""
        tag = harbor_image(
            self._client,
            layout,
            aliases=self.image_aliases,
            base_image=self.base_image,
            build_timeout=self.build_timeout,
            engine=self._engine,
            fetch=self.fetch_image,
            failed=self._builds,
        )
        if task.without_skills:
            self._check_no_skills(tag)
        return self._image_config(tag)

    def _build(self, task: Task, tag: str, log_path: Path) -> ImageBuildError | None:
        """Build our *task*'s image *tag*; the ImageBuildError when a step failed (remembered for the
        session), None when it was built; a WorkspaceError when the engine failed under it."""
        try:
            build_image(
                context=task.environment_dir,
                dockerfile=self._dockerfile(task),
                tag=tag,
                buildargs={"BASE_IMAGE": self.base_image},
                labels={**OWNER, f"{LABEL}.task": task.name},
                timeout=self.build_timeout,
                log_path=log_path,
                engine=self._engine,
            )
        except ImageBuildError as exc:
            self._builds.remember(exc)
            return exc
        except WorkspaceError as exc:
            hint = ""
            if image_id(self._client, self.base_image) is None:
                hint = f"\n(the base image {self.base_image} is missing: build it with `comet images build-base`)"
            raise WorkspaceError(f"task {task.name}: {exc}{hint}") from None
        return None

    def _image_config(self, tag: str) -> PreparedImage:
        config = self._client.images.get(tag).attrs.get("Config") or {}
        env = config.get("Env") or []
        path = next((e.split("=", 1)[1] for e in env if e.startswith("PATH=")), "/usr/local/bin:/usr/bin:/bin")
        return PreparedImage(tag, path, config.get("WorkingDir") or "/", tuple(config.get("Entrypoint") or ()))

    def _check_no_skills(self, tag: str) -> None:
        """SkillLeakError when the image *tag* (meant to be without the task's skills) holds a SKILL.md;
        searched once per image id (a CONTROL image shared by tasks is searched once)."""
        key = image_id(self._client, tag) or tag
        if key not in self._skills_found:
            self._skills_found[key] = find_skills(self._client, tag)
        if self._skills_found[key]:
            raise SkillLeakError(tag, self._skills_found[key])
