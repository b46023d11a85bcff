"""The benchmark scripts run, at a tiny size: their figures are for people, but a script that no longer
starts (a moved module, a changed signature) must fail here, not on the day someone measures."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.factories import REPO

RUNS = {
    "calibration": ["--tiny", "--workers", "1"],
    "reports": ["--tasks", "3", "--treatments", "2", "--trials", "2"],
    "overhead": [
        *("--trials", "2", "--rounds", "1", "--backend", "local"),
        *("--marginal-trials", "3", "--startup-rounds", "1"),
    ],
    "collection": ["--tasks", "2", "--treatments", "2", "--trials", "1", "--repeat", "1"],
    "engine": ["--steps", "5", "--rounds", "1"],
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_benchmark_runs_at_a_tiny_size(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{name}.py"), *RUNS[name]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
