"""What a task's validation script uses to report its checks.

A validation script runs with the workspace as its working directory after the agent has finished.
It reports by writing ``_test_results.json`` in one of two shapes::

    {"passed": ["name", ...], "failed": ["name", ...]}
    {"checks": [{"name": "...", "status": "passed" | "failed" | "skipped", "reason": "..."}]}

This module uses the standard library only: the harness copies it next to validation scripts in
environments where comet-eval itself is not installed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RESULTS_FILE = "_test_results.json"

__all__ = ["RESULTS_FILE", "run_checks", "write_test_results"]


def write_test_results(results: Mapping[str, Any], path: str | os.PathLike[str] = RESULTS_FILE) -> Path:
    """Write *results* as JSON to *path* (default ``_test_results.json`` in the working directory).

    The write is atomic (a temporary file of its own beside *path*, then a rename) so the harness never
    reads half a file, and two writers never share a temporary file.
    """
    target = Path(path)
    # Named by process and thread, created exclusively: unique without importing tempfile, which would
    # cost every validation script a few milliseconds of start-up.
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(dict(results), indent=2, ensure_ascii=False) + "\n")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def run_checks(
    checks: Mapping[str, Callable[[], object]],
    path: str | os.PathLike[str] = RESULTS_FILE,
) -> int:
    """Run each named check, record it as passed or failed with the reason, write the results.

    A check fails when it raises: the ``AssertionError`` message (or the exception type and message)
    becomes the reason. Returns the exit code a script should end with: 0 when every check passed.
    """
    entries: list[dict[str, str]] = []
    for name, check in checks.items():
        try:
            check()
        except AssertionError as exc:
            entries.append({"name": name, "status": "failed", "reason": str(exc) or "assertion failed"})
        except Exception as exc:  # a crash inside one check must not hide the others
            last = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" (line {last[0].lineno})" if last else ""
            entries.append({"name": name, "status": "failed", "reason": f"{type(exc).__name__}: {exc}{where}"})
        else:
            entries.append({"name": name, "status": "passed", "reason": ""})
    write_test_results({"checks": entries}, path)
    failed = [e for e in entries if e["status"] == "failed"]
    for entry in entries:
        mark = "PASS" if entry["status"] == "passed" else "FAIL"
        print(f"{mark} {entry['name']}" + (f": {entry['reason']}" if entry["reason"] else ""), file=sys.stderr)
    return 1 if failed else 0
