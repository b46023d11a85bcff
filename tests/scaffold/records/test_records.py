"""Trial records on disk: the typed record, its JSON form, reading (fast, and upgrading older shapes),
writing, and summary.md's tables of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.errors import RecordError, SelectionError
from scaffold.experiment import Experiment, new_experiment_id
from scaffold.records import (
    SCHEMA_VERSION,
    AgentInfo,
    ChangeCounts,
    NoiseVerdict,
    TrialError,
    TrialRecord,
    WorkspaceInfo,
)
from scaffold.records.files import read_record, record_field, upgrade, write_record
from scaffold.reports.analysis import build_analysis
from scaffold.reports.summary import render_summary
from scaffold.rubrics import Dimension
from scaffold.trajectory import ApiFailure, TokenUsage, ToolCall, Trajectory
from scaffold.validation.results import ValidationCheck
from tests.support import records as support


def record(task: str, treatment: str, trial: int, verdict: str, score: float | None, **extra: Any) -> TrialRecord:
    dims = extra.pop(
        "dimensions",
        (
            {"name": "completion", "weight": 2.0, "score": score, "reason": ""},
            {"name": "skill_invocation", "weight": 1.0, "score": None, "reason": "N/A"},
        ),
    )
    duration = extra.pop("duration_s", 1.0)
    return support.rec(
        task, treatment, trial, verdict, score=score, experiment="e", dimensions=dims, duration_s=duration, **extra
    )


def test_atomic_write_and_round_trip(tmp_path: Path) -> None:
    rec = record("a", "CONTROL", 1, "passed", 1.0, hard_failures=("x",), errors=({"type": "T", "message": "m"},))
    path = tmp_path / "deep" / "record.json"
    write_record(path, rec)
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no temporary file left
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert path.stat().st_mode & 0o777 == 0o644  # readable by the tools that read results
    assert read_record(path) == rec
    assert read_record(path).errors == (TrialError("T", "m"),)


def test_unknown_schema_and_garbage_are_refused(tmp_path: Path) -> None:
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**record("a", "C", 1, "passed", 1.0).to_dict(), "schema_version": 99}))
    with pytest.raises(RecordError, match="schema_version 99 is not supported"):
        read_record(future)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{half")
    with pytest.raises(RecordError, match="cannot be read as a trial record"):
        read_record(garbage)


def test_experiment_ids() -> None:
    assert new_experiment_id() != new_experiment_id()
    with pytest.raises(SelectionError, match="--experiment-id"):
        Experiment.under(Path("/tmp"), "../escape")


def test_summary_tables_count_errors_as_unscored() -> None:
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
        record("b", "SKILL", 1, "passed", 0.9),
    ]
    text = render_summary(build_analysis(recs, problems=["bad.json: unreadable"]), "e")
    assert "| CONTROL | 2 | 1 | 1 | 0 | 50% | 0.750 | 3.00 |" in text
    assert "| SKILL | 2 | 1 | 0 | 1 | 100% | 0.900 | 1.00 |" in text
    assert "| a | 1/2, 0.75, 3.0s | 0/0 (+1 err), N/A, 1.0s |" in text
    assert "| b | — | 1/1, 0.90, 1.0s |" in text
    assert "| a-CONTROL-r2 | 0.500 | Required skill not invoked: s; c1 |" in text
    assert "| a-SKILL-r1 | WorkspaceError: disk \\| full |" in text
    assert "- bad.json: unreadable" in text
    # Dimension means: N/A dimensions are left out, and an unscored one is N/A, not zero.
    assert "| CONTROL | 0.75 | N/A |" in text


def test_records_written_by_the_json_module_with_nan_read_it_as_unknown(tmp_path: Path) -> None:
    # msgspec, like orjson, refuses NaN and Infinity, which json.dump writes by default: the reader falls
    # back to the json module. NaN was that writer's "unknown" score or cost, so it is read as None there.
    data = record("a", "CONTROL", 1, "failed", 0.5, trajectory={"agent": "x"}).to_dict()
    path = tmp_path / "record.json"
    nan = float("nan")
    dimension = {**data["dimensions"][0], "score": nan}
    trajectory = {**data["trajectory"], "cost_usd": nan}
    path.write_text(json.dumps({**data, "weighted_score": nan, "dimensions": [dimension], "trajectory": trajectory}))
    back = read_record(path)
    assert back.weighted_score is None and back.dimensions[0].score is None
    assert back.trajectory is not None and back.trajectory.cost_usd is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"duration_s": float("inf")}, "$.duration_s"),  # Infinity is never a measurement
        ({"duration_s": float("nan")}, "$.duration_s"),  # NaN only where a record may say "unknown"
        ({"duration_s": -1.0}, "$.duration_s"),
        ({"phases": {"agent_s": float("-inf")}}, "$.phases[...]"),  # msgspec names no key of a map
        ({"trial": 2**70}, "$.trial"),  # beyond 64 bits: orjson could not write it to results.jsonl
        ({"weighted_score": 1e300}, "$.weighted_score"),  # a weighted score lies in [0, 1]
        ({"weighted_score": float("inf")}, "$.weighted_score"),
        ({"trajectory": {"agent": "x", "tokens": {"input": 2**64}}}, "$.trajectory.tokens.input"),
        ({"trajectory": {"agent": "x", "cost_usd": -0.5}}, "$.trajectory.cost_usd"),
        ({"dimensions": [{"name": "d", "weight": 1.0, "score": 7.0, "reason": ""}]}, "$.dimensions[0].score"),
        ({"dimensions": [{"name": "d", "weight": float("inf"), "score": 1.0, "reason": ""}]}, "$.dimensions[0].weight"),
        ({"verdict": 42}, "$.verdict"),
    ],
)
def test_values_out_of_bounds_are_refused_naming_the_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    path = tmp_path / "record.json"
    path.write_text(json.dumps({**record("a", "CONTROL", 1, "failed", 0.5).to_dict(), **change}))
    with pytest.raises(RecordError) as caught:
        read_record(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and record_field(message) == field, message


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


def test_a_value_of_the_wrong_type_is_a_record_error_naming_file_and_field(tmp_path: Path) -> None:
    data = record("a", "CONTROL", 1, "passed", 1.0, trajectory={"agent": "x", "tokens": {"input": 1}}).to_dict()
    cases = [
        ({**data, "duration_s": "slow"}, r"\$\.duration_s"),
        ({**data, "trajectory": {**data["trajectory"], "tokens": {"input": "many"}}}, r"\$\.trajectory\.tokens\.input"),
        ({**data, "checks": [{"name": "c", "status": "maybe", "source": "s"}]}, r"\$\.checks\[0\]\.status"),
        ({**data, "checks": 3}, r"\$\.checks"),
        ({**data, "weighted_score": True}, r"\$\.weighted_score"),
    ]
    for bad, field in cases:
        path = tmp_path / "record.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(RecordError, match=field) as caught:
            read_record(path)
        assert str(path) in str(caught.value)


def test_streams_round_trip_and_older_records_list_their_folder(tmp_path: Path) -> None:
    rec = record("a", "CONTROL", 1, "passed", 1.0, streams=("agent.turn-1.jsonl", "agent.turn-1.stderr.log"))
    path = tmp_path / "trial" / "record.json"
    write_record(path, rec)
    assert read_record(path).streams == ("agent.turn-1.jsonl", "agent.turn-1.stderr.log")
    older = {k: v for k, v in rec.to_dict().items() if k != "streams"}
    (path.parent / "agent.turn-1.jsonl").write_text("{}\n")
    (path.parent / "notes.txt").write_text("")
    path.write_text(json.dumps(older))
    assert read_record(path).streams == ("agent.turn-1.jsonl",)  # the folder, listed when read
    assert upgrade(older).streams == ()  # no folder known: none
    assert upgrade({**older, "streams": None}, folder=path.parent).streams == ("agent.turn-1.jsonl",)


def test_older_shapes_null_lists_and_missing_parts_read_as_their_defaults() -> None:
    data = record("a", "CONTROL", 1, "passed", 1.0).to_dict()
    for name in ("checks", "dimensions", "hard_failures", "errors"):
        assert getattr(upgrade({**data, name: None}), name) == ()
        assert getattr(upgrade({k: v for k, v in data.items() if k != name}), name) == ()
    assert upgrade({k: v for k, v in data.items() if k != "phases"}).phases == {}
    # An empty noise verdict (written before classification existed) is classified as the runner would.
    assert upgrade({**data, "noise": {}}).noise == NoiseVerdict(
        "flagged", "partial_observability", "structured", {"missing": "trajectory"}
    )
    with pytest.raises(RecordError, match=r"\$\.checks"):
        upgrade({**data, "checks": 3})


# --- any record: the JSON form, the fast reader and the upgrade agree -------------------------------------

_text = st.text(max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_floats = st.floats(0, 1e6)
_trajectories = st.builds(
    Trajectory,
    agent=_text,
    turns=st.none() | st.integers(0, 100),
    tool_calls=st.lists(st.builds(ToolCall, _text, st.dictionaries(_text, _json, max_size=2)), max_size=2).map(tuple),
    commands=st.lists(_text, max_size=2).map(tuple),
    tokens=st.none() | st.builds(TokenUsage, *[st.integers(0, 10**9)] * 4),
    cost_usd=st.none() | _floats,
    failures=st.lists(
        st.builds(ApiFailure, _text, st.none() | st.integers(400, 599), _text, _text, st.booleans()), max_size=2
    ).map(tuple),
    interaction_log=st.lists(st.dictionaries(_text, _json, max_size=2), max_size=2).map(tuple),
    duration_s=_floats,
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
    duration_s=_floats,
    phases=st.dictionaries(_text, _floats, max_size=2),
    agent=st.builds(AgentInfo, st.none() | _text, st.none() | _text, st.none() | _text),
    trajectory=st.none() | _trajectories,
    checks=st.lists(
        st.builds(ValidationCheck, _text, st.sampled_from(["passed", "failed", "skipped"]), _text, _text), max_size=3
    ).map(tuple),
    expected_artifacts=st.dictionaries(_text, st.lists(_text, max_size=2).map(tuple), max_size=2),
    dimensions=st.lists(
        st.builds(Dimension, _text, _floats, st.none() | st.floats(0, 1), _text, st.none() | st.just("judge")),
        max_size=3,
    ).map(tuple),
    weighted_score=st.none() | st.floats(0, 1),
    hard_failures=st.lists(_text, max_size=2).map(tuple),
    errors=st.lists(st.builds(TrialError, _text, _text), max_size=2).map(tuple),
    workspace=st.builds(WorkspaceInfo, _text, st.booleans(), st.none() | _text),
    changes=st.none() | st.builds(ChangeCounts, *[st.integers(0, 10**6)] * 3),
    noise=st.builds(
        NoiseVerdict,
        st.sampled_from(["included", "flagged", "excluded"]),
        _text,
        st.sampled_from(["structured", "text"]),
        st.dictionaries(_text, _json, max_size=2),
    ),
    streams=st.lists(_text, max_size=2).map(tuple),
)


@given(_records)
def test_the_file_reads_back_as_exactly_the_record(rec: TrialRecord) -> None:
    data = json.loads(json.dumps(rec.to_dict()))
    assert data["trajectory"] is None or data["trajectory"]["tool_call_count"] == len(data["trajectory"]["tool_calls"])
    fast = msgspec.json.decode(json.dumps({**data, "a_field_from_a_newer_release": 1}), type=TrialRecord)
    assert fast == rec
    assert upgrade({**data, "a_field_from_a_newer_release": 1}) == rec  # the slow way agrees
    assert json.loads(json.dumps(fast.to_dict())) == data  # and the JSON form is stable
    with pytest.raises(AttributeError):
        fast.task = "changed"  # type: ignore[misc]


@given(_records, st.sampled_from(["experiment_id", "case_id", "task", "treatment", "trial", "config", "verdict"]))
def test_a_record_without_a_required_field_is_refused_naming_it(rec: TrialRecord, missing: str) -> None:
    data = {k: v for k, v in rec.to_dict().items() if k != missing}
    with pytest.raises(RecordError, match=f"somewhere/record.json: .*missing required field `{missing}`"):
        upgrade(data, source="somewhere/record.json")


def test_write_record_leaves_no_temporary_file_behind_when_it_fails(tmp_path: Path) -> None:
    folder = tmp_path / "trial"
    folder.mkdir()
    target = folder / "record.json"
    target.mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(OSError):
        write_record(target, record("a", "CONTROL", 1, "passed", 1.0))
    assert sorted(p.name for p in folder.iterdir()) == ["record.json"]


def test_records_written_before_skills_attempted_read_with_it_empty(tmp_path: Path) -> None:
    # Records from before skills_attempted existed have no such key in their trajectory.
    old = support.rec("t", "S", 1, trajectory={"agent": "claude-code", "skills_invoked": ["s"]}).to_dict()
    del old["trajectory"]["skills_attempted"]
    path = tmp_path / "record.json"
    path.write_text(json.dumps(old))
    back = read_record(path)
    assert back.trajectory is not None
    assert (back.trajectory.skills_invoked, back.trajectory.skills_attempted) == (("s",), ())
    assert upgrade(old).trajectory == back.trajectory
