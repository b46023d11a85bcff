"""Where a run stands, read from its experiment folder alone: ``comet status`` and the live status line.

A session's figures come from three kinds of files, so any process can read them (another shell, the
pytest-xdist controller, a CI step) while the trials run:

* ``plan.json`` (PLAN_FILE): the cases the latest session of the folder set out to run, written when it
  has collected them (by the process that collects: the only one, or pytest-xdist's gw0) and marked
  finished by the controller at its end. Each CI shard writes one in its own experiment folder; ``comet
  status`` reads several folders and adds them up. A folder without one (an experiment of an older
  version) counts its records and running trials only.
* the trial records (done; verdicts; cost spent from ``trajectory.cost_usd``, every attempt's when a trial
  was retried; durations for the ETA);
* the progress files of running trials (scaffold.experiment.progress): phase, turn, cost so far (with
  the attempts set aside before a retry), which retry. One not updated for STALLED_AFTER_S is counted as
  stalled (its worker may have died).

queued = planned - done - running; the estimated time left is the mean duration of the finished trials
times the queued and running ones, divided by the concurrency observed (the trials running now). Not a
prediction worth more than its inputs: it says nothing until one trial has finished.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from scaffold.errors import RecordError
from scaffold.experiment import ATTEMPTS_DIR, PROGRESS_FILE, RECORD_FILE
from scaffold.experiment.budget import read_budget
from scaffold.experiment.progress import read_progress
from scaffold.experiment.sequential import unneeded_cases
from scaffold.records.files import read_record
from scaffold.util.atomic import write_json_atomic

__all__ = [
    "PLAN_FILE",
    "STALLED_AFTER_S",
    "Running",
    "Status",
    "finish_plan",
    "new_session_token",
    "read_plan",
    "read_status",
    "status_json",
    "status_line",
    "status_view",
    "write_plan",
]

PLAN_FILE: Final = "plan.json"
STALLED_AFTER_S: Final = 600.0
"""A progress file not rewritten for this long (10 minutes) marks its trial as stalled."""
SCHEMA_VERSION: Final = 1


def new_session_token() -> str:
    """A new session's token: the budget (scaffold.experiment.budget) counts the trials of one session by it."""
    return secrets.token_hex(8)


def write_plan(
    root: Path,
    case_ids: Sequence[str],
    *,
    session: str,
    started_at: datetime,
    limits: Mapping[str, float | int | None] | None = None,
) -> Path:
    """Write *root*'s plan for a session starting: the cases it will run (resumed ones included)."""
    return write_json_atomic(
        root / PLAN_FILE,
        {
            "schema_version": SCHEMA_VERSION,
            "session": session,
            "started_at": started_at.isoformat(),
            "finished_at": None,
            "cases": list(case_ids),
            "limits": dict(limits or {}),
        },
    )


def read_plan(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((root / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cases"), list) else None


def finish_plan(root: Path, session: str, finished_at: datetime) -> None:
    """Mark the session *session*'s plan finished (a later session's plan is left alone)."""
    plan = read_plan(root)
    if plan is not None and plan.get("session") == session:
        write_json_atomic(root / PLAN_FILE, {**plan, "finished_at": finished_at.isoformat()})


@dataclass(frozen=True, slots=True)
class Running:
    """A trial in progress, from its progress file."""

    case_id: str
    phase: str
    turn: int
    conversation_turn: int
    elapsed_s: float
    idle_s: float
    cost_usd: float | None
    worker: str
    retry: int = 0
    """Which retry of the trial this is (``--retry-excluded``); 0: its first attempt."""
    retries: int = 0
    """The retries it may have at most."""

    @property
    def stalled(self) -> bool:
        return self.idle_s >= STALLED_AFTER_S


@dataclass(frozen=True, slots=True)
class Status:
    """The figures of one or more experiment folders at one moment."""

    folders: tuple[str, ...]
    planned: int | None
    """Cases the sessions set out to run; None when no folder has a plan."""
    done: int
    verdicts: Mapping[str, int]
    running: tuple[Running, ...]
    queued: int | None
    not_run: tuple[str, ...]
    """Cases of a finished session that have no record (stopped by a budget, or interrupted)."""
    stopped: tuple[str, ...]
    """Why a budget stopped a session from starting trials (--max-trials / --max-cost reached)."""
    finished: bool
    elapsed_s: float | None
    eta_s: float | None
    spent_usd: float | None
    cost_known: int = 0
    """Records that reported a cost (spent_usd sums theirs and the running trials' so far)."""
    not_needed: int = 0
    """Cases a run until decided no longer needs: their comparison was decided first (neither queued
    nor missing)."""
    durations: tuple[float, ...] = field(default=(), repr=False)

    @property
    def stalled(self) -> int:
        return sum(r.stalled for r in self.running)


@dataclass
class _Folder:
    plan: dict[str, Any] | None
    records: dict[str, tuple[str, float | None, float]]
    running: list[Running]


class RecordCache:
    """Records already read, by path and modification time: a record, once written, is read once however
    often the status is asked (the live line asks every second)."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, tuple[str, str, float | None, float] | None]] = {}

    def get(self, path: Path) -> tuple[str, str, float | None, float] | None:
        """(case id, verdict, cost, duration) of the record at *path*; None when unreadable."""
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return None
        hit = self._seen.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            record = read_record(path)
        except RecordError:
            value = None
        else:
            value = (record.case_id, record.verdict, record.cost_of_attempts_usd, record.duration_s)
        self._seen[path] = (stamp, value)
        return value


def read_status(roots: Iterable[Path], now: datetime, cache: RecordCache | None = None) -> Status:
    """The status of the experiment folders *roots* at *now* (an aware datetime)."""
    cache = cache or RecordCache()
    roots = [Path(r) for r in roots]
    folders = [_read_folder(root, now, cache) for root in roots]
    planned_any = any(f.plan is not None for f in folders)
    planned = done = queued = cost_known = not_needed = 0
    verdicts: dict[str, int] = {}
    running: list[Running] = []
    not_run: list[str] = []
    stopped: list[str] = []
    durations: list[float] = []
    spent = 0.0
    started: list[datetime] = []
    ends: list[datetime] = []
    finished = True
    for root, folder in zip(roots, folders, strict=True):
        cases = [str(c) for c in folder.plan["cases"]] if folder.plan is not None else None
        wanted = set(cases) if cases is not None else None
        records = {k: v for k, v in folder.records.items() if wanted is None or k in wanted}
        ended = folder.plan is not None and bool(folder.plan.get("finished_at"))
        # After the session's end a progress file without a record is a trial that never finished (its
        # worker died, or Ctrl-C): not running, but not run.
        active = [] if ended else [r for r in folder.running if (wanted is None or r.case_id in wanted)]
        active = [r for r in active if r.case_id not in records]
        for verdict, cost, duration in records.values():
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
            durations.append(duration)
            spent += cost or 0.0
            cost_known += cost is not None
        spent += sum(r.cost_usd or 0.0 for r in active)
        done, running = done + len(records), running + active
        plan = folder.plan
        finished = finished and (ended or plan is None) and not active
        if plan is None or cases is None:
            continue
        planned += len(cases)
        busy = {r.case_id for r in active}
        missing = [c for c in cases if c not in records and c not in busy]
        decided = unneeded_cases(root, missing)  # a run until decided: neither queued nor missing
        not_needed, missing = not_needed + len(decided), [c for c in missing if c not in decided]
        not_run, queued = (not_run + missing, queued) if ended else (not_run, queued + len(missing))
        budget = read_budget(root)
        if budget is not None and budget.get("session") == plan.get("session") and budget.get("stopped"):
            stopped.append(str(budget["stopped"]))
        if (start := _time(plan.get("started_at"))) is not None:
            started.append(start)
            ends.append((_time(plan.get("finished_at")) if ended else None) or now)
    elapsed = (max(ends) - min(started)).total_seconds() if started else None
    left = queued + len(running)
    eta = None
    if durations and planned_any:
        eta = sum(durations) / len(durations) * left / max(1, len(running)) if left else 0.0
    return Status(
        folders=tuple(str(r) for r in roots),
        planned=planned if planned_any else None,
        done=done,
        verdicts=dict(sorted(verdicts.items())),
        running=tuple(sorted(running, key=lambda r: (-r.elapsed_s, r.case_id))),
        queued=queued if planned_any else None,
        not_run=tuple(not_run),
        not_needed=not_needed,
        stopped=tuple(dict.fromkeys(stopped)),
        finished=finished and planned_any,
        elapsed_s=elapsed,
        eta_s=eta,
        spent_usd=round(spent, 6) if cost_known or any(r.cost_usd is not None for r in running) else None,
        cost_known=cost_known,
        durations=tuple(durations),
    )


def _read_folder(root: Path, now: datetime, cache: RecordCache) -> _Folder:
    records: dict[str, tuple[str, float | None, float]] = {}
    running: list[Running] = []
    try:
        entries = sorted(os.scandir(root / "trials"), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        if not entry.is_dir():
            continue
        folder = Path(entry.path)
        record = cache.get(folder / RECORD_FILE)
        if record is not None:
            records[record[0]] = record[1:]
            continue
        progress = read_progress(folder / PROGRESS_FILE)
        if progress is not None:
            running.append(_running(progress, now, _earlier_cost(folder, progress, cache)))
    return _Folder(read_plan(root), records, running)


def _earlier_cost(folder: Path, progress: Mapping[str, Any], cache: RecordCache) -> float | None:
    """What the attempts of a running retry set aside cost: its last one's record sums them all."""
    retry = progress.get("retry")
    if not isinstance(retry, int) or retry < 1:
        return None
    found = cache.get(folder / ATTEMPTS_DIR / str(retry) / RECORD_FILE)
    return found[2] if found is not None else None


def _running(data: Mapping[str, Any], now: datetime, earlier_cost: float | None = None) -> Running:
    start = _time(data.get("started_at")) or now
    updated = _time(data.get("updated_at")) or start
    cost = data.get("cost_usd")
    if earlier_cost is not None:
        cost = (cost if isinstance(cost, int | float) else 0.0) + earlier_cost
    retry, retries = data.get("retry"), data.get("retries")
    return Running(
        case_id=str(data["case_id"]),
        phase=str(data.get("phase") or "starting"),
        turn=int(data.get("turn") or 0),
        conversation_turn=int(data.get("conversation_turn") or 0),
        elapsed_s=max(0.0, (now - start).total_seconds()),
        idle_s=max(0.0, (now - updated).total_seconds()),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        worker=str(data.get("worker") or ""),
        retry=retry if isinstance(retry, int) and retry > 0 else 0,
        retries=retries if isinstance(retries, int) and retries > 0 else 0,
    )


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


# --- formatting ----------------------------------------------------------------------------------------


def clock(seconds: float | None) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour; ``?`` when unknown."""
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.2f}"


def _trial(running: Running) -> str:
    # "in trial": the time since the trial started, workspace setup included; the reports' agent time
    # and the transcript's turn times are parts of it, and say so.
    turn = f" t{running.turn}" if running.turn else ""
    stalled = " STALLED" if running.stalled else ""
    retry = f" retry {running.retry}/{running.retries}" if running.retry else ""
    return f"{running.case_id}{retry} {running.phase}{turn} {clock(running.elapsed_s)} in trial{stalled}"


def status_line(status: Status, *, shown: int = 3) -> str:
    """One line: done/running/queued, elapsed, ETA, spend, and the first *shown* running trials with
    their phase and turn (the live line and ``comet status``'s first line)."""
    total = f"/{status.planned}" if status.planned is not None else ""
    parts = [f"done {status.done}{total}", f"running {len(status.running)}"]
    if status.stalled:
        parts.append(f"stalled {status.stalled}")
    if status.queued is not None:
        parts.append(f"queued {status.queued}")
    if status.not_needed:
        parts.append(f"not needed {status.not_needed}")
    if status.not_run:
        parts.append(f"not run {len(status.not_run)}")
    parts.append(f"elapsed {clock(status.elapsed_s)}")
    if not status.finished:
        parts.append(f"ETA {clock(status.eta_s)}")
    parts.append(f"spent {_money(status.spent_usd)}")
    line = " | ".join(parts)
    if status.running:
        trials = ", ".join(_trial(r) for r in status.running[:shown])
        more = f" +{len(status.running) - shown}" if len(status.running) > shown else ""
        line += f" | {trials}{more}"
    return line


def status_view(status: Status) -> list[str]:
    """``comet status``: the line's figures spelt out, every running trial, the trials not run."""
    state = "finished" if status.finished else "running" if status.running or status.queued else "idle"
    lines = [f"experiment: {', '.join(status.folders)} ({state})"]
    planned = "unknown (no plan.json)" if status.planned is None else str(status.planned)
    lines.append(f"trials: {status.done} done of {planned} planned")
    if status.verdicts:
        lines.append("verdicts: " + ", ".join(f"{n} {v}" for v, n in status.verdicts.items()))
    lines.append(f"running: {len(status.running)}" + (f" ({status.stalled} stalled)" if status.stalled else ""))
    for r in status.running:
        cost = f", {_money(r.cost_usd)} so far" if r.cost_usd is not None else ""
        conversation = f", conversation turn {r.conversation_turn}" if r.conversation_turn > 1 else ""
        stalled = f"; STALLED: no update for {clock(r.idle_s)}" if r.stalled else ""
        retry = f" (retry {r.retry} of at most {r.retries}: earlier attempts excluded as noise)" if r.retry else ""
        lines.append(
            f"  {r.case_id}{retry}: {r.phase}, turn {r.turn}{conversation}, {clock(r.elapsed_s)} in trial "
            f"[{r.worker}]{cost}{stalled}"
        )
    if status.queued is not None:
        lines.append(f"queued: {status.queued}")
    if status.not_needed:
        lines.append(f"not needed: {status.not_needed} (run until decided: their comparisons were decided first)")
    lines.append(f"elapsed: {clock(status.elapsed_s)}")
    if not status.finished:
        lines.append(f"estimated time left: {clock(status.eta_s)}")
    known = f" ({status.cost_known} of {status.done} finished trials reported a cost)" if status.done else ""
    lines.append(f"spent: {_money(status.spent_usd)}{known}")
    for reason in status.stopped:
        lines.append(f"budget: {reason}: no new trial was started")
    if status.not_run:
        lines.append(f"not run: {len(status.not_run)} (resume with the same --experiment-id to run them)")
        lines += [f"  {case}" for case in status.not_run]
    return lines


def status_json(status: Status) -> dict[str, Any]:
    """``comet status --json``: the figures as plain data."""
    return {
        "folders": list(status.folders),
        "finished": status.finished,
        "planned": status.planned,
        "done": status.done,
        "verdicts": dict(status.verdicts),
        "running": len(status.running),
        "stalled": status.stalled,
        "queued": status.queued,
        "not_run": list(status.not_run),
        "not_needed": status.not_needed,
        "stopped": list(status.stopped),
        "elapsed_s": status.elapsed_s,
        "eta_s": status.eta_s,
        "spent_usd": status.spent_usd,
        "trials": [
            {
                "case_id": r.case_id,
                "phase": r.phase,
                "turn": r.turn,
                "conversation_turn": r.conversation_turn,
                "elapsed_s": round(r.elapsed_s, 3),
                "idle_s": round(r.idle_s, 3),
                "stalled": r.stalled,
                "cost_usd": r.cost_usd,
                "worker": r.worker,
                "retry": r.retry,
            }
            for r in status.running
        ],
    }
