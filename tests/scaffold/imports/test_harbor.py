"""Harbor job folders as records: every field of the mapping, on jobs Harbor 0.26.0 wrote itself
(tests/data/imports/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scaffold.errors import ReportError
from scaffold.imports import ImportInput, kind_of, load_imports
from scaffold.imports.harbor import is_job, job_folders
from scaffold.records import TrialRecord

JOBS = Path(__file__).resolve().parents[2] / "data" / "imports" / "harbor"
WITH, WITHOUT = JOBS / "with-skills", JOBS / "without"


def records(*paths: Path, treatment: str | None = None) -> list[TrialRecord]:
    return list(load_imports([ImportInput(p, treatment) for p in paths]).records)


def one(found: list[TrialRecord], task: str, treatment: str, trial: int = 1) -> TrialRecord:
    (record,) = [r for r in found if (r.task, r.treatment, r.trial) == (task, treatment, trial)]
    return record


def test_a_job_folder_and_a_jobs_folder_are_found() -> None:
    assert is_job(WITH) and is_job(WITHOUT)
    assert not is_job(JOBS)  # the folder of jobs (harbor run -o DIR)
    assert job_folders(JOBS) == [WITH, WITHOUT]
    assert kind_of(WITH) == kind_of(JOBS) == "harbor"
    assert not is_job(next(WITH.glob("ledger-check-codes__*")))  # a trial folder is not a job


def test_every_trial_becomes_a_record_with_task_treatment_and_trial() -> None:
    found = records(JOBS)
    assert len(found) == 20
    assert {r.treatment for r in found} == {"oracle", "oracle.zrx7-checksum"}  # the agent, then its skills
    tasks = {"access-log-summary", "broken-image", "ledger-check-codes", "slow-oracle", "warehouse-totals"}
    assert {r.task for r in found} == tasks
    # Harbor's -k 2 copies, numbered in the order they started.
    for task in tasks:
        for treatment in ("oracle", "oracle.zrx7-checksum"):
            trials = sorted((r.started_at, r.trial) for r in found if (r.task, r.treatment) == (task, treatment))
            assert [t for _, t in trials] == [1, 2]
    record = one(found, "ledger-check-codes", "oracle.zrx7-checksum")
    assert record.experiment_id == "with-skills"
    assert record.case_id.startswith("ledger-check-codes__")
    assert record.config["agent"] == {"name": "oracle", "model": None, "skills": ["zrx7-checksum"]}
    assert (
        record.config["task"]["content_hash"]
        == json.loads((WITH / record.case_id / "result.json").read_text())["task_checksum"]
    )
    assert record.agent.name == "oracle" and record.agent.version == "1.0.0" and record.agent.endpoint == "none"
    assert record.workspace.backend == "docker"


def test_reward_gives_the_verdict_and_the_completion_score() -> None:
    found = records(JOBS)
    passed = one(found, "ledger-check-codes", "oracle.zrx7-checksum")
    assert passed.verdict == "passed" and passed.weighted_score == 1.0
    assert [(d.name, d.score) for d in passed.dimensions] == [("completion", 1.0)]
    assert [(c.name, c.status, c.reason) for c in passed.checks] == [
        ("reward", "passed", "1 from verifier_result.rewards (reward)")
    ]
    failed = one(found, "ledger-check-codes", "oracle")  # without its skill, the oracle fails by design
    assert failed.verdict == "failed" and failed.weighted_score == 0.0
    # reward.json's one entry ({"accuracy": 1.0}) is the reward, as for our own Harbor runs.
    accuracy = one(found, "warehouse-totals", "oracle")
    assert accuracy.verdict == "passed" and accuracy.checks[0].reason == "1 from verifier_result.rewards (accuracy)"


def test_fractional_reward_is_a_failed_trial_with_its_completion_score(tmp_path: Path) -> None:
    job = tmp_path / "with-skills"
    shutil.copytree(WITH, job)
    result = next(job.glob("access-log-summary__*")) / "result.json"
    data = json.loads(result.read_text())
    data["verifier_result"] = {"rewards": {"reward": 0.6667}}
    result.write_text(json.dumps(data))
    record = next(r for r in records(job) if r.case_id == result.parent.name)
    assert record.verdict == "failed" and record.weighted_score == pytest.approx(0.6667)


def test_times_phases_tokens_and_cost() -> None:
    record = one(records(JOBS), "warehouse-totals", "oracle")
    assert record.started_at.endswith("Z") and record.finished_at > record.started_at
    assert 10 < record.duration_s < 60
    assert set(record.phases) == {"workspace_s", "agent_setup_s", "agent_s", "validation_s"}
    assert record.trajectory is None  # the oracle reports no tokens and no cost


def test_tokens_and_cost_when_the_agent_reports_them(tmp_path: Path) -> None:
    job = tmp_path / "without"
    shutil.copytree(WITHOUT, job)
    result = next(job.glob("warehouse-totals__*")) / "result.json"
    data = json.loads(result.read_text())
    # Harbor's input count includes the cached tokens (AgentContext.n_input_tokens).
    data["agent_result"] = {"n_input_tokens": 1200, "n_cache_tokens": 200, "n_output_tokens": 300, "cost_usd": 0.25}
    data["agent_info"] = {"name": "claude-code", "version": "2.1.0"}
    data["agent_info"]["model_info"] = {"name": "claude-sonnet-4-5", "provider": "anthropic"}
    result.write_text(json.dumps(data))
    record = next(r for r in records(job) if r.case_id == result.parent.name)
    assert record.trajectory is not None and record.trajectory.tokens is not None
    tokens = record.trajectory.tokens
    assert (tokens.input, tokens.cache_read, tokens.output) == (1000, 200, 300)
    assert record.trajectory.cost_usd == 0.25
    assert record.agent.model == "anthropic/claude-sonnet-4-5" and record.agent.endpoint is None  # unknown
    assert record.treatment == "claude-code"


def test_errors_become_noise_where_harbor_says_why() -> None:
    found = records(JOBS)
    # The image could not be built: Harbor's docker environment failed its compose build.
    broken = one(found, "broken-image", "oracle")
    assert broken.verdict == "error" and broken.weighted_score is None
    assert broken.noise.category == "excluded" and broken.noise.reason == "build_failed"
    assert broken.errors[0].type == "RuntimeError" and "Docker compose command failed" in broken.errors[0].message
    # The agent ran out of its time: graded by Harbor (reward 0), a failure of its own, kept.
    slow = one(found, "slow-oracle", "oracle.zrx7-checksum")
    assert slow.verdict == "failed" and slow.errors[0].type == "AgentTimeoutError"
    assert (slow.noise.category, slow.noise.reason) == ("included", "agent_exceeded_task_budget")
    clean = one(found, "access-log-summary", "oracle")
    assert (clean.noise.category, clean.noise.reason, clean.errors) == ("included", "", ())


@pytest.mark.parametrize(
    ("kind", "category", "reason"),
    [
        ("ApiRateLimitError", "excluded", "rate_limited"),
        ("AgentAuthenticationError", "excluded", "auth_failed"),
        ("EnvironmentStartTimeoutError", "excluded", "container_failure"),
        ("RewardFileNotFoundError", "excluded", "missing_reward"),
        ("VerifierTimeoutError", "flagged", "validator_assumption"),
        ("ValueError", "flagged", "suspected_harness_trigger"),  # untyped: our classifier's call
    ],
)
def test_harbor_error_types_map_to_our_noise_classes(tmp_path: Path, kind: str, category: str, reason: str) -> None:
    job = tmp_path / "without"
    shutil.copytree(WITHOUT, job)
    result = next(job.glob("warehouse-totals__*")) / "result.json"
    data = json.loads(result.read_text())
    data["verifier_result"] = None
    data["exception_info"] = (
        {**data["exception_info"], "exception_type": kind}
        if data["exception_info"]
        else {
            "exception_type": kind,
            "exception_message": "it broke",
            "exception_traceback": "",
            "occurred_at": data["started_at"],
        }
    )
    result.write_text(json.dumps(data))
    record = next(r for r in records(job) if r.case_id == result.parent.name)
    assert record.verdict == "error"
    assert (record.noise.category, record.noise.reason) == (category, reason)


def test_as_names_the_treatment_of_every_trial() -> None:
    assert {r.treatment for r in records(WITH, treatment="SKILL")} == {"SKILL"}


def test_an_unreadable_result_is_a_problem_and_the_others_still_count(tmp_path: Path) -> None:
    job = tmp_path / "without"
    shutil.copytree(WITHOUT, job)
    bad = next(job.glob("warehouse-totals__*")) / "result.json"
    bad.write_text('{"task_name": 3}')
    loaded = load_imports([ImportInput(job)])
    assert len(loaded.records) == 9
    (problem,) = loaded.problems
    assert problem.file.endswith("result.json") and "not a Harbor trial result" in problem.reason


def test_the_same_job_twice_is_refused() -> None:
    with pytest.raises(ReportError, match="given twice"):
        load_imports([ImportInput(WITH), ImportInput(JOBS)])
