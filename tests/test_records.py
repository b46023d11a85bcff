"""Trial records on disk and the summary built from them."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.errors import RecordError, SelectionError
from scaffold.experiment import Experiment, new_experiment_id
from scaffold.records import SCHEMA_VERSION, TrialRecord, read_record, read_records, write_json_atomic
from scaffold.reports.summary import aggregate, render_summary, write_summary


def record(task: str, treatment: str, trial: int, verdict: str, score: float | None, **extra: Any) -> TrialRecord:
    dims = extra.pop(
        "dimensions",
        (
            {"name": "completion", "weight": 2.0, "score": score, "reason": ""},
            {"name": "skill_invocation", "weight": 1.0, "score": None, "reason": "N/A"},
        ),
    )
    return TrialRecord(
        experiment_id="e",
        case_id=f"{task}-{treatment}-r{trial}",
        task=task,
        treatment=treatment,
        trial=trial,
        config={},
        config_hash="sha256:x",
        verdict=verdict,
        weighted_score=score,  # type: ignore[arg-type]
        duration_s=extra.pop("duration_s", 1.0),
        dimensions=dims,
        **extra,
    )


def test_atomic_write_and_round_trip(tmp_path: Path) -> None:
    rec = record("a", "CONTROL", 1, "passed", 1.0, hard_failures=("x",), errors=({"type": "T", "message": "m"},))
    path = tmp_path / "deep" / "record.json"
    write_json_atomic(path, rec.to_dict())
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no temporary file left
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert read_record(path) == rec


def test_unknown_schema_and_garbage_are_refused(tmp_path: Path) -> None:
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**record("a", "C", 1, "passed", 1.0).to_dict(), "schema_version": 99}))
    with pytest.raises(RecordError, match="schema_version 99 is not supported"):
        read_record(future)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{half")
    records, problems = read_records([future, garbage])
    assert records == [] and len(problems) == 2


def test_experiment_ids() -> None:
    assert new_experiment_id() != new_experiment_id()
    with pytest.raises(SelectionError, match="--experiment-id"):
        Experiment.under(Path("/tmp"), "../escape")


def test_aggregate_counts_errors_as_unscored() -> None:
    recs = [
        record("a", "CONTROL", 1, "passed", 1.0),
        record("a", "CONTROL", 2, "failed", 0.5),
        record("a", "CONTROL", 3, "error", None),
        record("b", "SKILL", 1, "passed", 0.9),
    ]
    agg = aggregate(recs)
    control = agg.by_treatment["CONTROL"]
    assert control.trials == 3 and control.pass_rate == 0.5 and control.mean_score == 0.75
    assert control.dimension_mean("completion") == 0.75
    assert control.dimension_mean("skill_invocation") is None
    assert agg.tasks == ["a", "b"] and agg.treatments == ["CONTROL", "SKILL"]


def test_summary_tables(tmp_path: Path) -> None:
    recs = [
        record("a", "CONTROL", 1, "passed", 1.0, duration_s=2.0),
        record(
            "a",
            "CONTROL",
            2,
            "failed",
            0.5,
            duration_s=4.0,
            hard_failures=("Required skill not invoked: s",),
            checks=({"name": "c1", "status": "failed", "source": "s", "reason": ""},),
        ),
        record("a", "SKILL", 1, "error", None, errors=({"type": "WorkspaceError", "message": "disk | full"},)),
    ]
    text = render_summary("e", recs, ["bad.json: unreadable"])
    assert "| CONTROL | 2 | 1 | 1 | 0 | 50% | 0.750 | 3.00 |" in text
    assert "| SKILL | 1 | 0 | 0 | 1 | N/A | N/A | 1.00 |" in text
    assert "| a | 1/2, 0.75, 3.0s | 0/0 (+1 err), N/A, 1.0s |" in text
    assert "| a-CONTROL-r2 | 0.500 | Required skill not invoked: s; c1 |" in text
    assert "| a-SKILL-r1 | WorkspaceError: disk \\| full |" in text
    assert "- bad.json: unreadable" in text

    experiment = Experiment("e", tmp_path / "e")
    for rec in recs:
        write_json_atomic(experiment.trials_dir / rec.case_id / "record.json", rec.to_dict())
    path = write_summary(experiment)
    assert path == tmp_path / "e" / "summary.md"
    assert "| CONTROL | 2 | 1 | 1 | 0 | 50% |" in path.read_text()


def test_records_written_by_the_json_module_with_nan_still_read(tmp_path: Path) -> None:
    # orjson refuses NaN and Infinity, which json.dump writes by default: the reader falls back to json.
    rec = record("a", "CONTROL", 1, "failed", 0.5, duration_s=float("inf"))
    path = tmp_path / "record.json"
    path.write_text(json.dumps({**rec.to_dict(), "weighted_score": float("nan")}))
    back = read_record(path)
    assert back.duration_s == float("inf") and back.weighted_score != back.weighted_score  # NaN
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**rec.to_dict(), "trial": 2**70}))  # beyond orjson's 64-bit integers
    assert read_record(big).trial == 2**70


def test_bytes_that_are_not_a_record_are_refused_by_name(tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"schema_version": 1, "task": "caf\xe9"}')  # not UTF-8
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    missing = tmp_path / "missing.json"
    for path, message in ((latin, "cannot be read"), (listed, "is a JSON object"), (missing, "cannot be read")):
        with pytest.raises(RecordError, match=message) as caught:
            read_record(path)
        assert str(path) in str(caught.value)


def test_streams_round_trip_and_are_absent_from_older_records(tmp_path: Path) -> None:
    rec = record("a", "CONTROL", 1, "passed", 1.0, streams=("agent.turn-1.jsonl", "agent.turn-1.stderr.log"))
    path = tmp_path / "record.json"
    write_json_atomic(path, rec.to_dict())
    assert read_record(path).streams == ("agent.turn-1.jsonl", "agent.turn-1.stderr.log")
    older = {k: v for k, v in rec.to_dict().items() if k != "streams"}
    assert TrialRecord.from_dict(older).streams is None  # unknown: readers list the folder instead


_text = st.text(max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_records = st.builds(
    TrialRecord,
    experiment_id=_text,
    case_id=_text,
    task=_text,
    treatment=_text,
    trial=st.integers(0, 1000),
    config=st.dictionaries(_text, _json, max_size=3),
    config_hash=_text,
    verdict=st.sampled_from(["passed", "failed", "error"]),
    profile=st.none() | _text,
    duration_s=st.floats(0, 1e6),
    trajectory=st.none() | st.dictionaries(_text, _json, max_size=3),
    checks=st.lists(st.dictionaries(_text, _json, max_size=2), max_size=3).map(tuple),
    dimensions=st.lists(st.dictionaries(_text, _json, max_size=2), max_size=3).map(tuple),
    weighted_score=st.none() | st.floats(0, 1),
    hard_failures=st.lists(_text, max_size=2).map(tuple),
    noise=st.dictionaries(_text, _json, max_size=2),
    streams=st.none() | st.lists(_text, max_size=2).map(tuple),
)


@given(_records)
def test_from_dict_builds_exactly_what_the_constructor_built(rec: TrialRecord) -> None:
    # from_dict sets the slots itself (faster than the generated __init__): it must agree field for field.
    data = json.loads(json.dumps(rec.to_dict()))
    back = TrialRecord.from_dict({**data, "a_field_from_a_newer_release": 1})
    assert back == rec and hash(back.trial) == hash(rec.trial)
    assert [getattr(back, f) for f in TrialRecord.__slots__] == [getattr(rec, f) for f in TrialRecord.__slots__]
    with pytest.raises(FrozenInstanceError):
        back.task = "changed"  # type: ignore[misc]


@given(_records, st.sampled_from(["experiment_id", "case_id", "task", "treatment", "trial", "config", "verdict"]))
def test_from_dict_refuses_a_record_without_a_required_field(rec: TrialRecord, missing: str) -> None:
    data = {k: v for k, v in rec.to_dict().items() if k != missing}
    with pytest.raises(RecordError, match=f"the required field '{missing}' is missing"):
        TrialRecord.from_dict(data, "somewhere/record.json")


def test_from_dict_defaults_and_refusals_for_lists() -> None:
    data = record("a", "CONTROL", 1, "passed", 1.0).to_dict()
    for name in ("checks", "dimensions", "hard_failures", "errors"):
        assert getattr(TrialRecord.from_dict({**data, name: None}), name) == ()
        del_one = {k: v for k, v in data.items() if k != name}
        assert getattr(TrialRecord.from_dict(del_one), name) == ()
    assert TrialRecord.from_dict({**data, "streams": None}).streams is None
    assert TrialRecord.from_dict({k: v for k, v in data.items() if k != "phases"}).phases == {}
    with pytest.raises(RecordError, match="'checks' is a list, not int"):
        TrialRecord.from_dict({**data, "checks": 3})
