"""Trial records for tests, written the short way: plain dicts for the nested parts, typed on the way in.

``rec`` builds one record; ``suite`` a whole experiment from a letter code; ``record_of`` types any plain
record data exactly as a record file is typed when it is read (so a wrong type fails here, clearly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from scaffold.records import TrialRecord

__all__ = [
    "INCLUDED",
    "SKIPPED_NO_MODEL",
    "changed",
    "dims",
    "judge_info",
    "judged",
    "rec",
    "record_of",
    "suite",
    "tasks",
]


def record_of(data: Mapping[str, Any]) -> TrialRecord:
    """*data* (the JSON form of a record, nested parts as dicts) as the typed record."""
    return msgspec.convert(dict(data), TrialRecord)


def changed(record: TrialRecord, **fields: Any) -> TrialRecord:
    """*record* with *fields* replaced, given in their JSON form (dicts for the nested parts)."""
    return record_of({**record.to_dict(), **fields})


INCLUDED = {"category": "included", "reason": "", "source": "structured", "evidence": {}}


def rec(
    task: str,
    treatment: str,
    trial: int,
    verdict: str = "passed",
    *,
    noise: dict[str, Any] | None = None,
    score: float | None = None,
    experiment: str = "exp",
    **fields: Any,
) -> TrialRecord:
    if score is None and verdict != "error":
        score = 1.0 if verdict == "passed" else 0.0
    data = {
        "experiment_id": experiment,
        "case_id": f"{task}-{treatment}-r{trial}",
        "task": task,
        "treatment": treatment,
        "trial": trial,
        "config": {},
        "config_hash": "h",
        "verdict": verdict,
        "weighted_score": score,
        "noise": noise or INCLUDED,
        "streams": (),
        **fields,
    }
    return record_of(data)


def suite(spec: dict[str, dict[str, str]]) -> list[TrialRecord]:
    """{treatment: {task: "PPF"}}: P passed, F failed, E errored, X excluded (failed, rate limited),
    G flagged pass."""
    out = []
    for treatment, tasks in spec.items():
        for task, verdicts in tasks.items():
            for i, v in enumerate(verdicts, start=1):
                if v == "X":
                    noise = {"category": "excluded", "reason": "rate_limited", "source": "structured", "evidence": {}}
                    out.append(rec(task, treatment, i, "failed", noise=noise))
                elif v == "G":
                    noise = {"category": "flagged", "reason": "validator_assumption", "source": "text", "evidence": {}}
                    out.append(rec(task, treatment, i, "passed", noise=noise))
                else:
                    out.append(rec(task, treatment, i, {"P": "passed", "F": "failed", "E": "error"}[v]))
    return out


def tasks(n: int, verdicts: str) -> dict[str, str]:
    return {f"t{i}": verdicts for i in range(n)}


def dims(completion: float | None, skill: float | None, judge: float | None = None) -> tuple[dict[str, Any], ...]:
    found: list[dict[str, Any]] = [
        {"name": "completion", "weight": 3.0, "score": completion, "reason": ""},
        {"name": "skill_invocation", "weight": 1.0, "score": skill, "reason": ""},
    ]
    if judge is not None:
        found.append({"name": "output_quality", "weight": 1.0, "score": judge, "reason": "", "source": "judge"})
    return tuple(found)


SKIPPED_NO_MODEL = "BENCH_JUDGE_MODEL is required when BENCH_LLM_JUDGE=1"


def judge_info(status: str = "enabled_and_successful", reason: str = "", **fields: Any) -> dict[str, Any]:
    """A record's ``judge`` part (scaffold.records.JudgeInfo) in its JSON form. A successful judge gets
    the agent, model and transport of a direct HTTP call and one sample unless *fields* say otherwise."""
    if status == "enabled_and_successful":
        fields = {"agent": "claude-code", "model": "judge-model", "transport": "http", "samples": 1, **fields}
    return {"status": status, "reason": reason, **fields}


def judged(**scores: float | None) -> tuple[dict[str, Any], ...]:
    """Judge dimensions (``source: "judge"``), one per keyword: ``judged(task_completion=0.8)``."""
    return tuple(
        {"name": name, "weight": 1.0, "score": score, "reason": "judged", "source": "judge"}
        for name, score in scores.items()
    )
