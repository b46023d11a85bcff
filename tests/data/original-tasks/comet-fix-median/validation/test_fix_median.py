"""Validation for the comet-fix-median task (the original Comet eval's layout and imports).

Checks: the comet workflow was followed (comet_checks) + median() is fixed + the tests pass.
"""

import subprocess
import sys

from comet_checks import WORKSPACE, _failed, _passed, run_comet_checks, write_results

from scaffold.python.validation.core import load_test_context


def check_median_fix() -> dict:
    probe = subprocess.run(
        [sys.executable, "-c", "import stats; print(stats.median([4, 1, 3, 2]), stats.median([3, 1, 2]))"],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(WORKSPACE),
    )
    if probe.returncode != 0:
        return _failed("median_fix", f"cannot run median(): {probe.stderr.strip()[-300:]}")
    if probe.stdout.split() != ["2.5", "2"]:
        return _failed("median_fix", f"median([4, 1, 3, 2]), median([3, 1, 2]) gave {probe.stdout.strip()!r}")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_stats.py"],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(WORKSPACE),
    )
    if tests.returncode != 0:
        return _failed("median_fix", f"tests failing: {(tests.stdout + tests.stderr)[-400:]}")
    return _passed("median_fix", "median() sorts and averages the middle pair; tests pass")


def check_context() -> dict:
    context = load_test_context()
    if context.get("task") != "comet-fix-median":
        return _failed("test_context", f"_test_context.json names task {context.get('task')!r}")
    return _passed("test_context", f"trial {context.get('trial')} of {context.get('treatment')}")


def run_all() -> list:
    results = run_comet_checks()
    results.append(check_median_fix())
    results.append(check_context())
    return results


if __name__ == "__main__":
    write_results(run_all())
