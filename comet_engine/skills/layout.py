"""Where a skill run lives on disk: the original Comet engine's two layouts.

    change      <change-dir>/.comet/                 one run per change directory (FileStore.single)
    standalone  <project>/.comet/runs/<runId>/       any number of runs (FileStore(<project>/.comet/runs))

Both hold ``run-state.json`` and ``trajectory.jsonl`` (written by the store; the commit point) and the
companion files ``pending-action.json``, ``artifacts.json``, ``context.md``, ``checkpoint.json``
(projections, see :mod:`.companions`). Snapshots are per project: ``<project>/.comet/skill-snapshots/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from comet_engine.errors import UnsafePathError
from comet_engine.stores.base import Store
from comet_engine.stores.paths import check_run_id

__all__ = ["COMPANIONS", "RUNS", "RUN_STATE", "TRAJECTORY", "RunLayout"]

RUNS = Path(".comet") / "runs"
RUN_STATE = "run-state.json"
TRAJECTORY = "trajectory.jsonl"
PENDING = "pending-action.json"
ARTIFACTS = "artifacts.json"
CONTEXT = "context.md"
CHECKPOINT = "checkpoint.json"
COMPANIONS = (PENDING, ARTIFACTS, CONTEXT, CHECKPOINT)

Mode = Literal["change", "standalone"]


@dataclass(frozen=True, slots=True)
class RunLayout:
    mode: Mode
    project: Path
    run_id: str
    run_dir: Path

    @classmethod
    def standalone(cls, project: Path, run_id: str) -> RunLayout:
        check_run_id(run_id)
        return cls("standalone", project, run_id, project / RUNS / run_id)

    @classmethod
    def change(cls, project: Path, change_dir: Path, run_id: str | None = None) -> RunLayout:
        """The run of *change_dir*; its id defaults to the directory's name."""
        if not change_dir.is_dir():
            raise UnsafePathError(f"--change {change_dir}: no such directory; pass an existing change directory")
        return cls("change", project, check_run_id(run_id or change_dir.resolve().name), change_dir / ".comet")

    @property
    def state_file(self) -> Path:
        return self.run_dir / RUN_STATE

    def file(self, name: str) -> Path:
        return self.run_dir / name

    def open_store(self) -> Store:
        from comet_engine.stores.file import FileStore

        if self.mode == "change":
            return FileStore.single(self.run_dir)
        return FileStore(self.run_dir.parent)

    def address(self) -> list[str]:
        """The command-line options that name this run again (for the hints we print)."""
        if self.mode == "change":
            return ["--change", str(self.run_dir.parent), "--project", str(self.project)]
        return ["--run-id", self.run_id, "--project", str(self.project)]
