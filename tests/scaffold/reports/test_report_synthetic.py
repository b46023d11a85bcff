"""The synthetic record generator used by the reports benchmark and the report.html tests."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from scaffold.experiment import RECORD_FILE
from scaffold.records.files import read_record
from tests.support.synthetic import STREAM_FILE, synthetic_records, task_names, treatment_names, write_experiment


def test_every_case_once_deterministic_and_readable_back(tmp_path: Path) -> None:
    tasks, treatments = task_names(4), treatment_names(3)
    records = list(synthetic_records(tasks, treatments, 5, seed=7))
    assert records == list(synthetic_records(tasks, treatments, 5, seed=7))
    assert records != list(synthetic_records(tasks, treatments, 5, seed=8))
    assert len({r.case_id for r in records}) == 4 * 3 * 5
    assert treatments[0] == "CONTROL"

    experiment = write_experiment(tmp_path / "logs", records)
    paths = experiment.record_paths()
    assert len(paths) == 60
    assert all((p.parent / STREAM_FILE).is_file() and p.name == RECORD_FILE for p in paths)
    back = [read_record(p) for p in paths]
    assert sorted(back, key=lambda r: r.case_id) == sorted(records, key=lambda r: r.case_id)


def test_realistic_mix_of_outcomes_noise_and_spend() -> None:
    records = list(synthetic_records(task_names(20), treatment_names(4), 20, seed=1))
    verdicts = Counter(r.verdict for r in records)
    noise = Counter(r.noise.category for r in records)
    assert verdicts["passed"] > 0 and verdicts["failed"] > 0
    assert 0 < noise["excluded"] < 0.06 * len(records) and 0 < noise["flagged"] < 0.08 * len(records)
    # Excluded trials are infrastructure failures: unscored, never failed.
    assert all(r.verdict == "error" and r.weighted_score is None for r in records if r.noise.category == "excluded")
    scored = [r for r in records if r.verdict != "error"]
    assert all(r.weighted_score is not None and 0 <= r.weighted_score <= 1 for r in scored)
    assert all(len(r.dimensions) == 7 for r in scored)
    assert all(r.trajectory is not None and (r.trajectory.cost_usd or 0) > 0 for r in records)
    # One configuration per (task, treatment): shards of it could be merged.
    hashes = {(r.task, r.treatment): set() for r in records}
    for r in records:
        hashes[(r.task, r.treatment)].add(r.config_hash)
    assert all(len(h) == 1 for h in hashes.values())
    # Treatments really differ: the pass rates are not all the same.
    rates = {
        t: sum(r.verdict == "passed" for r in scored if r.treatment == t) / sum(r.treatment == t for r in scored)
        for t in treatment_names(4)
    }
    assert max(rates.values()) - min(rates.values()) > 0.05


def test_nothing_to_write_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no records to write"):
        write_experiment(tmp_path, [])
