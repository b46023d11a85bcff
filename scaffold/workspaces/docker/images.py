"""Task images of the docker backend: one per task, built from the task's Dockerfile ``FROM ${BASE_IMAGE}``.

An image is tagged by a hash of everything that goes into it, so a changed file rebuilds and an
unchanged task reuses the image. Builds have a time limit and keep their log in a file whose tail is
part of every build error.

A build that fails is one of two things (:func:`deterministic`): the builder ran the Dockerfile and a
step failed (a RUN that exited non-zero, a COPY without a source, an instruction it does not know):
:class:`~scaffold.errors.ImageBuildError`, the same every time; or the engine or the network failed
under it (the daemon went away, a layer could not be written, the FROM image could not be pulled, the
time ran out): a plain WorkspaceError, which another attempt may not meet.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, NoReturn

from scaffold.errors import ImageBuildError, WorkspaceError
from scaffold.util.hashing import hash_json, hash_tree
from scaffold.util.process_result import tail
from scaffold.workspaces.engines import Engine

__all__ = ["BUILD_LOG_LIMIT", "DEFAULT_BUILD_TIMEOUT_S", "build_image", "copy_image", "deterministic", "task_image_tag"]

DEFAULT_BUILD_TIMEOUT_S = 900.0
BUILD_LOG_LIMIT = 64 * 1024
"""What an ImageBuildError keeps of its build log (its end): a failing step's output is near the end, and
a trial folder keeps it (build.log), once per trial, so a build that prints megabytes is not copied whole."""
_STEP = re.compile(r"^Step \d+/\d+ : (.*\S)", re.MULTILINE)
# The classic builder's fixed wordings for a failure of the engine's own machinery under a step: the
# daemon's storage, its runtime, its connection. Not the Dockerfile's doing; another attempt may pass.
_ENGINE_TROUBLE = re.compile(
    r"(?i)no space left on device|OCI runtime|failed to register layer|input/output error|connection reset by peer"
    r"|unexpected EOF|cannot connect to the docker daemon|error creating overlay mount|read-only file system"
)


def task_image_tag(name: str, environment_dir: Path, dockerfile: Path, extra: Mapping[str, str]) -> str:
    """``comet-eval/task-<name>:<hash>``; the hash covers the environment folder, the Dockerfile (also when
    it lives outside that folder) and *extra* (base image id, agent layer key)."""
    parts = {
        "environment": hash_tree(environment_dir),
        "dockerfile": _file_hash(dockerfile),
        **extra,
    }
    digest = hash_json(parts).removeprefix("sha256:")[:16]
    repo = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "task"
    return f"comet-eval/task-{repo}:{digest}"


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_image(
    *,
    context: Path,
    dockerfile: Path,
    tag: str,
    buildargs: Mapping[str, str],
    labels: Mapping[str, str],
    timeout: float = DEFAULT_BUILD_TIMEOUT_S,
    log_path: Path,
    engine: Engine | None = None,
) -> str:
    """``docker build`` through the API with a time limit; the streamed log goes to *log_path*. *engine*:
    where to build (None: the environment's engine).

    The build streams in a thread. When it runs out of time (or the caller is interrupted) the HTTP
    response is closed: the engine sees its client go and cancels the build, killing its RUN step.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    api = _cancellable_api(engine)
    errors: list[str] = []
    details: list[Mapping[str, Any]] = []
    steps: list[str] = []
    crashed: list[BaseException] = []

    def stream(out: IO[str]) -> None:
        try:
            chunks = api.build(
                path=str(context),
                dockerfile=str(dockerfile.absolute()),
                tag=tag,
                buildargs=dict(buildargs),
                labels=dict(labels),
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
            )
            for chunk in chunks:
                text = chunk.get("stream") or chunk.get("status") or ""
                steps.extend(_STEP.findall(chunk.get("stream") or ""))
                if "error" in chunk:
                    errors.append(str(chunk["error"]).strip())
                    detail = chunk.get("errorDetail")
                    details.append(detail if isinstance(detail, dict) else {})
                    text = f"ERROR: {chunk['error']}\n"
                if text:
                    out.write(text if text.endswith("\n") or "stream" in chunk else text + "\n")
                    out.flush()
        except BaseException as exc:  # reported by the waiting thread
            crashed.append(exc)

    with log_path.open("w", encoding="utf-8") as out:
        out.write(f"# build {tag}\n# context {context}\n# dockerfile {dockerfile}\n# build args {dict(buildargs)}\n")
        out.flush()
        worker = threading.Thread(target=stream, args=(out,), name=f"build {tag}", daemon=True)
        worker.start()
        try:
            worker.join(timeout)
        finally:
            if worker.is_alive():
                api.abort()
                worker.join(10)
        if worker.is_alive() or (crashed and api.aborted):
            out.write(f"\n# gave up after {timeout:g}s\n")
            out.flush()
            raise WorkspaceError(
                f"building the image {tag} took longer than {timeout:g}s and was cancelled; "
                f"log {log_path}:\n{tail(log_path, 3000)}"
            )
        if crashed:
            out.write(f"ERROR: {crashed[0]}\n")
    api.close()
    if crashed:
        refused = _refused(crashed[0])  # the engine read the Dockerfile and refused it: a parse error
        _failed(tag, "", refused or str(crashed[0]), log_path, deterministic=refused is not None)
    if errors:
        step = steps[-1] if steps else ""
        _failed(tag, step, errors[-1], log_path, deterministic=deterministic(step, errors[-1], details[-1]))
    return tag


def deterministic(step: str, error: str, detail: Mapping[str, Any]) -> bool:
    """Whether a build that stopped with *error* at *step* (``RUN exit 3``; "" before any step) failed
    for what the Dockerfile says, and would fail the same way again: a step other than FROM failed (with
    *detail*'s ``code``, a RUN that exited non-zero), and not for a failure of the engine's own machinery
    (its storage, its runtime). A FROM that fails could not get its image: the registry or the network."""
    if _ENGINE_TROUBLE.search(error):
        return False
    if isinstance(detail.get("code"), int):
        return True
    keyword = step.split(maxsplit=1)[0].upper() if step else ""
    return keyword not in ("", "FROM")


def _refused(exc: BaseException) -> str | None:
    """The engine's words when it refused the build request itself (HTTP 400: the Dockerfile does not
    parse, an unknown instruction); None for anything else (the engine unreachable, a broken connection)."""
    from docker.errors import APIError

    if isinstance(exc, APIError) and exc.status_code == 400:
        return str(exc.explanation or exc).strip()
    return None


def _failed(tag: str, step: str, error: str, log_path: Path, *, deterministic: bool) -> NoReturn:
    """Raise the error of *tag*'s build, which stopped with *error* at *step*: an ImageBuildError when it
    failed for what its Dockerfile says (*deterministic*), else a WorkspaceError."""
    at = f" at `{step}`" if step else ""
    message = f"building the image {tag} failed{at}: {error}; log {log_path}:\n{tail(log_path, 3000)}"
    if deterministic:
        raise ImageBuildError(message, image=tag, step=step, log=tail(log_path, BUILD_LOG_LIMIT))
    raise WorkspaceError(message)


def _cancellable_api(engine: Engine | None) -> Any:
    """A low-level client whose running build can be cancelled from another thread.

    ``APIClient.build`` hides the HTTP response inside the generator it returns; this subclass keeps a
    reference to it so :meth:`abort` can close the connection. No read timeout: a RUN step may be silent
    for minutes, the overall time limit is :func:`build_image`'s.
    """
    import docker

    from scaffold.workspaces.docker.engine import client_kwargs, own_trust

    class CancellableAPI(docker.APIClient):  # type: ignore[misc]
        response: Any = None
        aborted = False

        def _stream_helper(self, response: Any, decode: bool = False) -> Any:
            self.response = response
            return super()._stream_helper(response, decode=decode)

        def abort(self) -> None:
            self.aborted = True
            if self.response is not None:
                # Closing the response does not wake a thread blocked reading it; shutting the socket does.
                with contextlib.suppress(Exception):
                    raw = self._get_raw_response_socket(self.response)
                    getattr(raw, "_sock", raw).shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(Exception):
                    self.response.close()
            with contextlib.suppress(Exception):
                self.close()

    return own_trust(CancellableAPI(timeout=None, **client_kwargs(engine)), engine)


def copy_image(source: Any, target: Any, tag: str) -> bool:
    """Load the image *tag* of the engine *source* into the engine *target* (both ``DockerClient``s), as
    ``docker save | docker load`` would, streamed; False when *source* has no such image. How a pool's
    engines get the offline base images that were built once, on one of them."""
    from docker.errors import ImageNotFound

    try:
        image = source.images.get(tag)
    except ImageNotFound:
        return False
    try:
        target.images.load(image.save(named=True))
    except Exception as exc:
        raise WorkspaceError(f"cannot copy the image {tag} to the engine: {exc}") from None
    return True
