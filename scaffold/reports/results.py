"""``results.jsonl``: one JSON object per trial in a stable schema for other tools (docs/results-schema.md).

The schema has its own version, independent of the trial record's: a field is never renamed or given a
new meaning without bumping ``RESULTS_SCHEMA_VERSION``; new fields may be added within a version.

After the trials, one line per record that could not be read (``"unreadable": true``, with the record's
path, the field to blame and the reason): a tool reading results.jsonl sees that trials are missing
rather than a silently shorter list. Trial lines never carry ``unreadable``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from scaffold.records import JudgeInfo, TrialRecord
from scaffold.reports.format import known
from scaffold.reports.model import TrialFiles, UnreadableRecord
from scaffold.reports.skills import trial_skill_use
from scaffold.rubrics import JUDGE_SOURCE

__all__ = ["RESULTS_SCHEMA", "RESULTS_SCHEMA_VERSION", "result_lines", "result_row"]

RESULTS_SCHEMA = "comet-eval/results"
RESULTS_SCHEMA_VERSION = 1


def result_row(record: TrialRecord, files: TrialFiles | None = None) -> dict[str, Any]:
    """The results.jsonl object of one trial (field meanings: docs/results-schema.md)."""
    noise = record.noise
    traj = record.trajectory
    tokens = traj.tokens if traj is not None else None
    rubric: dict[str, float | None] = {}
    judge: dict[str, float | None] = {}
    for dim in record.dimensions:
        target = judge if dim.source == JUDGE_SOURCE else rubric
        target[dim.name] = known(dim.score)
    agent = record.agent
    row: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "schema_version": RESULTS_SCHEMA_VERSION,
        "experiment_id": record.experiment_id,
        "case_id": record.case_id,
        "task": record.task,
        "treatment": record.treatment,
        "trial": record.trial,
        "verdict": record.verdict,
        "passed": None if record.verdict == "error" else record.verdict == "passed",
        "weighted_score": known(record.weighted_score) if record.verdict != "error" else None,
        "noise": {"category": noise.category, "reason": noise.reason, "source": noise.source},
        "analysis_set": noise.category != "excluded",
        "attempts": len(record.attempts) + 1,
        "profile": record.profile,
        "config_hash": record.config_hash,
        "agent": {"name": agent.name, "model": agent.model, "version": agent.version},
        "started_at": record.started_at or None,
        "finished_at": record.finished_at or None,
        "duration_s": known(record.duration_s),
        "tokens": (
            {
                "input": tokens.input,
                "output": tokens.output,
                "cache_read": tokens.cache_read,
                "cache_write": tokens.cache_write,
            }
            if tokens is not None
            else None
        ),
        "cost_usd": known(traj.cost_usd) if traj is not None else None,
        "dimensions": rubric,
        "judge": judge,
        "hard_failures": list(record.hard_failures),
        "failed_checks": [c.name for c in record.checks if c.status == "failed"],
        "errors": [e.type or "error" for e in record.errors],
        "changes": (
            {"added": record.changes.added, "modified": record.changes.modified, "deleted": record.changes.deleted}
            if record.changes is not None
            else None
        ),
        "record": files.record if files else None,
        "streams": list(files.streams) if files else [],
    }
    if record.judge is not None:
        # Only when the judge was enabled for the trial: results.jsonl of runs without a judge stays as it
        # was, byte for byte (a new field within the version, which readers ignore when they do not know it).
        row["judge_info"] = _judge_info(record.judge)
    use = trial_skill_use(record)
    if use is not None:
        # Only for a trial expected to invoke skills, or one under a treatment that installs none whose agent
        # says what it loads, so the lines of every other trial stay as they were.
        row["skill_use"] = {
            "expected": list(use.expected),
            "used": use.used,
            "failed_call": bool(use.failed),
            "category": use.category,
            "others": list(use.others),
        }
    return row


def _judge_info(judge: JudgeInfo) -> dict[str, Any]:
    """The judge's run: status, reason, who judged, samples and spread, and its own spend (never in ``cost_usd``)."""
    return {
        "status": judge.status,
        "reason": judge.reason or None,
        "agent": judge.agent,
        "model": judge.model,
        "transport": judge.transport,
        "samples": judge.samples,
        "spread": {name: known(value) for name, value in sorted(judge.spread.items())},
        "input_tokens": judge.input_tokens,
        "output_tokens": judge.output_tokens,
        "cost_usd": known(judge.cost_usd),
        "latency_s": known(judge.latency_s),
        "session_id": judge.session_id,
    }


def result_lines(
    records: Iterable[TrialRecord],
    files: Mapping[tuple[str, str], TrialFiles] | None = None,
    *,
    unreadable: Iterable[UnreadableRecord] = (),
) -> Iterator[str]:
    """One JSON line per record (with its newline), sorted by (task, treatment, experiment, trial); then
    one per *unreadable* record, in the order given."""
    files = files or {}
    ordered = sorted(records, key=lambda r: (r.task, r.treatment, r.experiment_id, r.trial, r.case_id))
    for record in ordered:
        row = result_row(record, files.get((record.experiment_id, record.case_id)))
        # orjson: compact UTF-8 with the newline, about five times faster than json.dumps per line. Every
        # number in a row went through known(), so no NaN reaches it (orjson would write null).
        yield orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE).decode()
    for problem in unreadable:
        line = {
            "schema": RESULTS_SCHEMA,
            "schema_version": RESULTS_SCHEMA_VERSION,
            "unreadable": True,
            "record": problem.file,
            "field": problem.field,
            "reason": problem.reason,
        }
        yield orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE).decode()
