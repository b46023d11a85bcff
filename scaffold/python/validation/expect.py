"""The checks of an inline eval.yaml task, run in its workspace after the agent (``validation/expect.json``,
written by comet eval beside a three-line ``test_expect.py`` that calls :func:`run_expect`).

``expect.json`` holds what the manifest's ``expect`` declares: ``files`` that must exist, ``contains``
(a file and the texts it must hold), ``json`` (a file, a JSON path and the value there) and ``commands``
(a shell command and its time limit in seconds, which must exit 0). Standard library only: the harness
copies this module into workspaces where comet-eval is not installed.

A command runs in a process group of its own; when it exits or times out the whole group is killed, so
a command that starts a server in the background neither outlives its check nor holds it past its limit
(its output goes to files, never to pipes a background child could keep open).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scaffold.python.validation.core import json_path_lookup, run_checks

__all__ = ["run_expect"]

_TAIL = 400


def run_expect(expect_file: str | os.PathLike[str]) -> int:
    """Run every check *expect_file* declares, write the results (``_test_results.json``); 0 when all
    passed, else 1."""
    expect = json.loads(Path(expect_file).read_text(encoding="utf-8"))
    return run_checks(_checks(expect))


def _checks(expect: dict[str, Any]) -> dict[str, Callable[[], None]]:
    out: dict[str, Callable[[], None]] = {}
    for name in expect.get("files", []):
        out[f"file {name} exists"] = _file(name)
    for name, needles in expect.get("contains", {}).items():
        for needle in needles:
            out[f"{name} contains {needle!r}"] = _contains(name, needle)
    for item in expect.get("json", []):
        label = f"{item['file']} {item['path']} equals {json.dumps(item['equals'])}"
        out[label] = _json(item["file"], item["path"], item["equals"])
    for i, item in enumerate(expect.get("commands", [])):
        out[f"command {i + 1}: {item['run']}"] = _command(item["run"], item["timeout"])
    return out


def _read(name: str) -> str:
    path = Path(name)
    assert path.is_file(), f"{name} was not found in the workspace"
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"{name} is not UTF-8 text: {exc}") from None


def _file(name: str) -> Callable[[], None]:
    def check() -> None:
        assert Path(name).is_file(), f"{name} was not found in the workspace"

    return check


def _contains(name: str, needle: str) -> Callable[[], None]:
    def check() -> None:
        assert needle in _read(name), f"{name} does not contain {needle!r}"

    return check


def _json(name: str, path: str, expected: Any) -> Callable[[], None]:
    def check() -> None:
        try:
            document = json.loads(_read(name))
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{name} is not valid JSON: {exc}") from None
        try:
            actual = json_path_lookup(document, path)
        except LookupError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        # Compared as JSON values: 1 and 1.0 are equal, true and 1 are not.
        same = actual == expected and isinstance(actual, bool) == isinstance(expected, bool)
        assert same, f"{name} {path} is {json.dumps(actual)}, expected {json.dumps(expected)}"

    return check


def _command(run: str, timeout: float) -> Callable[[], None]:
    def check() -> None:
        code, output = _run_shell(run, timeout)
        if code is None:
            raise AssertionError(f"timed out after {timeout}s")
        tail = output.strip()[-_TAIL:]
        assert code == 0, f"exited {code}" + (f": {tail}" if tail else "")

    return check


def _run_shell(command: str, timeout: float) -> tuple[int | None, str]:
    """Run *command* with ``sh -c`` in a process group of its own: its exit code (None: timed out) and what
    it printed, both streams in order. The group is killed as it ends, whichever way."""
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(
            ["sh", "-c", command], stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True
        )
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        output.seek(0)
        return code, output.read().decode("utf-8", errors="replace")
