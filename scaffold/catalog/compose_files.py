"""The fields of a compose service that name files of the environment folder: ``build``, ``env_file``
and ``volumes`` (named volumes, the trial's log folders, read-only files copied in), each checked
against the folder (:mod:`.compose_service` calls them). Reads the folder, nothing else."""

from __future__ import annotations

import io
import posixpath
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from dotenv import dotenv_values

from scaffold.catalog.compose_fields import FieldError, mapping, pairs, volume_entry
from scaffold.catalog.compose_model import HOST_LOGS, LOG_MOUNTS, Build, CopiedPath, VolumeMount

__all__ = ["Files"]

_ENGINE_FILES: Final = ("/etc/resolv.conf", "/etc/hosts", "/etc/hostname")

Report = Callable[..., None]
"""``report(field, message[, value])``: a problem of the compose file."""


class Files:
    """Reads the file fields of the services of a compose file in *folder*: *report* takes each problem,
    *variables* give build arguments listed without a value theirs, *volumes* are the declared ones.
    :attr:`main` says whether the service being read is the main one."""

    def __init__(self, folder: Path, report: Report, variables: Mapping[str, str], volumes: set[str]) -> None:
        self.folder = folder
        self._problem = report
        self.variables = variables
        self.declared = volumes
        self.main = False

    def build(self, value: object, at: str, fields: dict[str, Any]) -> None:
        body: Mapping[str, object] = {"context": value} if isinstance(value, str) else mapping(value)
        unknown = sorted(set(map(str, body)) - {"context", "dockerfile", "args"})
        for key in unknown:
            self._problem(f"{at}.{key}", "not supported; a build takes context, dockerfile and args")
        context = self.inside(body.get("context", "."), f"{at}.context", folder=True)
        dockerfile = body.get("dockerfile", "Dockerfile")
        if not isinstance(dockerfile, str) or not dockerfile:
            raise FieldError("dockerfile: expected a path relative to the context")
        if context is None:
            return
        file = self.inside(posixpath.join(context, dockerfile), f"{at}.dockerfile", folder=False)
        args = [(k, v if v is not None else self.variables.get(k)) for k, v in pairs(body.get("args") or {})]
        if file is not None:
            rel = posixpath.relpath(file, context) if context != "." else file
            fields["build"] = Build(context, rel, tuple((k, v) for k, v in args if v is not None))

    def env_file(self, value: object, at: str, fields: dict[str, Any]) -> None:
        entries = value if isinstance(value, list) else [value]
        loaded: dict[str, str] = {}
        for i, entry in enumerate(entries):
            where = f"{at}[{i}]" if isinstance(value, list) else at
            required = True
            if isinstance(entry, Mapping):
                required = entry.get("required", True) is not False
                entry = entry.get("path")
            rel = self.inside(entry, where, folder=False, required=required)
            if rel is None:
                continue
            file = self.folder / rel
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                if required:
                    self._problem(where, "cannot be read as UTF-8 text", entry)
                continue
            for name, item in dotenv_values(stream=io.StringIO(text), interpolate=False).items():
                if item is not None:
                    loaded[name] = item
        # The environment key wins over env_file, whichever comes first in the file.
        fields["environment"] = tuple({**loaded, **dict(fields.get("environment", ()))}.items())

    def volumes(self, value: object, at: str, fields: dict[str, Any]) -> None:
        if not isinstance(value, list):
            raise FieldError("expected a list of volumes")
        mounts: list[VolumeMount] = []
        copies: list[CopiedPath] = []
        tmpfs = list(fields.get("tmpfs", ()))
        for i, entry in enumerate(value):
            where = f"{at}[{i}]"
            try:
                kind, source, target, read_only, options = volume_entry(entry)
            except FieldError as exc:
                self._problem(where, str(exc), entry)
                continue
            if kind == "tmpfs":
                tmpfs.append((target, options))
            elif kind == "volume" and source is not None and source not in self.declared:
                self._problem(where, f"the volume {source!r} is not declared under the top-level volumes")
            elif kind == "volume":
                mounts.append(VolumeMount(source, target, read_only))
            else:
                copy = self._bind(str(source), target, read_only, where)
                if copy is not None:
                    copies.append(copy)
        fields.update(volumes=tuple(mounts), copies=tuple(copies), tmpfs=tuple(tmpfs))

    def _bind(self, source: str, target: str, read_only: bool, where: str) -> CopiedPath | None:
        """A bind mount: the trial's log folders (dropped: the backend makes them), or a read-only file or
        folder of the environment folder (copied in); anything else is refused."""
        if source == HOST_LOGS or source.startswith(HOST_LOGS + "/"):
            kind = source[len(HOST_LOGS) + 1 :]
            if not self.main or LOG_MOUNTS.get(kind) != target:
                self._problem(
                    where,
                    "the trial's log folders are the main service's: /logs/verifier, /logs/agent, /logs/artifacts",
                )
            return None
        if not read_only:
            self._problem(
                where,
                "a writable bind mount shares a folder of this machine, which an engine elsewhere cannot see: "
                "mount it read-only (it is copied in), or share files between services with a named volume",
            )
            return None
        if target in _ENGINE_FILES:
            self._problem(where, f"the engine writes {target} itself as the container starts: it cannot be replaced")
            return None
        rel = self.inside(source, where, folder=None)
        return None if rel is None else CopiedPath(rel, target)

    def inside(self, value: object, where: str, *, folder: bool | None, required: bool = True) -> str | None:
        """*value* (relative to the environment folder, or an absolute path inside it, as ``${CONTEXT_DIR}``
        makes) as a normalised relative path (``.`` for the folder) when it exists as a folder (*folder*
        True), a file (False) or either (None); else a problem and None."""
        if not isinstance(value, str) or not value:
            self._problem(where, "expected a path in the environment folder", value)
            return None
        if "://" in value or value.startswith("git@"):
            self._problem(where, "a remote build context is not supported: use a folder of the environment", value)
            return None
        path = PurePosixPath(value)
        if path.is_absolute():
            try:
                path = path.relative_to(PurePosixPath(self.folder.as_posix()))
            except ValueError:
                self._problem(where, f"outside the environment folder {self.folder}", value)
                return None
        rel = posixpath.normpath(path.as_posix())
        if rel == ".." or rel.startswith("../"):
            self._problem(where, "outside the environment folder (it leaves it with '..')", value)
            return None
        target = self.folder / rel
        exists = target.is_dir() if folder else target.is_file() if folder is False else target.exists()
        if not exists:
            if required:
                kind = "folder" if folder else "file" if folder is False else "file or folder"
                self._problem(where, f"no such {kind} in the environment folder: {target}", value)
            return None
        return rel
