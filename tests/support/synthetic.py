"""Synthetic trial records: realistic experiments of any size, for benchmarks, demos and report tests.

Deterministic: the same arguments give the same records, byte for byte (a seeded ``random.Random``,
fixed timestamps). Each task has a difficulty and each treatment an effect on the log-odds of passing,
so treatments really differ and tasks really vary; trials add noise. Records have the shape the runner
writes (configuration and its hash per task and treatment, generic-rubric dimensions, trajectory with
tokens and cost, checks, noise verdict), about 3-4 KB each as JSON, like real ones. A small share of
trials is excluded (infrastructure noise, verdict ``error``) or flagged.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from scaffold.experiment import RECORD_FILE, Experiment
from scaffold.records import TrialRecord, Verdict
from scaffold.rubrics.generic import WEIGHTS
from scaffold.util.hashing import hash_json

__all__ = ["STREAM_FILE", "synthetic_records", "task_names", "treatment_names", "write_experiment"]

STREAM_FILE = "agent.turn-1.jsonl"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_EXCLUDED = ("rate_limited", "api_timeout", "container_failure", "network_failed")
_FLAGGED = ("outer_failure_mentioned", "partial_observability", "validator_assumption")


def task_names(count: int) -> list[str]:
    return [f"task-{i:03d}" for i in range(count)]


def treatment_names(count: int, baseline: str = "CONTROL") -> list[str]:
    return [baseline, *(f"SKILL_{i:02d}" for i in range(1, count))]


def _config(task: str, treatment: str, model: str) -> dict[str, Any]:
    return {
        "task": {"name": task, "content_hash": hash_json(["task", task])},
        "treatment": {"name": treatment, "skills": [] if treatment == "CONTROL" else [treatment.lower()]},
        "agent": {"name": "claude-code", "model": model},
        "backend": "docker",
        "profile": "generic",
        "timeouts": {"agent_s": 600.0, "validation_s": 120.0},
    }


def synthetic_records(
    tasks: Sequence[str],
    treatments: Sequence[str],
    trials: int,
    *,
    seed: int = 0,
    experiment_id: str = "synthetic",
    excluded_share: float = 0.02,
    flagged_share: float = 0.03,
    model: str = "claude-sonnet-4-5",
) -> Iterator[TrialRecord]:
    """Records of every (task, treatment, trial), tasks outermost, in a deterministic order.

    The first treatment is the baseline with effect 0; the others get effects between -0.8 and +1.2
    on the log-odds scale, and a cost per trial that grows with the effect (skills read more tokens).
    """
    rng = random.Random(seed)
    difficulty = {t: rng.gauss(0.3, 1.4) for t in tasks}
    effect = {s: 0.0 if i == 0 else rng.uniform(-0.8, 1.2) for i, s in enumerate(treatments)}
    verbosity = {s: 1.0 if i == 0 else rng.uniform(0.9, 1.8) for i, s in enumerate(treatments)}
    hashes = {(t, s): hash_json(_config(t, s, model)) for t in tasks for s in treatments}
    clock = _EPOCH
    for task in tasks:
        for treatment in treatments:
            config = _config(task, treatment, model)
            for trial in range(1, trials + 1):
                p = 1.0 / (1.0 + math.exp(-(difficulty[task] + effect[treatment])))
                roll = rng.random()
                noise: dict[str, Any] = {"category": "included", "reason": "", "source": "structured", "evidence": {}}
                if roll < excluded_share:
                    reason = rng.choice(_EXCLUDED)
                    noise = {"category": "excluded", "reason": reason, "source": "structured", "evidence": {}}
                elif roll < excluded_share + flagged_share:
                    reason = rng.choice(_FLAGGED)
                    noise = {"category": "flagged", "reason": reason, "source": "text", "evidence": {}}
                passed = rng.random() < p
                duration = max(5.0, rng.lognormvariate(4.2, 0.5) * verbosity[treatment])
                started = clock
                clock += timedelta(seconds=duration)
                yield _record(
                    rng,
                    experiment_id=experiment_id,
                    task=task,
                    treatment=treatment,
                    trial=trial,
                    config=config,
                    config_hash=hashes[(task, treatment)],
                    verdict="error" if noise["category"] == "excluded" else ("passed" if passed else "failed"),
                    noise=noise,
                    p=p,
                    duration=duration,
                    started=started,
                    verbosity=verbosity[treatment],
                    model=model,
                )


def _record(
    rng: random.Random,
    *,
    experiment_id: str,
    task: str,
    treatment: str,
    trial: int,
    config: dict[str, Any],
    config_hash: str,
    verdict: Verdict,
    noise: dict[str, Any],
    p: float,
    duration: float,
    started: datetime,
    verbosity: float,
    model: str,
) -> TrialRecord:
    scored = verdict != "error"
    dims: list[dict[str, Any]] = []
    if scored:
        for name, weight in WEIGHTS.items():
            if name == "completion":
                score: float | None = 1.0 if verdict == "passed" else round(rng.uniform(0.0, 0.5), 2)
            elif name == "skill_invocation" and treatment == "CONTROL":
                score = None  # N/A: no skill to invoke
            else:
                score = round(min(1.0, max(0.0, rng.gauss(0.45 + 0.45 * p, 0.15))), 2)
            dims.append({"name": name, "weight": weight, "score": score, "reason": f"synthetic {name}"})
    scores = [(d["weight"], d["score"]) for d in dims if d["score"] is not None]
    weighted = round(sum(w * s for w, s in scores) / sum(w for w, _ in scores), 4) if scores else None
    tokens_in = int(rng.lognormvariate(10.5, 0.4) * verbosity)
    tokens_out = int(rng.lognormvariate(8.3, 0.5) * verbosity)
    cache = int(tokens_in * rng.uniform(0.3, 0.8))
    cost = round(tokens_in * 3e-6 + tokens_out * 15e-6 + cache * 0.3e-6, 6)
    tools: list[dict[str, Any]] = [
        {"name": rng.choice(("Bash", "Read", "Edit", "Write", "Grep")), "input": {}} for _ in range(5)
    ]
    checks = [
        {
            "name": f"check {i}",
            "status": "passed" if verdict == "passed" or rng.random() < 0.5 else "failed",
            "source": "script:test_task.py",
            "reason": "",
        }
        for i in range(1 if verdict == "error" else 4)
    ]
    failure = noise["reason"] if noise["category"] == "excluded" else ""
    trajectory = {
        "agent": "claude-code",
        "turns": rng.randint(3, 40),
        "conversation_turns": 1,
        "tool_calls": tools,
        "commands": ["pytest -q", "git diff"],
        "skills_invoked": [] if treatment == "CONTROL" else [treatment.lower()],
        "tokens": {"input": tokens_in, "output": tokens_out, "cache_read": cache, "cache_write": 0},
        "cost_usd": cost,
        "session_id": f"{task}-{treatment}-{trial}",
        "final_text": "Done." if scored else "",
        "permission_denials": [],
        "errors": [failure] if failure else [],
        "failures": [{"kind": failure, "source": "result", "message": f"synthetic {failure}", "final": True}]
        if failure
        else [],
        "malformed_lines": 0,
        "exit_code": 0 if scored else 1,
        "timed_out": False,
        "duration_s": round(duration * 0.9, 3),
        "completed": scored,
        "agent_version": "2.1.112",
        "interaction_log": [],
        "tool_call_count": len(tools),
    }
    data = {
        "experiment_id": experiment_id,
        "case_id": f"{task}-{treatment}-r{trial}",
        "task": task,
        "treatment": treatment,
        "trial": trial,
        "config": config,
        "config_hash": config_hash,
        "verdict": verdict,
        "profile": "generic",
        "started_at": started.isoformat(),
        "finished_at": (started + timedelta(seconds=duration)).isoformat(),
        "duration_s": round(duration, 3),
        "phases": {"workspace_s": 1.2, "agent_s": round(duration * 0.9, 3), "validation_s": 2.5, "scoring_s": 0.001},
        "agent": {"name": "claude-code", "model": model, "version": "2.1.112"},
        "trajectory": trajectory,
        "checks": tuple(checks),
        "dimensions": tuple(dims),
        "weighted_score": weighted,
        "workspace": {"backend": "docker", "kept": False, "path": None},
        "noise": noise,
        "streams": (STREAM_FILE,),
    }
    return msgspec.convert(data, TrialRecord)


def write_experiment(logs_dir: Path, records: Sequence[TrialRecord] | Iterator[TrialRecord]) -> Experiment:
    """Write *records* as an experiment under *logs_dir* (one trial folder each, with a small raw stream).

    Plain writes, not the runner's fsync-per-file atomic ones: this builds test inputs, fast.
    """
    experiment: Experiment | None = None
    for record in records:
        if experiment is None:
            experiment = Experiment.under(logs_dir, record.experiment_id)
        folder = experiment.trials_dir / record.case_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RECORD_FILE).write_text(json.dumps(record.to_dict(), indent=2) + "\n", encoding="utf-8")
        event = {"type": "result", "session_id": record.case_id, "total_cost_usd": _cost(record)}
        (folder / STREAM_FILE).write_text(json.dumps(event) + "\n", encoding="utf-8")
    if experiment is None:
        raise ValueError("write_experiment: no records to write (ask for at least one task, treatment and trial)")
    return experiment


def _cost(record: TrialRecord) -> float | None:
    return record.trajectory.cost_usd if record.trajectory is not None else None
