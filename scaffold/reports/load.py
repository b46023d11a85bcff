"""Read the trial records of one or more experiment directories (for example CI shards) for reporting.

Merging is safe only when trials of one (task, treatment) ran the same configuration: records carry the
hash of their resolved configuration, and ``load_experiments`` refuses to mix two hashes of one pair,
naming both directories. The same trial (experiment id and case id) found in two directories is refused
too: it would be counted twice.

A record that cannot be read (damaged, truncated, a value of the wrong type or out of bounds: see
scaffold.records.files) never stops the others: it is an ``UnreadableRecord`` naming the file and the
field, which every report lists and ``comet report`` answers with its own exit status.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scaffold.errors import RecordError, ReportError
from scaffold.experiment import RECORD_FILE
from scaffold.records import TrialRecord
from scaffold.records.files import gc_paused, read_record, record_field
from scaffold.reports.model import TrialFiles, UnreadableRecord

__all__ = ["Loaded", "load_experiments", "merged"]


@dataclass(frozen=True, slots=True)
class Loaded:
    """Records of every directory, sorted by (task, treatment, trial), with their files and problems."""

    records: tuple[TrialRecord, ...]
    files: dict[tuple[str, str], TrialFiles]
    """(experiment_id, case_id) -> files, as paths relative to the ``link_base`` given (or absolute)."""
    problems: tuple[UnreadableRecord, ...]
    """One per record that could not be read (the others are still reported), in folder order."""
    dirs: tuple[Path, ...]


def load_experiments(dirs: Sequence[Path], *, link_base: Path | None = None) -> Loaded:
    """Read ``<dir>/trials/*/record.json`` of every directory; ReportError when merging is unsafe.

    *link_base*: the folder the reports are written to; file links are made relative to it so the
    report folder can be moved together with the experiments.
    """
    with gc_paused():  # see scaffold.records.files.gc_paused: 100,000 records are millions of objects
        return _load_experiments(dirs, link_base)


def _load_experiments(dirs: Sequence[Path], link_base: Path | None) -> Loaded:
    if not dirs:
        raise ReportError("no experiment directory given: pass one or more, e.g. local/logs/experiments/<id>")
    seen_dirs: dict[Path, Path] = {}
    for directory in dirs:
        resolved = directory.resolve()
        if not directory.is_dir():
            raise ReportError(f"{directory}: no such directory; pass an experiment directory (it holds trials/)")
        if not (directory / "trials").is_dir():
            raise ReportError(
                f"{directory}: not an experiment directory (no trials/ folder inside); pass a directory such as "
                f"local/logs/experiments/<id> (or a Harbor job folder or an Inspect eval log: docs/imports.md)"
            )
        seen_dirs.setdefault(resolved, directory)  # the same directory twice is read once
    records: list[TrialRecord] = []
    files: dict[tuple[str, str], TrialFiles] = {}
    problems: list[UnreadableRecord] = []
    hashes: dict[tuple[str, str], tuple[str, Path]] = {}
    owners: dict[tuple[str, str], Path] = {}
    for directory in seen_dirs.values():
        trials = os.fspath(directory / "trials")
        found, unreadable = _read_trials(trials)
        prefix = _link_prefix(directory / "trials", link_base)
        problems.extend(
            _unreadable(f"{prefix}/{folder}/{RECORD_FILE}", path, error) for folder, path, error in unreadable
        )
        for folder_name, record in found:
            pair = (record.task, record.treatment)
            first = hashes.setdefault(pair, (record.config_hash, directory))
            if first[0] != record.config_hash:
                raise ReportError(
                    f"cannot merge: trials of task {record.task!r} under treatment {record.treatment!r} ran "
                    f"different configurations ({first[0]} in {first[1]}, {record.config_hash} in {directory}); "
                    f"report these directories separately, or re-run one with the other's configuration"
                )
            key = (record.experiment_id, record.case_id)
            if key in owners:
                raise ReportError(
                    f"cannot merge: trial {record.case_id!r} of experiment {record.experiment_id!r} is in both "
                    f"{owners[key]} and {directory}; pass each experiment directory once"
                )
            owners[key] = directory
            folder = f"{prefix}/{folder_name}/"
            files[key] = TrialFiles(folder + RECORD_FILE, tuple(folder + name for name in record.streams))
            records.append(record)
    records.sort(key=lambda r: (r.task, r.treatment, r.trial, r.experiment_id))
    return Loaded(tuple(records), files, tuple(problems), tuple(seen_dirs.values()))


def merged(first: Loaded, second: Loaded) -> Loaded:
    """Both sets of records as one, sorted as loaded (experiment folders and imported results: see
    scaffold.imports); ReportError when a trial is in both."""
    keys = {(r.experiment_id, r.case_id) for r in first.records}
    for record in second.records:
        if (record.experiment_id, record.case_id) in keys:
            raise ReportError(
                f"cannot merge: trial {record.case_id!r} of experiment {record.experiment_id!r} is given twice; "
                f"pass each experiment, job or log once"
            )
    records = sorted((*first.records, *second.records), key=lambda r: (r.task, r.treatment, r.trial, r.experiment_id))
    return Loaded(
        tuple(records), {**first.files, **second.files}, (*first.problems, *second.problems), first.dirs + second.dirs
    )


def _unreadable(file: str, path: str, error: RecordError) -> UnreadableRecord:
    message = str(error)
    # The reason without the path the message starts with (the file is shown as linked).
    reason = message[len(path) + 2 :] if message.startswith(f"{path}: ") else message
    field = record_field(message)
    # The field is given apart; the reason need not repeat it.
    return UnreadableRecord(file, field, reason.replace(f" - at `{field}`", "") if field else reason)


def _read_trials(trials: str) -> tuple[list[tuple[str, TrialRecord]], list[tuple[str, str, RecordError]]]:
    """(folder name, record) for every trial folder with a record, in folder order; (folder name, path,
    error) per bad one.

    One directory listing for the whole experiment and one read per record, with plain strings rather than
    Paths: at 100,000 trials each extra call per trial costs about a tenth of a second. A folder without a
    record is a trial that never finished (an interrupted run): it has nothing to report and is skipped.
    """
    with os.scandir(trials) as entries:
        folders = sorted(entry.name for entry in entries if entry.is_dir())
    found: list[tuple[str, TrialRecord]] = []
    problems: list[tuple[str, str, RecordError]] = []
    for folder in folders:
        path = f"{trials}/{folder}/{RECORD_FILE}"
        try:
            found.append((folder, read_record(path)))
        except RecordError as exc:
            if os.path.lexists(path):  # checked only on failure: reading is the common case
                problems.append((folder, path, exc))
    return found, problems


def _link_prefix(trials: Path, base: Path | None) -> str:
    """How links to files under *trials* start: relative to *base*, or absolute without one."""
    if base is None:
        return trials.absolute().as_posix()
    # os.path.relpath also walks up ("../experiments/..."), which Path.relative_to cannot before 3.12.
    return Path(os.path.relpath(trials.absolute(), base.absolute())).as_posix()
