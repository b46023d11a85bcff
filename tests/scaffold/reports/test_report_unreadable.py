"""Damaged record files never crash reporting: each record is either reported or listed as unreadable.

The records are real: written by the runner (the oracle agent, local backend) for two tasks under two
treatments, with trajectories, checks, dimensions and noise verdicts. Hypothesis then damages one file the
ways found in the field (a value of another type, NaN, Infinity, huge numbers, a field removed or added, the
file cut short) and ``comet report`` must still write every report, exit 0 (nothing unreadable) or 5
(something listed), and account for every record file exactly once.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scaffold.cli.main import main
from scaffold.errors import ExitStatus
from scaffold.experiment.cases import Case
from tests.support.factories import TaskFactory, make_runner

Step = str | int


class Files(dict[str, bytes]):
    """{path relative to the experiment: bytes}; shown by name only when hypothesis prints an example."""

    def __repr__(self) -> str:
        return f"<{len(self)} record files>"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Files:
    """Record files written by the real runner."""
    root = tmp_path_factory.mktemp("records")
    factory = TaskFactory(root / "suite")
    factory.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    skill = factory.skill("helper")
    factory.treatments("skills.yaml", {"SKILL": {"description": "one skill", "skills": [str(skill)]}})
    for name in ("a", "b"):
        factory.task(name, metadata={"default_treatments": ["CONTROL", "SKILL"]})
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], root, agent="oracle", experiment_id="e")
    for treatment in ("CONTROL", "SKILL"):
        for task in ("a", "b"):
            for trial in (1, 2):
                runner.run(Case(task, treatment, trial))
    experiment = root / "logs" / "experiments" / "e"
    files = Files(
        (p.relative_to(experiment).as_posix(), p.read_bytes()) for p in sorted(experiment.rglob("record.json"))
    )
    assert len(files) == 8
    return files


def _paths(value: Any, prefix: tuple[Step, ...] = ()) -> Iterator[tuple[Step, ...]]:
    """Every place in a JSON document, parents before children."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


def _at(doc: Any, path: tuple[Step, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _other_type(original: Any) -> st.SearchStrategy[Any]:
    """A value of another JSON type than *original* (a string for a number, a number for a string, ...)."""
    kinds: list[st.SearchStrategy[Any]] = [
        st.text(max_size=5),
        st.integers(-5, 5),
        st.floats(-10, 10, allow_nan=False),
        st.booleans(),
        st.none(),
        st.lists(st.integers(0, 3), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
    ]
    same = (str, int, float, bool, type(None), list, dict)
    return st.one_of(
        [k for k, t in zip(kinds, same, strict=True) if not isinstance(original, t) or (t is int and original is True)]
    )


# Numbers that break naive code: NaN and the infinities (as Python's json module writes them), integers
# beyond 64 bits, floats at the edge of the range and past it (1e999 reads as Infinity).
_BAD_NUMBERS = st.sampled_from([math.nan, math.inf, -math.inf, 2**64, -(2**70), 10**40, 1.7e308, "1e999"])


@st.composite
def damage(draw: st.DrawFn, files: Files) -> tuple[str, bytes]:
    """One record file (by name) and the damaged bytes to put in it."""
    name = draw(st.sampled_from(sorted(files)))
    text = files[name].decode()
    doc = json.loads(text)
    places = list(_paths(doc))
    kind = draw(st.sampled_from(["type", "number", "missing", "extra", "truncated"]))
    if kind == "truncated":
        return name, files[name][: draw(st.integers(0, len(files[name]) - 1))]
    numbers = [p for p in places if isinstance(_at(doc, p), int | float) and not isinstance(_at(doc, p), bool)]
    # Bad numbers go where numbers are (where they do harm); the rest anywhere.
    path = draw(st.sampled_from(numbers if kind == "number" else places[1:] if kind != "extra" else places))
    raw = None
    if kind == "type":
        new: Any = draw(_other_type(_at(doc, path)))
    elif kind == "number":
        new = draw(_BAD_NUMBERS)
        if new == "1e999":
            new, raw = "__RAW__", "1e999"
    elif kind == "missing":
        parent = _at(doc, path[:-1])
        del parent[path[-1]]
        return name, json.dumps(doc).encode()
    else:
        target = _at(doc, path)
        if not isinstance(target, dict):
            target = doc
        target[draw(st.text(min_size=1, max_size=6).filter(lambda k: k not in target))] = draw(
            st.integers() | st.text(max_size=4) | st.none()
        )
        return name, json.dumps(doc).encode()
    parent = _at(doc, path[:-1])
    parent[path[-1]] = new
    data = json.dumps(doc)  # allow_nan: NaN and Infinity written as the json module writes them
    return name, (data.replace('"__RAW__"', raw) if raw else data).encode()


@pytest.mark.slow  # 120 reports written: 7 s alone, more on a busy machine
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_a_damaged_record_is_reported_or_listed_never_a_crash(
    data: st.DataObject, pristine: Files, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _write(pristine, tmp_path)
    name, damaged = data.draw(damage(pristine))
    (experiment / name).write_bytes(damaged)

    # --allow-mixed: a damaged record may also claim another model or agent; that refusal is item 3's test.
    code = main(["report", str(experiment), "--html", "--allow-mixed"])  # an exception escaping fails here
    err = capsys.readouterr().err
    assert code in (0, ExitStatus.UNREADABLE), err
    rows = [json.loads(line) for line in (experiment / "results.jsonl").read_text().splitlines()]
    used = [r["record"] for r in rows if not r.get("unreadable")]
    listed = [r["record"] for r in rows if r.get("unreadable")]
    # Every record file exactly once: reported, or listed as unreadable.
    assert sorted(used + listed) == sorted(pristine)
    assert (code == ExitStatus.UNREADABLE) == bool(listed) and listed in ([], [name])
    summary = (experiment / "summary.md").read_text()
    assert ("## Unreadable records" in summary) == bool(listed)
    if listed:
        assert f"- {name}: " in summary and f"unreadable: {name}: " in err
        assert name in (experiment / "report.html").read_text()


def _write(pristine: Files, root: Path) -> Path:
    experiment = root / "e"
    shutil.rmtree(experiment, ignore_errors=True)
    for name, content in pristine.items():
        (experiment / name).parent.mkdir(parents=True, exist_ok=True)
        (experiment / name).write_bytes(content)
    return experiment


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"weighted_score": "0.5"}, "$.weighted_score"),  # once a traceback, no report, rc 1
        ({"duration_s": "3"}, "$.duration_s"),
        ({"trial": "1"}, "$.trial"),
        ({"verdict": 42}, "$.verdict"),  # once accepted silently and miscounted
        ({"trial": 2**70}, "$.trial"),  # crashed writing results.jsonl (beyond 64 bits)
        ({"duration_s": math.nan}, "$.duration_s"),  # made every mean duration NaN
        ({"weighted_score": 1e300}, "$.weighted_score"),  # poisoned every mean score
    ],
)
def test_the_damage_issue_11_found_is_listed_with_its_field(
    pristine: Files, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str
) -> None:
    experiment = _write(pristine, tmp_path)
    name = "trials/a-SKILL-r1/record.json"
    (experiment / name).write_text(json.dumps({**json.loads(pristine[name]), **change}))
    assert main(["report", str(experiment)]) == ExitStatus.UNREADABLE
    captured = capsys.readouterr()
    assert "7 trial(s) of 2 task(s)" in captured.out
    assert f"unreadable: {name}: field {field}: " in captured.err
    assert f"- {name}: field `{field}`: " in (experiment / "summary.md").read_text()
    assert f"- {name}: field `{field}`: " in (experiment / "comparison_report.md").read_text()
