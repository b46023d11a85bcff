"""Task images of the docker backend: one per task, built from the task's Dockerfile ``FROM ${BASE_IMAGE}``.

An image is tagged by a hash of everything that goes into it, so a changed file rebuilds and an
unchanged task reuses the image. Builds have a time limit and keep their log in a file whose tail is
part of every build error.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from scaffold.errors import WorkspaceError
from scaffold.util.hashing import hash_json, hash_tree
from scaffold.util.process_result import tail
from scaffold.workspaces.engines import Engine

__all__ = ["DEFAULT_BUILD_TIMEOUT_S", "build_image", "copy_image", "task_image_tag"]

DEFAULT_BUILD_TIMEOUT_S = 900.0


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
                if "error" in chunk:
                    errors.append(str(chunk["error"]).strip())
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
    api.close()
    if crashed:
        raise WorkspaceError(f"building the image {tag} failed: {crashed[0]}; log {log_path}:\n{tail(log_path, 3000)}")
    if errors:
        raise WorkspaceError(f"building the image {tag} failed: {errors[-1]}; log {log_path}:\n{tail(log_path, 3000)}")
    return tag


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
