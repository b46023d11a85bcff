"""``comet report`` on Harbor jobs and Inspect logs, through the console script: the same reports,
verdicts and gates as for our own experiments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"
COMET = [sys.executable, "-m", "scaffold.cli.main"]  # the console script's entry(), as `comet` runs it


def comet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMET, *args], capture_output=True, text=True, check=False, timeout=120)


def test_harbor_jobs_with_and_without_skills(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = comet(
        "report",
        str(DATA / "harbor" / "with-skills"),
        str(DATA / "harbor" / "without"),
        "--baseline",
        "oracle",
        "--out",
        str(out),
        "--gate",
        "pass@1 of oracle.zrx7-checksum >= 0.7",
        "--html",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 trial(s) of 5 task(s) from 2 Harbor job or Inspect log input(s)" in done.stdout
    assert "oracle.zrx7-checksum vs oracle: no significant difference" in done.stdout
    assert "gate PASS: pass@1 of oracle.zrx7-checksum >= 0.7" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison_report.md",
        "gates.json",
        "report.html",
        "results.jsonl",
        "summary.md",
    ]
    summary = (out / "summary.md").read_text()
    assert "**oracle.zrx7-checksum** vs oracle: **no significant difference**" in summary
    assert "| oracle | 8 | 0 | 0 | 2 (build_failed 2) |" in summary
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 20
    assert json.loads((out / "gates.json").read_text())["passed"] is True


def test_inspect_logs_named_with_as(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    logs = DATA / "inspect-json"
    done = comet(
        "report",
        str(logs / "skill"),
        str(logs / "control"),
        "--as",
        "with-skill",
        "--as",
        "without",
        "--baseline",
        "without",
        "--out",
        str(out),
        "--gate",
        "with-skill not worse than without",
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "with-skill vs without:" in done.stdout
    summary = (out / "summary.md").read_text()
    assert "**with-skill** vs without" in summary
    assert "gate " in done.stdout


def test_imports_and_their_usage_errors(tmp_path: Path) -> None:
    job = str(DATA / "harbor" / "with-skills")
    no_out = comet("report", job)
    assert no_out.returncode == 2 and "--out DIR" in no_out.stderr
    wrong_count = comet("report", job, "--as", "A", "--as", "B", "--out", str(tmp_path))
    assert wrong_count.returncode == 2 and "2 --as for 1 such input(s)" in wrong_count.stderr
    bad_name = comet("report", job, "--as", "with skills", "--out", str(tmp_path))
    assert bad_name.returncode == 2 and "a treatment name is letters" in bad_name.stderr
