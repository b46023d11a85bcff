"""Hidden checks for wordcount-cli: run wc.py as a subprocess and check stdout, stderr and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

try:
    from scaffold.python.validation.core import run_checks
except ImportError:  # the harness may copy core.py next to this script instead
    from core import run_checks  # type: ignore[no-redef]

WORKSPACE = Path.cwd()
SCRIPT = WORKSPACE / "wc.py"
FIELDS = ("lines", "words", "chars")
FILES: dict[str, bytes] = {
    "a.txt": b"hello world\nthis is a test\n",
    "b.txt": b"  multiple   spaces\tand\ttabs  \n\n\nlast line without newline",
    "utf8.txt": "héllo wörld\r\nnaïve café ☕\n".encode(),
    "empty.txt": b"",
    "bad.bin": b"ab\xffc d\n",
    "my notes.txt": b"one two three\n",
}
DATA_DIR: Path  # the scratch directory the CLI runs in; created when the script runs


def _setup() -> None:
    for name, data in FILES.items():
        (DATA_DIR / name).write_bytes(data)
    (DATA_DIR / "subdir").mkdir(exist_ok=True)


def _counts(data: bytes) -> dict[str, int]:
    text = data.decode("utf-8", errors="replace")
    return {"lines": text.count("\n"), "words": len(text.split()), "chars": len(text)}


def _line(counts: dict[str, int], name: str, fields: tuple[str, ...] = FIELDS) -> str:
    return " ".join(str(counts[f]) for f in fields) + " " + name


def _sum(names: list[str], stdin: bytes = b"") -> dict[str, int]:
    total = dict.fromkeys(FIELDS, 0)
    for name in names:
        data = stdin if name == "-" else FILES.get(name)
        if data is None:
            continue
        for field, value in _counts(data).items():
            total[field] += value
    return total


class Result:
    def __init__(self, args: list[str], proc: subprocess.CompletedProcess[bytes]) -> None:
        self.command = "python wc.py " + " ".join(args)
        self.code = proc.returncode
        self.out = proc.stdout.decode("utf-8", errors="replace")
        self.err = proc.stderr.decode("utf-8", errors="replace")

    def describe(self) -> str:
        return f"`{self.command}` exited {self.code}; stdout={self.out!r}; stderr={self.err[-600:]!r}"


def _run(*args: str, stdin: bytes = b"") -> Result:
    assert SCRIPT.is_file(), "wc.py is missing from the workspace"
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            # -S (no site-packages) only saves start-up time: wc.py must use the standard library only.
            [sys.executable, "-S", str(SCRIPT), *args],
            input=stdin,
            capture_output=True,
            cwd=DATA_DIR,
            env=env,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`python wc.py {' '.join(args)}` did not finish within 20 s") from None
    return Result(list(args), proc)


def _expect_text(result: Result, lines: list[str], code: int = 0, clean_stderr: bool = True) -> None:
    assert result.code == code, f"expected exit status {code}: {result.describe()}"
    expected = "".join(line + "\n" for line in lines)
    assert result.out.replace("\r\n", "\n") == expected, f"expected stdout {expected!r}: {result.describe()}"
    if clean_stderr:
        assert result.err == "", f"expected nothing on stderr: {result.describe()}"


def _json(result: Result) -> Any:
    try:
        return json.loads(result.out)
    except ValueError as exc:
        raise AssertionError(f"stdout is not a single JSON document ({exc}): {result.describe()}") from None


def _doc(names: list[str], fields: tuple[str, ...] = FIELDS, stdin: bytes = b"") -> dict[str, Any]:
    files = []
    for name in names:
        data = stdin if name == "-" else FILES.get(name)
        if data is not None:
            counts = _counts(data)
            files.append({"name": name, **{f: counts[f] for f in fields}})
    total = _sum(names, stdin)
    return {"files": files, "total": {f: total[f] for f in fields}}


def check_single_file() -> None:
    _expect_text(_run("a.txt"), ["2 6 27 a.txt"])


def check_selected_counts() -> None:
    counts = _counts(FILES["a.txt"])
    for args, fields in [
        (["--lines"], ("lines",)),
        (["-w"], ("words",)),
        (["--chars", "--lines"], ("lines", "chars")),
        (["-c", "--words"], ("words", "chars")),
        (["-w", "-l", "-c"], FIELDS),
        (["-cl"], ("lines", "chars")),
    ]:
        _expect_text(_run(*args, "a.txt"), [_line(counts, "a.txt", fields)])


def check_several_files_total() -> None:
    names = ["a.txt", "b.txt", "utf8.txt"]
    expected = [_line(_counts(FILES[n]), n) for n in names] + [_line(_sum(names), "total")]
    _expect_text(_run(*names), expected)
    names = ["empty.txt", "a.txt"]
    fields = ("lines", "words")
    expected = [_line(_counts(FILES[n]), n, fields) for n in names] + [_line(_sum(names), "total", fields)]
    _expect_text(_run("-w", *names, "-l"), expected)


def check_stdin() -> None:
    data = b"one two\nthree\n  four  "
    _expect_text(_run(stdin=data), [_line(_counts(data), "-")])
    _expect_text(_run("-"), ["0 0 0 -"])
    _expect_text(_run("--words", stdin=data), ["4 -"])


def check_dash_among_files() -> None:
    data = "stdin line ü\n".encode()
    names = ["a.txt", "-", "empty.txt"]
    expected = [
        _line(_counts(FILES["a.txt"]), "a.txt"),
        _line(_counts(data), "-"),
        _line(_counts(b""), "empty.txt"),
        _line(_sum(names, data), "total"),
    ]
    _expect_text(_run(*names, stdin=data), expected)


def check_chars_not_bytes() -> None:
    counts = _counts(FILES["utf8.txt"])
    assert counts["chars"] == 26, "internal: unexpected reference count"
    _expect_text(_run("-c", "utf8.txt"), ["26 utf8.txt"])
    _expect_text(_run("--chars", stdin=b"a\r\nb\r\n"), ["6 -"])
    _expect_text(_run("bad.bin"), ["1 2 7 bad.bin"])


def check_line_counting() -> None:
    _expect_text(_run("-l", "b.txt"), ["3 b.txt"])
    _expect_text(_run("empty.txt"), ["0 0 0 empty.txt"])
    _expect_text(_run(stdin=b"no newline"), ["0 2 10 -"])


def check_word_splitting() -> None:
    _expect_text(_run("-w", "b.txt"), ["8 b.txt"])
    _expect_text(_run("-w", stdin=b"\t a\tb  c \n\n d\x0be\x0cf\r\n \t"), ["6 -"])


def check_names_with_spaces() -> None:
    _expect_text(_run("my notes.txt"), ["1 3 14 my notes.txt"])


def check_json_single() -> None:
    result = _run("--json", "a.txt")
    assert result.code == 0 and result.err == "", f"expected exit 0 and empty stderr: {result.describe()}"
    doc = _json(result)
    expected = {
        "files": [{"name": "a.txt", "lines": 2, "words": 6, "chars": 27}],
        "total": {"lines": 2, "words": 6, "chars": 27},
    }
    assert doc == expected, f"expected {expected}, got {doc}"


def check_json_several_and_selected() -> None:
    names = ["a.txt", "utf8.txt", "my notes.txt"]
    result = _run("--json", *names)
    assert result.code == 0, f"expected exit 0: {result.describe()}"
    assert _json(result) == _doc(names), f"expected {_doc(names)}, got {_json(result)}"
    result = _run("-c", "--json", "-l", *names)
    expected = _doc(names, ("lines", "chars"))
    assert _json(result) == expected, f"expected {expected}, got {_json(result)}"
    doc = _json(result)
    for value in [doc["files"][0]["chars"], doc["total"]["lines"]]:
        assert type(value) is int, f"counts must be JSON integers, got {value!r}"


def check_json_stdin() -> None:
    data = b"alpha beta\ngamma\n"
    doc = _json(_run("--json", stdin=data))
    assert doc == _doc(["-"], stdin=data), f"expected {_doc(['-'], stdin=data)}, got {doc}"
    doc = _json(_run("--json", "-", "a.txt", stdin=data))
    assert doc == _doc(["-", "a.txt"], stdin=data), f"expected {_doc(['-', 'a.txt'], stdin=data)}, got {doc}"


def check_missing_file() -> None:
    names = ["a.txt", "missing.txt", "b.txt"]
    result = _run(*names)
    expected = [
        _line(_counts(FILES["a.txt"]), "a.txt"),
        _line(_counts(FILES["b.txt"]), "b.txt"),
        _line(_sum(names), "total"),
    ]
    _expect_text(result, expected, code=1, clean_stderr=False)
    assert "missing.txt" in result.err, f"stderr must name the missing file: {result.describe()}"
    assert "Traceback" not in result.err, f"a missing file must not crash wc.py: {result.describe()}"
    result = _run("nope.txt")
    _expect_text(result, [], code=1, clean_stderr=False)
    assert "nope.txt" in result.err, f"stderr must name the missing file: {result.describe()}"


def check_missing_file_json() -> None:
    result = _run("--json", "ghost.txt", "a.txt")
    assert result.code == 1, f"expected exit status 1: {result.describe()}"
    assert "ghost.txt" in result.err, f"stderr must name the missing file: {result.describe()}"
    expected = _doc(["ghost.txt", "a.txt"])
    assert _json(result) == expected, f"expected {expected}, got {_json(result)}"
    result = _run("--json", "-l", "ghost.txt")
    assert result.code == 1, f"expected exit status 1: {result.describe()}"
    assert _json(result) == {"files": [], "total": {"lines": 0}}, f"got {_json(result)}"


def check_directory_operand() -> None:
    result = _run("subdir", "a.txt")
    expected = [_line(_counts(FILES["a.txt"]), "a.txt"), _line(_counts(FILES["a.txt"]), "total")]
    _expect_text(result, expected, code=1, clean_stderr=False)
    assert "subdir" in result.err, f"stderr must name the unreadable operand: {result.describe()}"
    assert "Traceback" not in result.err, f"a directory operand must not crash wc.py: {result.describe()}"


def check_bad_options() -> None:
    for args in (["--bogus", "a.txt"], ["--lines=3"]):
        result = _run(*args)
        assert result.code == 2, f"expected exit status 2 for a bad option: {result.describe()}"
        assert "usage" in result.err.lower(), f"expected the usage on stderr: {result.describe()}"
        assert result.out == "", f"expected nothing on stdout: {result.describe()}"
    result = _run("--help")
    assert result.code == 0 and "usage" in result.out.lower(), f"--help must print usage: {result.describe()}"


CHECKS = {
    "counts one file": check_single_file,
    "--lines/--words/--chars select counts in a fixed order": check_selected_counts,
    "several files end with a total line": check_several_files_total,
    "reads standard input without FILE or with -": check_stdin,
    "- reads standard input among files": check_dash_among_files,
    "chars counts decoded characters, not bytes": check_chars_not_bytes,
    "lines counts newline characters": check_line_counting,
    "words split on any whitespace": check_word_splitting,
    "file names with spaces are printed as given": check_names_with_spaces,
    "--json for one file": check_json_single,
    "--json for several files and selected counts": check_json_several_and_selected,
    "--json reading standard input": check_json_stdin,
    "missing file: stderr, others still counted, exit 1": check_missing_file,
    "missing file with --json": check_missing_file_json,
    "unreadable directory operand is reported": check_directory_operand,
    "bad options exit with status 2": check_bad_options,
}


def _in_parallel(checks: dict[str, Callable[[], None]]) -> dict[str, Callable[[], None]]:
    """Run the checks (independent, subprocess-bound) on a few threads; return replays of their outcomes."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(check) for name, check in checks.items()}

    def replay(future: Future[None]) -> Callable[[], None]:
        return future.result

    return {name: replay(future) for name, future in futures.items()}


if __name__ == "__main__":
    import shutil

    DATA_DIR = Path(tempfile.mkdtemp(prefix="wc-check-"))
    try:
        _setup()
        status = run_checks(_in_parallel(CHECKS))
    finally:
        shutil.rmtree(DATA_DIR, ignore_errors=True)
    sys.exit(status)
