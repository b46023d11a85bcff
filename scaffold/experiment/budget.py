"""``--max-trials N`` and ``--max-cost USD``: a session stops starting trials once either is reached.

Every process of a session (the only one, or each pytest-xdist worker) asks :func:`claim` before it
starts a trial that has no record. The claim is decided under an exclusive lock on a file of the
experiment folder, and the trials started are kept in ``budget.json`` (BUDGET_FILE) beside the records,
so the count and the spend are shared by all of the session's workers. Exact semantics:

* ``--max-trials N``: at most N trials are *started* by this session (trials resumed from an earlier
  session's records do not start, so they do not count). Never exceeded, whatever the workers.
* ``--max-cost USD``: a trial is started only while the cost of the trials this session started is below
  USD: a finished one counts its record's ``trajectory.cost_usd``, a running one what its streams
  reported so far (its progress file). The trials running when the spend reaches USD finish, so the
  final spend can exceed USD by what they cost. Agents that report no cost (Codex) never reach it.
* once a limit is reached the session stays stopped: every later trial is refused with the reason, and
  shows as skipped ("not run"); a later session (the same ``--experiment-id``) starts with a new count
  and runs the trials without a record.
* a retry of a trial excluded as noise (``--retry-excluded``) is a trial start too: it runs the agent
  again and spends what the first attempt would have, so it claims as a trial does (its case id again
  in ``started``), and the spend counts every attempt (the final record's ``attempts``, or the records in
  ``attempts/`` of a trial still running). A retry refused leaves the trial without a record (its
  attempts kept): it shows as not run, and a resume goes on with its next attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from scaffold.errors import RecordError
from scaffold.experiment import ATTEMPTS_DIR, PROGRESS_FILE, RECORD_FILE
from scaffold.experiment.progress import read_progress
from scaffold.records.files import read_record
from scaffold.util.atomic import locked, write_json_atomic

__all__ = ["BUDGET_FILE", "Limits", "attempts_cost", "claim", "not_run_markdown", "read_budget"]

BUDGET_FILE: Final = "budget.json"
LOCK_FILE: Final = ".budget.lock"


@dataclass(frozen=True, slots=True)
class Limits:
    max_trials: int | None = None
    max_cost_usd: float | None = None

    def __bool__(self) -> bool:
        return self.max_trials is not None or self.max_cost_usd is not None

    def as_dict(self) -> dict[str, float | int | None]:
        return {"max_trials": self.max_trials, "max_cost_usd": self.max_cost_usd}


def read_budget(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((root / BUDGET_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def claim(root: Path, session: str, case_id: str, limits: Limits) -> str | None:
    """Whether session *session* may start the trial *case_id* in the experiment folder *root*: None (it
    is counted as started), else why not (the limit reached, for the user)."""
    with locked(root / LOCK_FILE):
        data = read_budget(root)
        if data is None or data.get("session") != session:
            data = {"session": session, "started": [], "refused": [], "stopped": None, "limits": limits.as_dict()}
        started: list[str] = data["started"]
        if data["stopped"] is None:
            if limits.max_trials is not None and len(started) >= limits.max_trials:
                retries = len(started) - len(set(started))
                of_them = f", {retries} of them {'a retry' if retries == 1 else 'retries'}" if retries else ""
                data["stopped"] = f"--max-trials {limits.max_trials} reached ({len(started)} trial(s) started{of_them})"
            elif limits.max_cost_usd is not None:
                spent = _spent(root, started)
                if spent >= limits.max_cost_usd:
                    data["stopped"] = f"--max-cost {limits.max_cost_usd:g} reached (${spent:.2f} spent)"
        if data["stopped"] is not None:
            if case_id not in data["refused"]:
                data["refused"].append(case_id)
            write_json_atomic(root / BUDGET_FILE, data)
            return str(data["stopped"])
        started.append(case_id)
        write_json_atomic(root / BUDGET_FILE, data)
        return None


def _spent(root: Path, started: list[str]) -> float:
    """The cost of the trials *started* (each once, however often retried): every attempt's, from their
    record, else from the attempts set aside and the progress file of the one running."""
    total = 0.0
    for case_id in dict.fromkeys(started):
        folder = root / "trials" / case_id
        cost: float | None = None
        if (folder / RECORD_FILE).is_file():
            try:
                record = read_record(folder / RECORD_FILE)
            except RecordError:
                record = None
            if record is not None:
                cost = record.cost_of_attempts_usd
        else:
            progress = read_progress(folder / PROGRESS_FILE)
            value = progress.get("cost_usd") if progress is not None else None
            cost = (float(value) if isinstance(value, int | float) else 0.0) + attempts_cost(folder)
        total += cost or 0.0
    return total


def attempts_cost(folder: Path) -> float:
    """What the attempts set aside in a trial folder (``attempts/<K>/record.json``) cost, as their agents
    reported it: a trial still running (or stopped mid-retry) has no final record that sums them yet."""
    total = 0.0
    attempts = folder / ATTEMPTS_DIR
    if not attempts.is_dir():
        return total
    for path in sorted(attempts.glob(f"[0-9]*/{RECORD_FILE}")):
        try:
            record = read_record(path)
        except RecordError:
            continue
        total += (record.trajectory.cost_usd if record.trajectory is not None else None) or 0.0
    return total


def not_run_markdown(reason: str, cases: list[str], experiment_id: str) -> str:
    """The summary.md section listing the trials a budget kept from starting."""
    lines = [
        "## Not run (budget)",
        "",
        f"{reason}: {len(cases)} trial(s) were not started. Run the same command with "
        f"`--experiment-id {experiment_id}` (without the limit, or with a new one) to run them.",
        "",
    ]
    lines += [f"- {case}" for case in cases]
    return "\n".join(lines) + "\n"
