"""What a finished command leaves: its ProcessResult, and the text at the end of its output files.

Pure data and file reading, no processes: the Workspace contract (scaffold.workspaces.base) returns a
ProcessResult from every backend, and pure modules read them, without importing subprocess.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessResult", "tail"]


@dataclass(frozen=True, slots=True)
class ProcessResult:
    exit_code: int | None  # None when the process was killed for its timeout
    timed_out: bool
    duration_s: float
    stdout_path: Path
    stderr_path: Path

    def stdout(self, limit: int = 1 << 20) -> str:
        return tail(self.stdout_path, limit)

    def stderr(self, limit: int = 4000) -> str:
        return tail(self.stderr_path, limit)


def tail(path: Path, limit: int = 4000) -> str:
    """The last *limit* bytes of a file as text (empty when it does not exist or cannot be read)."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            data = handle.read(limit)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")
