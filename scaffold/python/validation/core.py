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
import re
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RESULTS_FILE = "_test_results.json"
CONTEXT_FILE = "_test_context.json"
"""Written by the harness into the workspace before the validation scripts run: the task, treatment,
trial, run id and the task's outputs (read it with :func:`load_test_context`)."""

__all__ = [
    "CONTEXT_FILE",
    "RESULTS_FILE",
    "json_path_lookup",
    "json_path_steps",
    "load_test_context",
    "run_checks",
    "write_test_results",
]


def load_test_context(path: str | os.PathLike[str] = CONTEXT_FILE) -> dict[str, Any]:
    """The trial's context: ``{"task", "treatment", "trial", "run_id", "outputs": {...}}``.

    *path* defaults to ``_test_context.json`` in the working directory (the workspace). A missing file
    is a ``FileNotFoundError`` saying who writes it; a file that is not a JSON object, a ``ValueError``.
    """
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{target}: no test context here; the harness writes {CONTEXT_FILE} into the workspace before "
            "validation scripts run (run this script through a trial, from the workspace folder, or pass "
            "the file's path)"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{target}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{target}: expected a JSON object, got {type(data).__name__}")
    return data


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


# The JSON path dialect of eval.yaml's ``expect.json``: a small subset of JSONPath, written here (standard
# library only) because it must run inside any task container, where no JSONPath library is installed,
# and because one implementation serves both the manifest's validation and the checks. Wildcards,
# filters, slices and recursive descent are left out on purpose: an expect names ONE value to compare.
#     $                 the whole document
#     .name             a member (letters, digits, _ and -, not starting with a digit or -)
#     ['any key']       a member by any name (single or double quotes; the quote itself cannot appear)
#     [3]  [-1]         an array element (negative counts from the end)
_JSON_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z_][A-Za-z0-9_-]*)|\[(?P<index>-?[0-9]+)\]|\['(?P<sq>[^']*)'\]|\["(?P<dq>[^"]*)"\]"""
)


def json_path_steps(path: str) -> list[str | int]:
    """The steps of *path* (member names and indexes); ValueError saying what is allowed if it is not one."""
    if not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} must start with '$'")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        m = _JSON_STEP.match(path, at)
        if m is None:
            raise ValueError(
                f"JSON path {path!r} is not understood at {path[at:]!r}; "
                "allowed steps: .name, ['any key'], [index] (e.g. $.items[0].title)"
            )
        if m["index"] is not None:
            steps.append(int(m["index"]))
        else:
            steps.append(next(g for g in (m["name"], m["sq"], m["dq"]) if g is not None))
        at = m.end()
    return steps


def json_path_lookup(document: Any, path: str) -> Any:
    """The value at *path* in *document*; LookupError naming the step that finds nothing."""
    value = document
    walked = "$"
    for step in json_path_steps(path):
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                size = f"an array of {len(value)}" if isinstance(value, list) else type(value).__name__
                raise LookupError(f"{walked}[{step}] does not exist ({walked} is {size})")
            value = value[step]
            walked += f"[{step}]"
        else:
            if not isinstance(value, dict) or step not in value:
                raise LookupError(f"{walked} has no member {step!r}")
            value = value[step]
            walked += f".{step}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", step) else f"[{step!r}]"
    return value
