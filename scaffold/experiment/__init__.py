"""An experiment directory: ``<logs>/experiments/<id>/`` with one folder per trial.

<id>/summary.md
<id>/plan.json                                       the latest session's cases (experiment.status)
<id>/budget.json                                     --max-trials / --max-cost: trials started (experiment.budget)
<id>/trials/<task>-<treatment>-r<N>/record.json      the trial record (source of truth)
<id>/trials/<task>-<treatment>-r<N>/agent.*.log      what the agent printed
<id>/trials/<task>-<treatment>-r<N>/validation/      what each validation script printed
<id>/trials/<task>-<treatment>-r<N>/changes.json     what the agent changed in the workspace
<id>/trials/<task>-<treatment>-r<N>/build.log        the task image's build log, when it cannot be built
<id>/trials/<task>-<treatment>-r<N>/transcript.html  the trial as a page a person reads
<id>/trials/<task>-<treatment>-r<N>/progress.json    while the trial runs: its phase and turn (comet status)
<id>/trials/<task>-<treatment>-r<N>/attempts/<K>/    an earlier attempt excluded as noise and run again
                                                     (--retry-excluded): its files, its record.json among them
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scaffold.errors import SelectionError
from scaffold.experiment.cases import Case

__all__ = [
    "ATTEMPTS_DIR",
    "BUILD_LOG_FILE",
    "CHANGES_FILE",
    "EXPERIMENT_ID",
    "INSTRUCTION_FILE",
    "PROGRESS_FILE",
    "RECORD_FILE",
    "TRANSCRIPT_FILE",
    "Experiment",
    "config_changes",
    "new_experiment_id",
]

EXPERIMENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RECORD_FILE = "record.json"
CHANGES_FILE = "changes.json"
"""The workspace's changes between the start of the agent and the start of validation (scaffold.trial.changes)."""
TRANSCRIPT_FILE = "transcript.html"
"""One self-contained page per trial (scaffold.reports.transcript)."""
PROGRESS_FILE = "progress.json"
"""A running trial's phase and turn, rewritten atomically as it goes (comet status reads it)."""
INSTRUCTION_FILE = "instruction.md"
"""The prompt the agent was given, as rendered for this trial (the transcript shows it)."""
BUILD_LOG_FILE = "build.log"
"""The log of a task image that cannot be built (its failing step first, its end when long): build_failed."""
ATTEMPTS_DIR = "attempts"
"""The earlier attempts of a trial, ``attempts/<K>/`` in its folder (scaffold.trial.runner)."""


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

    def workspace_key(self, case: Case, attempt: int = 1) -> str:
        """Where *case*'s workspace goes under the backend's root: ``<experiment id>/<case>-<digest>``, the
        digest of the experiment's folder, so that two experiments of one id in other folders never share
        a workspace (the id stays the first part: a container's experiment label; the backends' sweeps look
        two levels down). A retry's (*attempt* 2 and later) has ``-a<attempt>`` after it, so a kept
        workspace of an earlier attempt stays as it was left."""
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:8]
        return f"{self.id}/{case.id}-{digest}" + (f"-a{attempt}" if attempt > 1 else "")

    def record_path(self, case: Case) -> Path:
        return self.trial_dir(case) / RECORD_FILE

    def record_paths(self) -> list[Path]:
        if not self.trials_dir.is_dir():
            return []
        return sorted(self.trials_dir.glob(f"*/{RECORD_FILE}"))

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.md"


def config_changes(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between the configuration a trial was recorded with and the one it would run with
    now, one ``path: old -> new`` each (``task.content_hash: 'ab12' -> 'cd34'``), so a refused resume
    says which task, skill or option changed. Lists of named entries (a treatment's skills) compare by
    name, so one changed skill is named rather than its position."""
    out: list[str] = []
    _diff(recorded, now, "", out)
    return out


_ABSENT = object()


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in [*old, *(k for k in new if k not in old)]:
            _diff(old.get(key, _ABSENT), new.get(key, _ABSENT), f"{path}.{key}" if path else str(key), out)
    elif _named(old) and _named(new) and [e["name"] for e in old] != [e["name"] for e in new]:
        before, after = {e["name"]: e for e in old}, {e["name"]: e for e in new}
        for name in [*before, *(n for n in after if n not in before)]:
            _diff(before.get(name, _ABSENT), after.get(name, _ABSENT), f"{path}[{name}]", out)
    elif _named(old) and _named(new):
        for entry_old, entry_new in zip(old, new, strict=True):
            _diff(entry_old, entry_new, f"{path}[{entry_old['name']}]", out)
    elif old != new:
        out.append(f"{path}: {_shown(old)} -> {_shown(new)}")


def _named(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(e, Mapping) and "name" in e for e in value)


def _shown(value: Any) -> str:
    return "(absent)" if value is _ABSENT else repr(value)
