"""The original Comet eval's documented suite commands keep working in a checkout: its path
``local/tests/tasks/test_tasks.py`` and its ``--collect`` option (docs/coming-from-original.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.factories import REPO

PYTEST = str(Path(sys.executable).with_name("pytest"))

pytestmark = pytest.mark.slow


def _pytest(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    logs = tmp_path / "logs"
    command = [PYTEST, *argv, f"--logs-dir={logs}", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_the_original_path_runs_the_suite_and_local_tests_collects_it_once(tmp_path: Path) -> None:
    ran = _pytest(tmp_path, "local/tests/tasks/test_tasks.py", "--task=fix-median", "--treatment=CONTROL")
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr
    listed = _pytest(tmp_path, "local/tests", "--collect-only")
    tests = [line for line in listed.stdout.splitlines() if "::test_task[" in line]
    assert tests and all(line.startswith("local/tests/test_tasks.py::") for line in tests), listed.stdout


def test_collect_lists_the_trials_and_writes_nothing(tmp_path: Path) -> None:
    listed = _pytest(tmp_path, "local/tests/tasks/test_tasks.py", "--collect", "--task=fix-median")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "local/tests/tasks/test_tasks.py::test_task[fix-median-CONTROL-r1]" in listed.stdout
    assert "passed" not in listed.stdout and not (tmp_path / "logs").exists()
