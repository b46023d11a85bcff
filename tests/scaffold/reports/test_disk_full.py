"""A full disk while reports are written: the message says which file was not written, on which disk,
what is kept, and how to write the reports again, never a traceback (``comet report``, and a pytest
session's end).

The disk is a real one that fills: a tmpfs of a few pages, mounted in a user and mount namespace of the
test's own (``unshare``), so no privilege and no other process sees it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scaffold.reports.test_report_cli import shards
from tests.support.factories import TaskFactory


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(
    not _namespaces_work(), reason="needs unshare with unprivileged user and mount namespaces (util-linux)"
)


def on_full_disk(folder: Path, size: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run *argv* with a tmpfs of *size* mounted on *folder* (made here), seen by that process only."""
    folder.mkdir(parents=True, exist_ok=True)
    script = 'mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"'
    wrapped = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", size, str(folder)]
    return subprocess.run([*wrapped, *argv], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_comet_report_on_a_full_disk_names_the_file_the_disk_and_what_is_kept(tmp_path: Path) -> None:
    one, two = shards(tmp_path)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "scaffold.cli.main", "report", str(one), str(two), "--out", str(out)]
    run = on_full_disk(out, "8k", argv, tmp_path)  # room for the summary, not for every report
    assert run.returncode == 7, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    message = run.stderr
    assert "comet report: no space left to write " + str(out) in message
    assert f"the disk holding {out} is full" in message
    assert f"Kept: every trial record in {one}, {two}" in message
    assert "Free space on that disk and run the command again" in message
    assert "written before the disk filled: " + str(out / "summary.md") in message
    # Nothing half written: the temporary files are gone with the failed writes.
    assert all(record.is_file() for record in [*one.rglob("record.json"), *two.rglob("record.json")])


FILL = """
from pathlib import Path

def pytest_sessionfinish(session):
    # The disk of the experiment folder fills up while the trials run (another process's logs, say).
    if hasattr(session.config, "workerinput"):
        return
    with (Path("logs/experiments/full") / "filler").open("ab", buffering=0) as filler:
        try:
            while True:
                filler.write(b"x" * 65536)
        except OSError:
            pass
"""


def test_a_session_whose_reports_meet_a_full_disk_says_so_and_keeps_its_records(
    suite: TaskFactory, pytester: pytest.Pytester
) -> None:
    suite.task("quick", solve="echo done > out.txt\n")
    pytester.makeconftest(FILL)
    logs = pytester.path / "logs"
    experiment = logs / "experiments" / "full"
    argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider"]
    argv += [f"--logs-dir={logs}", "--experiment-id=full", "--count=2"]
    run = on_full_disk(experiment, "4m", argv, pytester.path)
    out = run.stdout + run.stderr
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert run.returncode == 1, out[-3000:]
    assert "passed" in out and "trials: " in out, out[-3000:]  # (a trial may error in the namespace)
    assert f"reports not written: no space left to write {experiment}" in out, out[-3000:]
    assert f"Kept: every trial record in {experiment}" in out
    assert f"then run: comet report {experiment}" in out


def test_a_session_on_a_full_disk_stops_before_any_trial_with_the_disk_named(
    suite: TaskFactory, pytester: pytest.Pytester
) -> None:
    suite.task("quick", solve="echo done > out.txt\n")
    logs = pytester.path / "logs"
    experiment = logs / "experiments" / "full"
    script = 'mount -t tmpfs -o size=8k tmpfs "$1" && head -c 8192 /dev/zero > "$1/filler"; shift && exec "$@"'
    pytest_argv = [sys.executable, "-m", "pytest", "local/tests", "-q", "-p", "no:cacheprovider"]
    pytest_argv += [f"--logs-dir={logs}", "--experiment-id=full"]
    experiment.mkdir(parents=True)
    wrapped = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", str(experiment)]
    run = subprocess.run(
        [*wrapped, *pytest_argv], cwd=pytester.path, capture_output=True, text=True, timeout=300, check=False
    )
    out = run.stdout + run.stderr
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert f"no space left to write {experiment}" in out and f"the disk holding {experiment} is full" in out
