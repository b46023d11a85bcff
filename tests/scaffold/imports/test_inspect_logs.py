"""Inspect AI eval logs as records: every field of the mapping, on logs inspect-ai 0.3.285 wrote itself
(tests/data/imports/README.md); ``.json`` logs read without Inspect, ``.eval`` logs with its reader."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scaffold.errors import ReportError
from scaffold.imports import ImportInput, kind_of, load_imports
from scaffold.imports.inspect_logs import log_files
from scaffold.records import TrialRecord

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"
JSON_LOGS, EVAL_LOGS = DATA / "inspect-json", DATA / "inspect"
SAMPLES = {"broken", "count", "multiply", "slow", "upper"}


def records(*paths: Path, treatment: str | None = None) -> list[TrialRecord]:
    return list(load_imports([ImportInput(p, treatment) for p in paths]).records)


def one(found: list[TrialRecord], sample: str, treatment: str, epoch: int = 1) -> TrialRecord:
    (record,) = [r for r in found if (r.task, r.treatment, r.trial) == (f"arithmetic/{sample}", treatment, epoch)]
    return record


def has_inspect() -> bool:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        return False
    return True


needs_inspect = pytest.mark.skipif(
    not has_inspect(), reason="Inspect's .eval reader is the optional extra: pip install 'comet-eval[inspect]'"
)


def test_logs_and_folders_of_logs_are_found() -> None:
    assert [p.parent.name for p in log_files(JSON_LOGS)] == ["control", "skill"]
    assert [p.suffix for p in log_files(EVAL_LOGS)] == [".eval", ".eval"]
    assert kind_of(JSON_LOGS) == kind_of(EVAL_LOGS / "skill") == "inspect"
    assert log_files(DATA / "README.md") == []


def test_every_sample_epoch_becomes_a_record() -> None:
    found = records(JSON_LOGS)
    assert len(found) == 20  # 5 samples x 2 epochs x 2 logs
    assert {r.task for r in found} == {f"arithmetic/{s}" for s in SAMPLES}
    assert {r.treatment for r in found} == {"SKILL", "CONTROL"}  # the eval's metadata.treatment
    assert {r.trial for r in found} == {1, 2}  # the epoch
    record = one(found, "multiply", "SKILL", 2)
    assert record.case_id == "multiply-e2"
    assert record.config["model"] == "mockllm/model" and record.config["task_args"] == {"skill": True}
    assert record.agent.name == "inspect_ai" and record.agent.version == "0.3.285"
    assert (record.agent.model, record.agent.endpoint) == ("mockllm/model", "none")
    assert record.workspace.backend == "local"
    # The same sample under both treatments has the same content: the task content check pairs them.
    control = one(found, "multiply", "CONTROL", 2)
    assert record.config["task"]["content_hash"] == control.config["task"]["content_hash"]


def test_the_first_scorers_value_gives_the_verdict() -> None:
    found = records(JSON_LOGS)
    passed = one(found, "multiply", "SKILL")  # includes() -> "C"
    assert passed.verdict == "passed" and passed.weighted_score == 1.0
    assert [(c.name, c.status, c.reason) for c in passed.checks] == [("includes", "passed", "1 from scorer includes")]
    failed = one(found, "multiply", "CONTROL")  # "I"
    assert failed.verdict == "failed" and failed.weighted_score == 0.0


def test_tokens_and_times() -> None:
    record = one(records(JSON_LOGS), "count", "CONTROL")
    assert record.trajectory is not None and record.trajectory.tokens is not None
    assert (record.trajectory.tokens.input, record.trajectory.tokens.output) == (9, 4)
    assert record.trajectory.cost_usd is None  # mockllm has no price
    assert record.started_at and record.finished_at and 0 < record.duration_s < 30
    assert set(record.phases) == {"agent_s"}


def test_a_sample_error_is_an_unscored_trial_and_a_limit_is_the_agents_own() -> None:
    found = records(JSON_LOGS)
    broken = one(found, "broken", "SKILL")
    assert broken.verdict == "error" and broken.weighted_score is None
    assert broken.errors[0].type == "KeyError" and "command" in broken.errors[0].message
    assert (broken.noise.category, broken.noise.reason) == ("flagged", "suspected_harness_trigger")
    slow = one(found, "slow", "SKILL")  # the task's time limit: scored, kept
    assert slow.verdict == "failed"
    assert (slow.noise.category, slow.noise.reason) == ("included", "agent_exceeded_task_budget")
    assert slow.noise.evidence["limit"] == {"type": "time", "value": 3.0}


def test_as_names_the_treatment() -> None:
    assert {r.treatment for r in records(JSON_LOGS / "skill", treatment="with-skill")} == {"with-skill"}


@needs_inspect
def test_eval_logs_read_with_inspects_reader_give_the_same_records() -> None:
    assert records(EVAL_LOGS) == records(JSON_LOGS)


def test_eval_logs_without_inspect_say_how_to_read_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as when the extra is not installed
    with pytest.raises(ReportError, match=r"comet-eval\[inspect\].*inspect log convert --to json"):
        records(EVAL_LOGS)
