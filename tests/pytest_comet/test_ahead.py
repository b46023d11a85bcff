"""Two trials in flight per pytest process (pytest_comet.ahead), in real sessions: which trials overlap,
that each runs once, when none is started ahead, and how many worker processes ``-n`` gets."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_comet.ahead import WORKERS_PER_CORE, plan
from tests.support.factories import TaskFactory

SLOW = "sleep 0.4; echo done > out.txt\n"
"""Long enough that two trials in flight overlap by far more than the clock's resolution."""


def records(root: Path) -> list[dict[str, object]]:
    """The trial records of the only experiment under *root* (the full records: results.jsonl has no worker)."""
    (experiment,) = (root / "experiments").iterdir()
    return [json.loads(p.read_text()) for p in sorted(experiment.glob("trials/*/record.json"))]


def most_at_once(rows: list[dict[str, object]]) -> int:
    """The largest number of trials whose [started_at, finished_at] intervals overlap."""
    events = []
    for row in rows:
        events += [
            (datetime.fromisoformat(str(row["started_at"])), 1),
            (datetime.fromisoformat(str(row["finished_at"])), -1),
        ]
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


@pytest.fixture
def slow_suite(suite: TaskFactory) -> TaskFactory:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("alpha", solve=SLOW, metadata={"default_treatments": ["CONTROL"]})
    suite.task("beta", solve=SLOW, metadata={"default_treatments": ["CONTROL"]})
    return suite


def options(pytester: pytest.Pytester, *more: str) -> list[str]:
    return [f"--workspace-root={pytester.path / 'ws'}", f"--logs-dir={pytester.path / 'logs'}", "-q", *more]


# --- the plan: how many processes hold -n trials -------------------------------------------------------


def test_plan_keeps_one_process_per_trial_up_to_two_per_core() -> None:
    assert plan(4, 2, "auto") == plan(4, 2, "1")
    assert (plan(4, 2, "auto").workers, plan(4, 2, "auto").doubled) == (4, 0)
    assert (plan(8, 2, "auto").workers, plan(8, 2, "auto").doubled) == (4, 4)
    assert (plan(16, 2, "auto").workers, plan(16, 2, "auto").doubled) == (8, 8)
    assert (plan(5, 2, "auto").workers, plan(5, 2, "auto").doubled) == (4, 1)
    assert (plan(10, 4, "auto").workers, plan(10, 4, "auto").doubled) == (8, 2)
    assert (plan(40, 2, "auto").workers, plan(40, 2, "auto").doubled) == (20, 20)
    assert (plan(16, 2, "1").workers, plan(16, 2, "1").doubled) == (16, 0)
    assert (plan(3, 2, "2").workers, plan(3, 2, "2").doubled) == (3, 3)  # explicit: every worker holds two
    assert [plan(10, 4, "auto").in_flight(f"gw{i}") for i in range(8)] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert plan(16, 2, "auto").describe().startswith("-n 16: 16 trials at once in 8 worker processes, 8 of")
    assert (
        plan(3, 2, "2").describe()
        == "-n 3: 6 trials at once in 3 worker processes, 3 of them with two in flight (--in-flight 2)"
    )


@given(asked=st.integers(1, 2000), cores=st.integers(1, 256))
def test_auto_plan_holds_exactly_the_trials_asked(asked: int, cores: int) -> None:
    p = plan(asked, cores, "auto")
    slots = sum(p.in_flight(f"gw{i}") for i in range(p.workers))
    assert slots == asked
    assert p.workers <= asked and 0 <= p.doubled <= p.workers
    assert p.workers == asked or p.workers >= WORKERS_PER_CORE * cores  # never fewer than the cap


# --- one process, two in flight ---------------------------------------------------------------------------


def test_two_in_flight_overlap_and_each_trial_runs_once(pytester: pytest.Pytester, slow_suite: TaskFactory) -> None:
    result = pytester.runpytest_inprocess(*options(pytester, "--in-flight=2", "--count=3"))
    result.assert_outcomes(passed=6)
    rows = records(pytester.path / "logs")
    assert sorted(str(r["case_id"]) for r in rows) == sorted(
        f"{t}-CONTROL-r{i}" for t in ("alpha", "beta") for i in (1, 2, 3)
    )
    assert all(r["verdict"] == "passed" for r in rows)
    assert most_at_once(rows) == 2


def test_one_in_flight_by_default_without_xdist(pytester: pytest.Pytester, slow_suite: TaskFactory) -> None:
    pytester.runpytest_inprocess(*options(pytester, "--count=2")).assert_outcomes(passed=4)
    assert most_at_once(records(pytester.path / "logs")) == 1


def test_a_user_fixture_keeps_its_trial_from_starting_ahead(pytester: pytest.Pytester, slow_suite: TaskFactory) -> None:
    """A fixture of the user's is set up before its item's trial, and could change what the trial sees."""
    (pytester.path / "local" / "tests" / "test_tasks.py").write_text(
        "import pytest\nfrom pytest_comet import Trial\n\n"
        "@pytest.fixture\ndef prepared():\n    return 1\n\n"
        "def test_task(prepared: int, comet_trial: Trial) -> None:\n    comet_trial.assert_passed()\n"
    )
    pytester.runpytest_inprocess(*options(pytester, "--in-flight=2", "--count=2")).assert_outcomes(passed=4)
    assert most_at_once(records(pytester.path / "logs")) == 1


@pytest.mark.parametrize("stop", [["-x"], ["--max-trials=10"]], ids=["exitfirst", "max-trials"])
def test_nothing_starts_ahead_where_the_session_may_stop_early(
    pytester: pytest.Pytester, slow_suite: TaskFactory, stop: list[str]
) -> None:
    pytester.runpytest_inprocess(*options(pytester, "--in-flight=2", "--count=2", *stop)).assert_outcomes(passed=4)
    assert most_at_once(records(pytester.path / "logs")) == 1


def test_a_failing_trial_ahead_is_reported_on_its_own_item(pytester: pytest.Pytester, suite: TaskFactory) -> None:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("alpha", solve=SLOW, metadata={"default_treatments": ["CONTROL"]})
    suite.task("beta", solve="sleep 0.4; echo wrong > out.txt\n", metadata={"default_treatments": ["CONTROL"]})
    result = pytester.runpytest_inprocess(*options(pytester, "--in-flight=2", "-rx"))
    result.assert_outcomes(passed=1, xfailed=1)  # the baseline is observed, not tested (no --gate)
    result.stdout.fnmatch_lines(["XFAIL *test_task?beta-CONTROL-r1*"])


# --- under xdist: the processes -n gets ---------------------------------------------------------------

ONE_CORE = (
    "import os, sys, pytest; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)
"""pytest on one core, its workers too (affinity is inherited): the plan's cap is then 2 workers."""


def on_one_core(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.run(sys.executable, "-c", ONE_CORE, *args, "-p", "no:cacheprovider")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity to pin pytest to one core")
def test_auto_runs_half_the_workers_above_two_per_core(pytester: pytest.Pytester, slow_suite: TaskFactory) -> None:
    result = on_one_core(pytester, *options(pytester, "-n", "6", "--count=3", "--agent=oracle", "-v"))  # -v: the header
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*comet: -n 6: 6 trials at once in 3 worker processes, 3 of them with two*"])
    rows = records(pytester.path / "logs")
    assert len(rows) == 6 and len({r["case_id"] for r in rows}) == 6
    assert {r["worker"] for r in rows} <= {"gw0", "gw1", "gw2"}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity to pin pytest to one core")
def test_auto_leaves_a_session_without_comet_options_alone(pytester: pytest.Pytester) -> None:
    """Another project's ``pytest -n 6`` (the plugin is installed for every session) keeps its 6 workers."""
    pytester.makepyfile(
        test_plain="import os\n\ndef test_count():\n    assert os.environ['PYTEST_XDIST_WORKER_COUNT'] == '6'\n"
    )
    result = on_one_core(pytester, "-n", "6", "-q")
    assert result.ret == 0, result.stdout.str()


def test_in_flight_two_is_refused_with_an_engine_pool(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-n", "2", "--backend=docker", "--docker-host=unix:///nonexistent.sock", "--in-flight=2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--in-flight 2: an engine pool runs one trial per engine slot*"])
