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


def run(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(RUNS))
def test_benchmark_runs_at_a_tiny_size(name: str) -> None:
    done = run(name, *RUNS[name])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


@pytest.mark.docker
@pytest.mark.slow
def test_the_corpora_benchmark_runs_on_two_example_tasks(docker_base_image: str) -> None:
    # One task under CONTROL, one under its own skills (TASK_SKILLS): both of corpora.py's runs per agent.
    # Both name python:3.13-slim-bookworm, which the docker backend builds on the bookworm stand-in by default
    # (docker_base_image): corpora.py passes no alias.
    done = run("corpora", "--task", "kv-http-server,ledger-check-codes", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("harbor-tasks: oracle 2/2, nop 0/2, errors 0, "), done.stdout[-4000:]
