"""Other tools' results as experiments of ours: Harbor job folders and Inspect AI eval logs.

``comet report`` takes them beside (or instead of) experiment folders: :func:`load_imports` maps every
Harbor trial and every Inspect sample epoch to a TrialRecord (scaffold.imports.harbor,
scaffold.imports.inspect_logs, scaffold.imports.common), and the reports, verdicts and gates are then
those of our own runs. docs/imports.md lists what each field comes from and what is not mapped.

Reads files only; nothing is written beside the sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scaffold.errors import ReportError
from scaffold.imports import harbor, inspect_logs
from scaffold.imports.common import SourceTrial, number_trials
from scaffold.reports.load import Loaded
from scaffold.reports.model import UnreadableRecord

__all__ = ["ImportInput", "Kind", "kind_of", "load_imports"]

Kind = Literal["experiment", "harbor", "inspect"]


@dataclass(frozen=True, slots=True)
class ImportInput:
    """One Harbor job (or jobs folder) or Inspect log (or log folder), and the treatment name it is given
    (None: the source's own, see each module)."""

    path: Path
    treatment: str | None = None


def kind_of(path: Path) -> Kind:
    """What *path* holds: an experiment folder of ours (``trials/``), a Harbor job or jobs folder, or an
    Inspect log or folder of logs; ReportError naming all three when it is none of them."""
    if (path / "trials").is_dir():
        return "experiment"
    if harbor.job_folders(path):
        return "harbor"
    if inspect_logs.log_files(path):
        return "inspect"
    if not path.exists():
        raise ReportError(f"{path}: no such file or directory")
    raise ReportError(
        f"{path}: not an experiment folder (no trials/ inside), a Harbor job folder (no config.json naming a "
        f"job) or an Inspect eval log (.eval or .json, or a folder of them); pass one of those"
    )


def load_imports(inputs: Sequence[ImportInput]) -> Loaded:
    """The records of every input, sorted as the loader sorts experiment records, with the sources that
    could not be read as problems. ReportError when one trial is given twice (the same job or log twice)."""
    sources: list[SourceTrial] = []
    problems: list[UnreadableRecord] = []
    for given in inputs:
        kind = kind_of(given.path)
        if kind == "harbor":
            for job in harbor.job_folders(given.path):
                found, unreadable = harbor.read_job(job, treatment=given.treatment)
                sources.extend(found)
                problems.extend(unreadable)
        elif kind == "inspect":
            for log in inspect_logs.log_files(given.path):
                found, unreadable = inspect_logs.read_log(log, treatment=given.treatment)
                sources.extend(found)
                problems.extend(unreadable)
        else:
            raise ReportError(f"{given.path}: an experiment folder, not a Harbor job or an Inspect log")
    seen: set[tuple[str, str]] = set()
    for source in sources:
        key = (source.experiment_id, source.case_id)
        if key in seen:
            raise ReportError(
                f"cannot merge: trial {source.case_id!r} of {source.experiment_id!r} is given twice; pass each "
                f"Harbor job and Inspect log once"
            )
        seen.add(key)
    records = number_trials(sources)
    records.sort(key=lambda r: (r.task, r.treatment, r.trial, r.experiment_id))
    return Loaded(tuple(records), {}, tuple(problems), ())
