"""Disposal of the docker backend's containers and volumes: off the trial's critical path, none left behind.

A container and its volume are removed by the background thread (:class:`~.sessions.Reaper`), except while
an exception propagates (Ctrl-C, a stopped worker), when the process may be about to end: then at once.
Before a container goes, the files its root created in a bind-mounted folder are handed back to this
machine's user, and a kept copy-mode workspace is copied out. At session end every container and volume
labelled with the session goes, also ones a crash left untracked, and so do stale ones of dead sessions;
should the process end without that, an exit hook removes the session's.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scaffold.errors import WorkspaceError
from scaffold.workspaces.docker import compose
from scaffold.workspaces.docker.copy_mode import ContainerFiles
from scaffold.workspaces.docker.exec import quick_exec
from scaffold.workspaces.docker.sessions import Reaper, remove_container, remove_volume, sweep
from scaffold.workspaces.docker.workspace import ROOT, DockerWorkspace, Phase
from scaffold.workspaces.files import remove_empty_parents
from scaffold.workspaces.owners import OwnedFolders

__all__ = ["Disposal", "copy_out"]


def copy_out(files: ContainerFiles) -> None:
    """Copy a kept workspace to the host. A failure must not lose the trial's record (the Runner writes
    it after this): the folder then holds the reason instead."""
    try:
        files.copy_out()
    except WorkspaceError as exc:
        files.host_path.mkdir(parents=True, exist_ok=True)
        (files.host_path / "COMET-COPY-FAILED.txt").write_text(f"{exc}\n", encoding="utf-8")


class Disposal:
    """Ends the containers, volumes and folders of one backend's workspaces: on its engine (*client*,
    *api*), through *reaper*; *session* is the id its objects are labelled with, *owned* the owner marks
    of the folders under *workspace_root*, *start* makes a workspace a new container (a replacement)."""

    def __init__(
        self,
        client: Any,
        api: Any,
        *,
        session: str,
        reaper: Reaper,
        owned: OwnedFolders,
        workspace_root: Path,
        start: Callable[[DockerWorkspace, Phase], None],
    ) -> None:
        self._client = client
        self._api = api
        self._session = session
        self._reaper = reaper
        self._owned = owned
        self._workspace_root = workspace_root
        self._start = start

    def replace_container(self, workspace: DockerWorkspace, *, phase: Phase) -> None:
        """A fresh container on the same files (bind-mounted folder, or copy mode's volume)."""
        if workspace.container is not None:
            self.hand_back(workspace)
            self.dispose(workspace, volume=False)
        self._start(workspace, phase)

    def hand_back(self, workspace: DockerWorkspace) -> None:
        """Give files the container's root created back to the host user, so they can be removed."""
        if os.getuid() == 0 or workspace.container is None or workspace.copy or workspace.native:
            return
        with contextlib.suppress(Exception):
            quick_exec(self._api, workspace.container.id, ["chown", "-R", f"{os.getuid()}:{os.getgid()}", ROOT], ROOT)

    def dispose(self, workspace: DockerWorkspace, *, volume: bool) -> None:
        """Remove the workspace's container (then its volume and its compose services) in the background;
        synchronously while an exception propagates (Ctrl-C, a stopped worker): the process may be about
        to end."""
        container_id, name = workspace.container.id, (workspace.volume if volume else None)
        services = workspace.services
        if workspace.keeper is not None:
            workspace.keeper.close()
        workspace.container, workspace.keeper, workspace.services = None, None, None

        def job(api: Any) -> None:
            remove_container(api, container_id)
            if name is not None:
                remove_volume(api, name)
            if services is not None:  # after the container: the trial's network is free then
                compose.remove(api, services)

        if sys.exc_info()[0] is not None:
            job(self._api)
        else:
            self._reaper.submit(job)

    def destroy(self, workspace: DockerWorkspace, *, keep: bool) -> None:
        """End *workspace*: its container and volume go (a kept copy-mode workspace is copied out first),
        and its folder too unless *keep*; its control folder always."""
        try:
            if workspace.container is not None:
                if keep and isinstance(workspace.files, ContainerFiles):
                    copy_out(workspace.files)
                self.hand_back(workspace)
                self.dispose(workspace, volume=True)
            elif workspace.volume is not None:
                self._reaper.submit(lambda api: remove_volume(api, str(workspace.volume)))
        finally:
            if isinstance(workspace.files, ContainerFiles):
                workspace.files.discard()
            self.remove_control(workspace)
            if keep:
                self._owned.release(workspace.host_path)  # kept for inspection: no sweep takes it
            else:
                self._owned.remove(workspace.host_path)
                remove_empty_parents(workspace.host_path.parent, self._workspace_root)

    def remove_control(self, workspace: DockerWorkspace) -> None:
        """The keeper's control folder of *workspace* (bind mode), with its owner mark."""
        if workspace.control is not None:
            self._owned.remove(workspace.control)
            remove_empty_parents(workspace.control.parent, self._workspace_root)

    def drain(self) -> None:
        """Wait until the containers and volumes handed to the background removal are gone."""
        self._reaper.drain()

    def remove_session_objects(self) -> None:
        """Every container and volume of this session, at once (the exit hook, should close never come)."""
        with contextlib.suppress(Exception):
            sweep(self._client, session=self._session)

    def close(self) -> None:
        """Wait for the background removals, then remove every container and volume of this session
        (also ones a crash left untracked) and stale ones of dead sessions."""
        self._reaper.close()
        sweep(self._client, session=self._session)
        sweep(self._client)
