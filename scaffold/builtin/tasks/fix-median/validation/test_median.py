"""Hidden checks for fix-median: a correct, non-mutating median and an untouched test suite."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

try:
    from scaffold.python.validation.core import run_checks
except ImportError:  # the harness may copy core.py next to this script instead
    from core import run_checks  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
WORKSPACE = Path.cwd()
_counter = itertools.count()


def _stats() -> ModuleType:
    """Import the workspace's stats.py afresh under a private name."""
    path = WORKSPACE / "stats.py"
    assert path.is_file(), "stats.py is missing from the workspace"
    spec = importlib.util.spec_from_file_location(f"_hidden_stats_{next(_counter)}", path)
    assert spec is not None and spec.loader is not None, "stats.py cannot be loaded"
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise AssertionError(f"importing stats.py failed: {type(exc).__name__}: {exc}") from None
    for name in ("mean", "median", "mode", "variance"):
        assert callable(getattr(module, name, None)), f"stats.py no longer defines {name}()"
    return module


def _reference_median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _assert_median(values: object, expected: float) -> None:
    got = _stats().median(values)
    assert isinstance(got, (int, float)) and not isinstance(got, bool), (
        f"median({values!r}) returned {got!r} of type {type(got).__name__}, expected a number"
    )
    assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-12), (
        f"median({values!r}) returned {got!r}, expected {expected!r}"
    )


def check_visible_tests_unchanged() -> None:
    current = WORKSPACE / "test_stats.py"
    assert current.is_file(), "test_stats.py was deleted"
    original = (HERE / "test_stats.py.orig").read_bytes()
    assert current.read_bytes() == original, "test_stats.py was modified; it must stay unchanged"


def check_visible_tests_pass() -> None:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "test_stats"],
        cwd=WORKSPACE,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"python -m unittest test_stats failed:\n{proc.stderr[-1500:]}"


def check_odd_length() -> None:
    _assert_median([1, 3, 5], 3)
    _assert_median([1, 2, 3, 4, 5, 6, 7], 4)
    _assert_median([10, 20, 30, 40, 50], 30)


def check_even_length() -> None:
    _assert_median([1, 2, 3, 4], 2.5)
    _assert_median([1, 2, 3, 4, 5, 6], 3.5)
    _assert_median([10, 20, 30, 40], 25)
    _assert_median([1, 3], 2)


def check_unsorted() -> None:
    _assert_median([9, 1, 5], 5)
    _assert_median([3, 1, 2], 2)
    _assert_median([7, 3, 9, 1], 5)
    _assert_median([6, 5, 4, 3, 2, 1], 3.5)
    _assert_median([100, -1, 50, 2, 3], 3)


def check_negative_and_float() -> None:
    _assert_median([-5, -1, -3], -3)
    _assert_median([-4, -2, 2, 4], 0)
    _assert_median([0.5, 2.25, 1.75], 1.75)
    _assert_median([1.5, -2.5, 3.5, 0.5], 1.0)
    _assert_median([2.5, 1e-9, -7.75, 1e9, 3.0, 2.0], 2.25)


def check_small_inputs() -> None:
    _assert_median([42], 42)
    _assert_median([-3.5], -3.5)
    _assert_median([8, 2], 5)
    _assert_median([2, 3], 2.5)


def check_duplicates() -> None:
    _assert_median([5, 5, 5, 5], 5)
    _assert_median([1, 2, 2, 2, 9], 2)
    _assert_median([3, 1, 3, 1], 2)


def check_tuples() -> None:
    _assert_median((3, 1, 2), 2)
    _assert_median((4, 2, 8, 6), 5)


def check_empty_raises_value_error() -> None:
    median = _stats().median
    for empty in ([], ()):
        try:
            result = median(empty)
        except ValueError:
            continue
        except Exception as exc:
            raise AssertionError(f"median({empty!r}) raised {type(exc).__name__}, expected ValueError") from None
        raise AssertionError(f"median({empty!r}) returned {result!r}, expected ValueError")


def check_input_not_modified() -> None:
    median = _stats().median
    for values in ([9, 1, 5], [4, 3, 2, 1], [0.5, -2.0, 7.25, 3.0, 1.0]):
        before = list(values)
        median(values)
        assert values == before, f"median() modified its argument: {before!r} became {values!r}"


def check_random_inputs() -> None:
    rng = random.Random(20240611)
    for _ in range(300):
        size = rng.randint(1, 25)
        if rng.random() < 0.5:
            values = [rng.randint(-50, 50) for _ in range(size)]
        else:
            values = [round(rng.uniform(-1000, 1000), 3) for _ in range(size)]
        _assert_median(list(values), _reference_median(values))


def check_other_functions() -> None:
    stats = _stats()
    assert math.isclose(stats.mean([1, 2, 3, 4]), 2.5), "mean([1, 2, 3, 4]) should be 2.5"
    assert math.isclose(stats.mean([-1.5, 1.5, 3]), 1.0), "mean([-1.5, 1.5, 3]) should be 1.0"
    assert stats.mode([1, 2, 2, 3]) == 2, "mode([1, 2, 2, 3]) should be 2"
    assert stats.mode([4, 1, 1, 4]) == 4, "mode([4, 1, 1, 4]) should be 4 (first of the tied values)"
    assert stats.mode([7]) == 7, "mode([7]) should be 7"
    assert math.isclose(stats.variance([2, 4, 4, 4, 5, 5, 7, 9]), 4.0), "variance() changed"
    assert math.isclose(stats.variance([1.0, 1.0]), 0.0, abs_tol=1e-12), "variance([1.0, 1.0]) should be 0"
    for name in ("mean", "mode", "variance"):
        try:
            getattr(stats, name)([])
        except ValueError:
            continue
        except Exception as exc:
            raise AssertionError(f"{name}([]) raised {type(exc).__name__}, expected ValueError") from None
        raise AssertionError(f"{name}([]) did not raise ValueError")


def check_no_statistics_module() -> None:
    path = WORKSPACE / "stats.py"
    assert path.is_file(), "stats.py is missing from the workspace"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    banned = {"statistics", "numpy", "scipy", "pandas"}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in banned, f"stats.py imports {name}; fix median() itself"


CHECKS = {
    "test_stats.py is unchanged": check_visible_tests_unchanged,
    "visible test suite passes": check_visible_tests_pass,
    "median of odd-length input": check_odd_length,
    "median of even-length input": check_even_length,
    "median of unsorted input": check_unsorted,
    "median of negative and float values": check_negative_and_float,
    "median of one or two values": check_small_inputs,
    "median with duplicate values": check_duplicates,
    "median accepts tuples": check_tuples,
    "median of empty input raises ValueError": check_empty_raises_value_error,
    "median does not modify its input": check_input_not_modified,
    "median matches a reference on random inputs": check_random_inputs,
    "mean, mode and variance still correct": check_other_functions,
    "median is fixed without the statistics module": check_no_statistics_module,
}

if __name__ == "__main__":
    sys.exit(run_checks(CHECKS))
