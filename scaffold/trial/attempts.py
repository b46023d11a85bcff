"""The earlier attempts of a trial (``--retry-excluded``): set aside in ``attempts/<K>/`` of its folder, and
found again when a session stopped mid-retry is resumed.

The last attempt's files stay where a trial's files always are, so everything that reads a trial folder
reads its final attempt; each earlier attempt keeps its own files and record one level down, where no
reader of ``trials/*/record.json`` looks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from scaffold.errors import RecordError
from scaffold.experiment import ATTEMPTS_DIR, PROGRESS_FILE, RECORD_FILE
from scaffold.experiment.cases import Case
from scaffold.records import AttemptInfo, TrialRecord
from scaffold.records.files import read_record, write_record

__all__ = ["attempt_info", "clear_for_attempt", "kept_attempts", "set_aside"]


def attempt_info(record: TrialRecord, attempt: int) -> AttemptInfo:
    """What the final record says of attempt *attempt*, whose record is *record*."""
    return AttemptInfo(
        attempt=attempt,
        folder=f"{ATTEMPTS_DIR}/{attempt}",
        verdict=record.verdict,
        noise_reason=record.noise.reason,
        started_at=record.started_at,
        finished_at=record.finished_at,
        duration_s=record.duration_s,
        cost_usd=record.trajectory.cost_usd if record.trajectory is not None else None,
    )


def set_aside(trial_dir: Path, record: TrialRecord, attempt: int) -> AttemptInfo:
    """Move the files of attempt *attempt* (of *record*) into ``attempts/<attempt>/`` of *trial_dir*, with its
    record. Gathered under a hidden name and renamed when complete, so an ``attempts/<K>`` folder always holds
    its record (what a resume finds half made is removed: :func:`clear_for_attempt`)."""
    (trial_dir / PROGRESS_FILE).unlink(missing_ok=True)  # a view of the attempt that ended
    attempts = trial_dir / ATTEMPTS_DIR
    staging = attempts / f".{attempt}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for entry in sorted(trial_dir.iterdir()):
        if entry.name != ATTEMPTS_DIR:
            entry.rename(staging / entry.name)
    write_record(staging / RECORD_FILE, record)
    staging.rename(attempts / str(attempt))
    return attempt_info(record, attempt)


def kept_attempts(trial_dir: Path, case: Case, config_hash: str) -> list[AttemptInfo]:
    """The attempts of *case* an earlier session set aside before it stopped, first first: ``attempts/1``,
    ``attempts/2``, ... as long as each holds a readable record of this case and configuration (a trial
    recorded with another configuration starts over, as one without attempts does)."""
    kept: list[AttemptInfo] = []
    while True:
        path = trial_dir / ATTEMPTS_DIR / str(len(kept) + 1) / RECORD_FILE
        if not path.is_file():
            return kept
        try:
            record = read_record(path)
        except RecordError:
            return kept
        if record.case_id != case.id or record.config_hash != config_hash:
            return kept
        kept.append(attempt_info(record, len(kept) + 1))


def clear_for_attempt(trial_dir: Path, kept: list[AttemptInfo]) -> list[AttemptInfo]:
    """Empty *trial_dir* (made when missing) for a new attempt, but for the folders of the *kept* attempts;
    returns *kept*."""
    folders = {a.folder for a in kept}
    trial_dir.mkdir(parents=True, exist_ok=True)
    for path in [*trial_dir.iterdir(), *((trial_dir / ATTEMPTS_DIR).glob("*") if kept else ())]:
        if path.name == ATTEMPTS_DIR and kept:
            continue
        if path.relative_to(trial_dir).as_posix() in folders:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return kept
