"""Scores the three summaries separately and writes ctrf.json plus a fractional reward.txt.

Written without pytest so the verifier needs nothing from the network; the report has the shape of
pytest-json-ctrf's (``results.tool``, ``results.summary``, ``results.tests[]`` with ``name``, ``status``,
``duration`` in ms and ``message`` for failures). The reward is passed / (passed + failed), rounded to
four places, so two of three gives 0.6667; a skipped check counts neither way, as in pytest."""

import json
import time
from pathlib import Path

OUT = Path("/root/project/out")
VERIFIER = Path("/logs/verifier")


def test_status_counts():
    counts = json.loads((OUT / "status_counts.json").read_text())
    expected = {"200": 4, "201": 1, "304": 1, "404": 1, "500": 1}
    assert counts == expected, f"status counts {counts} != {expected}"


def test_top_path():
    top = (OUT / "top_path.txt").read_text().strip()
    assert top == "/api/items", f"top path {top!r} != '/api/items'"


def test_bytes_total():
    total = (OUT / "bytes_total.txt").read_text().strip()
    assert total == "7715", f"bytes total {total!r} != '7715'"


def test_gzip_log_variant():
    raise SkipCheck("no rotated access.log.1.gz in this image")


class SkipCheck(Exception):
    pass


CHECKS = [test_status_counts, test_top_path, test_bytes_total, test_gzip_log_variant]


def run(check):
    started = time.time()
    entry = {"name": f"check_outputs.py::{check.__name__}", "status": "passed"}
    try:
        check()
    except SkipCheck as reason:
        entry.update(status="skipped", message=str(reason))
    except Exception as error:  # a missing file is a failed check, not a verifier error
        entry.update(status="failed", message=f"{type(error).__name__}: {error}")
    stopped = time.time()
    entry.update(
        duration=round((stopped - started) * 1000, 3),
        start=int(started * 1000),
        stop=int(stopped * 1000),
        rawStatus=entry["status"],
        type="unit",
        filePath="/tests/check_outputs.py",
        retries=0,
        flaky=False,
    )
    print(f"{entry['status'].upper()}: {check.__name__} {entry.get('message', '')}".rstrip())
    return entry


def main():
    started = int(time.time() * 1000)
    tests = [run(check) for check in CHECKS]
    counts = {status: sum(t["status"] == status for t in tests) for status in ("passed", "failed", "skipped")}
    report = {
        "results": {
            "tool": {"name": "pytest"},
            "summary": {
                "tests": len(tests),
                **counts,
                "pending": 0,
                "other": 0,
                "start": started,
                "stop": int(time.time() * 1000),
            },
            "tests": tests,
        }
    }
    VERIFIER.mkdir(parents=True, exist_ok=True)
    (VERIFIER / "ctrf.json").write_text(json.dumps(report, indent=2) + "\n")
    scored = counts["passed"] + counts["failed"]
    reward = round(counts["passed"] / scored, 4) if scored else 0.0
    (VERIFIER / "reward.txt").write_text(f"{reward}\n")
    print(f"reward: {reward}")


if __name__ == "__main__":
    main()
