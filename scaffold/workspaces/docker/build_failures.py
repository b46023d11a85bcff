"""Task images that cannot be built, remembered for the session: built once, never again for its other trials.

A build that failed deterministically (:class:`~scaffold.errors.ImageBuildError`: a step of the Dockerfile
failed) fails the same way every time, so the session's other trials of that image fail at once with the
same error instead of spending a build each. What is remembered is keyed by the image's tag, which names its
content (a changed Dockerfile or context is another image, built anew), and by the session's token, which
every process of the session shares (the controller hands it to each pytest-xdist worker).

Where: a file per image, ``<tmp>/comet-eval/builds/<image>.failed.json``, beside that image's build log,
written while the engine's lock for the image is held (the lock its build is made under, in
``<tmp>/comet-eval/locks/``). A worker waiting on that lock while another builds finds the file once it
gets the lock, and does not build. Why there and not in the experiment folder: the backend knows images,
engines and their locks but not experiments, and the lock that orders the workers' builds of one image is
this machine's, so the answer belongs beside it; the token, not the folder, says which session it is for,
so a later session (``--rerun-errors`` after an apt mirror is back) builds again, and a file of another
session is simply overwritten. A process also keeps what it met in memory, so only its first trial of the
image reads the file.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Final

from scaffold.errors import ImageBuildError
from scaffold.util.atomic import write_text_atomic
from scaffold.workspaces.docker.engine import safe_name, state_dir

__all__ = ["FailedBuilds"]

SCHEMA_VERSION: Final = 1


class FailedBuilds:
    """The image builds that failed in the session *session* (its token), for one process."""

    def __init__(self, session: str, folder: Path | None = None) -> None:
        self.session = session
        self.folder = folder if folder is not None else state_dir() / "builds"
        self._known: dict[str, ImageBuildError] = {}

    def known(self, image: str) -> ImageBuildError | None:
        """The error this session met building *image*, in any of its processes; None when it met none."""
        found = self._known.get(image)
        if found is None:
            found = self._read(image)
            if found is not None:
                self._known[image] = found
        return found

    def remember(self, error: ImageBuildError) -> None:
        """Keep *error* for the session's other trials of its image (a file they all read)."""
        self._known[error.image] = error
        entry = {
            "schema_version": SCHEMA_VERSION,
            "session": self.session,
            "image": error.image,
            "step": error.step,
            "message": str(error),
            "log": error.log,
        }
        # Not durable: it saves builds within a session; lost in a crash, the image is built once more.
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self._path(error.image), json.dumps(entry), durable=False)

    def _path(self, image: str) -> Path:
        return self.folder / f"{safe_name(image.replace('/', '_').replace(':', '_'))}.failed.json"

    def _read(self, image: str) -> ImageBuildError | None:
        try:
            entry = json.loads(self._path(image).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (
            not isinstance(entry, dict)
            or entry.get("schema_version") != SCHEMA_VERSION
            or entry.get("session") != self.session
            or entry.get("image") != image
        ):
            return None  # another session's (or an unreadable one): this session builds for itself
        return ImageBuildError(
            str(entry.get("message", "")), image=image, step=str(entry.get("step", "")), log=str(entry.get("log", ""))
        )
