"""The plugin's use of the garbage collector (pytest_comet.gcpolicy), seen from inside real sessions."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.factories import TaskFactory

# Each trial's test writes what the collector's state is while it runs.
PROBE = """
import gc, json
from pathlib import Path
from pytest_comet import Trial

def test_task(comet_trial: Trial) -> None:
    comet_trial.assert_passed()
    with open(Path(__file__).parent / "probe.jsonl", "a") as fh:
        fh.write(json.dumps({"frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}) + "\\n")
"""


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    """A failing check must not leave this process frozen for the tests after it."""
    yield
    gc.unfreeze()


def probes(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / "probe.jsonl").read_text().splitlines()]


@pytest.fixture
def probed(suite: TaskFactory, pytester: pytest.Pytester) -> Path:
    suite.treatments("common.yaml", {"CONTROL": {"description": "baseline", "skills": []}})
    suite.task("alpha", metadata={"default_treatments": ["CONTROL"]})
    tests = pytester.path / "local" / "tests"
    (tests / "test_tasks.py").write_text(PROBE)
    return tests


def test_trials_run_with_the_collection_frozen_and_a_nested_session_gives_it_back(
    pytester: pytest.Pytester, probed: Path
) -> None:
    assert gc.get_freeze_count() == 0
    enabled = gc.isenabled()
    result = pytester.runpytest_inprocess(f"--workspace-root={pytester.path / 'ws'}", "--count=2", "-q")
    result.assert_outcomes(passed=2)
    seen = probes(probed)
    assert len(seen) == 2
    # The modules, catalogs and items are out of the full passes; the collector still runs for the rest.
    assert all(p["enabled"] is True and isinstance(p["frozen"], int) and p["frozen"] > 1000 for p in seen)
    # This process goes on after the nested session: nothing of it stays frozen, the collector is as it was.
    assert gc.get_freeze_count() == 0
    assert gc.isenabled() == enabled


def test_xdist_workers_freeze_their_own_collection(pytester: pytest.Pytester, probed: Path) -> None:
    result = pytester.runpytest_subprocess("-n", "2", f"--workspace-root={pytester.path / 'ws'}", "--count=2", "-q")
    result.assert_outcomes(passed=2)
    seen = probes(probed)
    assert len(seen) == 2 and all(isinstance(p["frozen"], int) and p["frozen"] > 1000 for p in seen)


def test_other_sessions_are_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="import gc\n\ndef test_one():\n    assert gc.get_freeze_count() == 0 and gc.isenabled()\n"
    )
    pytester.runpytest_inprocess("-q").assert_outcomes(passed=1)


def test_collect_only_freezes_the_collection_until_its_end(pytester: pytest.Pytester, probed: Path) -> None:
    # pytest's end-of-session collector passes run in its clean-ups, before the plugin's (last in, first
    # out): this conftest's clean-up, registered after the plugin's, sees what those passes see.
    pytester.makeconftest(
        "import gc\nfrom pathlib import Path\n\n"
        "def pytest_configure(config):\n"
        "    config.add_cleanup(lambda: Path('frozen.txt').write_text(str(gc.get_freeze_count())))\n"
    )
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert int((pytester.path / "frozen.txt").read_text()) > 1000
    assert gc.get_freeze_count() == 0  # given back once the session ended
