"""An experiment directory: ``<logs>/experiments/<id>/`` with one folder per trial.

<id>/summary.md
<id>/trials/<task>-<treatment>-r<N>/record.json      the trial record (source of truth)
<id>/trials/<task>-<treatment>-r<N>/agent.*.log      what the agent printed
<id>/trials/<task>-<treatment>-r<N>/validation/      what each validation script printed
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from scaffold.cases import Case
from scaffold.errors import SelectionError

__all__ = ["EXPERIMENT_ID", "Experiment", "new_experiment_id"]

EXPERIMENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RECORD_FILE = "record.json"


def new_experiment_id(now: datetime | None = None) -> str:
    """A new id, unique per experiment: UTC time (sortable) plus random hex (collision-proof)."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


@dataclass(frozen=True, slots=True)
class Experiment:
    id: str
    root: Path

    @classmethod
    def under(cls, logs_dir: Path, experiment_id: str) -> Experiment:
        if not EXPERIMENT_ID.match(experiment_id):
            raise SelectionError(
                f"--experiment-id={experiment_id!r}: use letters, digits, '.', '_' and '-' (at most 128)"
            )
        return cls(experiment_id, logs_dir.absolute() / "experiments" / experiment_id)

    @property
    def trials_dir(self) -> Path:
        return self.root / "trials"

    def trial_dir(self, case: Case) -> Path:
        return self.trials_dir / case.id

    def record_path(self, case: Case) -> Path:
        return self.trial_dir(case) / RECORD_FILE

    def record_paths(self) -> list[Path]:
        if not self.trials_dir.is_dir():
            return []
        return sorted(self.trials_dir.glob(f"*/{RECORD_FILE}"))

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.md"
