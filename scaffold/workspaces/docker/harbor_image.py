"""The image of a Harbor-format task: its prebuilt ``docker_image`` when the engine has it, else its
Dockerfile built as written (:mod:`.dockerfile`: aliases, skills left out, the host's CA bundle).

One image per (task, variant): ``without_skills`` (every treatment but the task's own skills) has its own
tag, ``comet-eval/task-<name>-without-skills:<hash>``, so CONTROL and the skills treatment coexist. The
hash covers the build context as handed to the engine (filtered, with the CA bundle), the rewritten
Dockerfile (so an alias change rebuilds) and the ids of the images it starts from (a rebuilt
``comet-eval/base:trixie`` rebuilds). The agent is not part of it: agents are mounted, not built in.
Wildcard COPY sources are matched against the context's entries (:func:`.dockerfile.context_entries`).

A build that fails at a step of the Dockerfile is remembered for the session (:mod:`.build_failures`):
the other trials of the same image fail at once with its error.

``python:*``, ``debian:*`` and ``ubuntu:*`` images are built on their default stand-in
(scaffold.workspaces.stand_ins) unless an image alias says otherwise; :func:`base_choices` lists what a
task's FROM lines get.
A ``FROM`` image missing from the engine and not aliased is pulled when the engine can; otherwise the
error names the image and the fix (``--image-alias``, ``comet images build-base``). A ``without_skills``
image is searched for SKILL.md files once (:func:`find_skills`): a skill that reached it another way (a
``RUN`` writing one, a base image holding one) is a :class:`~scaffold.errors.SkillLeakError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.catalog.tasks import HarborSettings, Task
from scaffold.errors import ImageBuildError, WorkspaceError
from scaffold.workspaces.docker.build_failures import FailedBuilds
from scaffold.workspaces.docker.dockerfile import (
    CA_CONTEXT_NAME,
    Rewrite,
    context_entries,
    make_context,
    rewrite_dockerfile,
    skill_folders,
)
from scaffold.workspaces.docker.engine import connect, engine_lock, image_id, safe_name, state_dir
from scaffold.workspaces.docker.host_trust import host_ca_bundle, proxy_build_args
from scaffold.workspaces.docker.images import build_image, task_image_tag
from scaffold.workspaces.docker.sessions import LABEL, OWNER
from scaffold.workspaces.engines import Engine
from scaffold.workspaces.image_aliases import alias_for
from scaffold.workspaces.stand_ins import ImageChoice, choose_image, stand_in_named

__all__ = [
    "HarborBuild",
    "base_choices",
    "built_as_written",
    "find_skills",
    "harbor_image",
    "harbor_image_tag",
    "plan_build",
]

PULL_READ_TIMEOUT_S = 30.0
"""A pull whose engine says nothing for this long is given up (an engine that cannot reach a registry
usually fails at once; one behind a firewall that drops packets would otherwise hang)."""
WITHOUT_SKILLS = "-without-skills"


@dataclass(frozen=True, slots=True)
class HarborBuild:
    """What building a Harbor task's Dockerfile takes: the rewrite, what the context leaves out, the CA."""

    rewrite: Rewrite
    drop: tuple[str, ...]
    ca_bundle: Path | None
    uses_base_arg: bool

    def make(self, task: Task, folder: Path) -> tuple[Path, Path]:
        """Write the context (``folder/context``) and the Dockerfile (``folder/Dockerfile``, outside it)."""
        context = folder / "context"
        make_context(task.environment_dir, context, drop=self.drop, ca_bundle=self.ca_bundle)
        dockerfile = folder / "Dockerfile"
        dockerfile.write_text(self.rewrite.text, encoding="utf-8")
        return context, dockerfile


def plan_build(task: Task, *, aliases: Mapping[str, str], base_image: str) -> HarborBuild:
    """The rewrite of *task*'s Dockerfile for its variant, with the host's CA bundle when it has one."""
    dockerfile = task.root / task.spec.environment.dockerfile
    try:
        text = dockerfile.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkspaceError(f"task {task.name}: cannot read {dockerfile}: {exc.strerror}") from None
    drop = tuple(skill_folders(task.environment_dir)) if task.without_skills else ()
    ca = host_ca_bundle()
    rewrite = rewrite_dockerfile(
        text,
        aliases=aliases,
        stand_ins=True,
        without_skills=task.without_skills,
        skill_dirs=("skills", *drop),
        ca_file=CA_CONTEXT_NAME if ca is not None else None,
        build_args={"BASE_IMAGE": base_image},
        context=context_entries(task.environment_dir),
    )
    return HarborBuild(rewrite, drop, ca, "BASE_IMAGE" in text)


def built_as_written(task: Task) -> Task | None:
    """*task* as the Harbor build takes it when its Dockerfile is to be built as written: a Harbor task,
    or one of ours whose Dockerfile names its own base image instead of ``FROM ${BASE_IMAGE}`` (the
    original Comet eval's tasks say ``FROM python:3.12-slim``): then aliases, stand-ins, pulls, the host's
    CA bundle and proxies apply to it too. None for ours on the offline base, built exactly as before."""
    if task.harbor is not None:
        return task
    try:
        text = (task.root / task.spec.environment.dockerfile).read_text(encoding="utf-8")
    except OSError:
        return None
    return None if "BASE_IMAGE" in text else dataclasses.replace(task, harbor=HarborSettings())


def base_choices(task: Task, aliases: Mapping[str, str], base_image: str) -> tuple[ImageChoice, ...]:
    """What each FROM image of *task*'s Dockerfile is built on instead (its alias, else its stand-in),
    in order; empty for a task built on *base_image* (``FROM ${BASE_IMAGE}``) or a Dockerfile that
    cannot be read (its build says so)."""
    written = built_as_written(task)
    if written is None:
        return ()
    try:
        text = (written.root / written.spec.environment.dockerfile).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    rewrite = rewrite_dockerfile(text, aliases=aliases, stand_ins=True, build_args={"BASE_IMAGE": base_image})
    choices = (choose_image(ref, aliases) for ref, _ in rewrite.aliased)
    return tuple(c for c in choices if c is not None)


def harbor_image_tag(client: Any, task: Task, build: HarborBuild, folder: Path) -> str:
    """The tag of *task*'s built image; writes its context into *folder* to hash it."""
    context, dockerfile = build.make(task, folder)
    bases = {ref: image_id(client, ref) or "missing" for ref in build.rewrite.bases}
    name = task.name + (WITHOUT_SKILLS if task.without_skills else "")
    return task_image_tag(name, context, dockerfile, {"format": "harbor", "bases": json.dumps(bases, sort_keys=True)})


def harbor_image(
    client: Any,
    task: Task,
    *,
    aliases: Mapping[str, str],
    base_image: str,
    build_timeout: float,
    engine: Engine | None = None,
    fetch: Callable[[str], bool] | None = None,
    failed: FailedBuilds | None = None,
) -> str:
    """The image a trial of Harbor-format *task* runs in: the prebuilt ``docker_image`` when the engine
    has it (through the aliases too; never pulled), else the Dockerfile built (once per content). *failed*:
    the session's builds that failed, not tried again (ImageBuildError at once)."""
    assert task.harbor is not None
    prebuilt = task.harbor.docker_image
    if prebuilt:
        ref = alias_for(prebuilt, aliases) or prebuilt
        # Without skills, a prebuilt image made with the environment's skills would only fail the leak
        # check: build the Dockerfile without them instead.
        skills_in_it = task.without_skills and bool(skill_folders(task.environment_dir))
        if image_id(client, ref) is not None and not skills_in_it:
            return ref
    build = plan_build(task, aliases=aliases, base_image=base_image)
    for ref in build.rewrite.bases:
        if fetch is not None and fetch(ref):  # a pool: copied from another engine that has it
            continue
        _ensure_present(client, ref, {local: written for written, local in build.rewrite.aliased}.get(ref), engine)
    with tempfile.TemporaryDirectory(prefix="comet-harbor-") as tmp:  # the context as the engine gets it
        folder = Path(tmp)
        tag = harbor_image_tag(client, task, build, folder)
        safe = safe_name(tag.replace("/", "_").replace(":", "_"))
        with engine_lock(engine, f"image-{safe}"):
            if image_id(client, tag) is None:
                known = failed.known(tag) if failed is not None else None
                if known is None:
                    args = proxy_build_args()
                    if build.uses_base_arg:
                        args["BASE_IMAGE"] = base_image
                    timeout = task.harbor.build_timeout_sec or build_timeout
                    try:
                        build_image(
                            context=folder / "context",
                            dockerfile=folder / "Dockerfile",
                            tag=tag,
                            buildargs=args,
                            labels={**OWNER, f"{LABEL}.task": task.name},
                            timeout=timeout,
                            log_path=state_dir() / "builds" / f"{safe}.log",
                            engine=engine,
                        )
                    except ImageBuildError as exc:
                        known = exc
                        if failed is not None:
                            failed.remember(exc)
                    except WorkspaceError as exc:
                        raise WorkspaceError(f"task {task.name}: {exc}") from None
                if known is not None:
                    raise known.prefixed(f"task {task.name}: ") from None
    return tag


def _ensure_present(client: Any, ref: str, aliased_from: str | None, engine: Engine | None) -> None:
    """*ref* on the engine: there already, or pulled; else a WorkspaceError with the fix."""
    if image_id(client, ref) is not None:
        return
    fix = (
        "build the local stand-ins with `comet images build-base --release trixie` (Python 3.13) or "
        "`--release bookworm` (Python 3.11)"
    )
    stand_in = stand_in_named(ref)
    if stand_in is not None:
        fix = f"build it with `comet images build-base --release {stand_in.release}`"
    if aliased_from is not None:
        raise WorkspaceError(f"{aliased_from} is aliased to {ref}, which is not on the engine: {fix}")
    problem = _pull(ref, engine)
    if problem is not None:
        raise WorkspaceError(
            f"the image {ref} is not on the engine and cannot be pulled ({problem}); on an engine that cannot "
            f"pull, map it to a local image: --image-alias {ref}=comet-eval/base:trixie, and {fix}"
        )


def _pull(ref: str, engine: Engine | None) -> str | None:
    """Pull *ref*; the engine's complaint when that fails, else None."""
    from docker.utils import parse_repository_tag

    repository, tag = parse_repository_tag(ref)
    try:
        client = connect(engine, timeout=PULL_READ_TIMEOUT_S)
    except WorkspaceError as exc:
        return str(exc)
    try:
        for chunk in client.api.pull(repository, tag=tag or "latest", stream=True, decode=True):
            if isinstance(chunk, dict) and chunk.get("error"):
                return str(chunk["error"]).strip()
        if image_id(client, ref) is None:
            return "the engine reported no error but has no such image"
    except Exception as exc:  # APIError, a read timeout, a refused connection: all mean "cannot pull"
        return str(exc).strip() or type(exc).__name__
    finally:
        client.close()
    return None


_FIND = (
    "find / -xdev \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name SKILL.md -print 2>/dev/null; exit 0"
)


def find_skills(client: Any, image: str) -> tuple[str, ...]:
    """Every SKILL.md in *image* (absolute paths, sorted): ``find`` in a one-off container without network,
    or, for an image without a shell, a scan of its exported file system."""
    from docker.errors import APIError, ContainerError

    try:
        out = client.containers.run(
            image, entrypoint=["/bin/sh", "-c", _FIND], user="0", network_mode="none", remove=True
        )
        return tuple(sorted({line for line in bytes(out).decode("utf-8", "replace").splitlines() if line}))
    except (APIError, ContainerError):
        return _export_scan(client, image)


def _export_scan(client: Any, image: str) -> tuple[str, ...]:
    container = client.api.create_container(image, ["/true"], network_disabled=True)["Id"]
    try:
        stream = io.BufferedReader(_Chunks(client.api.export(container)))
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            return tuple(sorted("/" + m.name.lstrip("./") for m in archive if m.name.rsplit("/", 1)[-1] == "SKILL.md"))
    except (tarfile.TarError, OSError) as exc:
        raise WorkspaceError(f"cannot search the image {image} for skills: {exc}") from None
    finally:
        with contextlib.suppress(Exception):
            client.api.remove_container(container, force=True)


class _Chunks(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (the export stream), for tarfile's stream mode."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = iter(chunks)
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = chunk
        size = min(len(buffer), len(self._buffer))
        buffer[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size
