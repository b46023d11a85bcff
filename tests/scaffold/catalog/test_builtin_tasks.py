"""Every built-in task passes with the oracle agent and fails with the nop agent (as Harbor demands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.catalog.builtin import BUILTIN_TASKS_DIR, BUILTIN_TREATMENTS_DIR
from scaffold.catalog.tasks import load_catalog
from scaffold.cli.main import main
from scaffold.experiment.cases import Case
from tests.support.factories import make_runner

TASKS = BUILTIN_TASKS_DIR
TREATMENTS = BUILTIN_TREATMENTS_DIR
CATALOG = load_catalog([TASKS])
PAIRS = [(name, t) for name, task in CATALOG.tasks.items() for t in task.spec.metadata.default_treatments]


def test_every_builtin_task_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "check", str(TASKS)]) == 0, capsys.readouterr().out
    assert not CATALOG.broken
    assert len(CATALOG.tasks) >= 5
    assert {"generic-skill-smoke", "fix-median"} <= set(CATALOG.tasks)


@pytest.mark.parametrize(("task", "treatment"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_oracle_passes(task: str, treatment: str, tmp_path: Path) -> None:
    runner = make_runner([TASKS], [TREATMENTS], tmp_path, agent="oracle")
    record = runner.run(Case(task, treatment, 1)).record
    failed = [c for c in record.checks if c.status != "passed"]
    assert record.verdict == "passed", (failed, record.errors, record.hard_failures)
    assert record.weighted_score == pytest.approx(1.0)


@pytest.mark.parametrize(("task", "treatment"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_nop_fails(task: str, treatment: str, tmp_path: Path) -> None:
    runner = make_runner([TASKS], [TREATMENTS], tmp_path, agent="nop")
    record = runner.run(Case(task, treatment, 1)).record
    assert record.verdict == "failed"
    assert any(c.status == "failed" for c in record.checks)
    assert not record.errors
