"""Scores totals.json per warehouse into /logs/verifier/reward.json (one key, like Harbor's reward dicts).

Reads EXPECTED_TOTALS and TOLERANCE from [verifier.env]."""

import json
import os
import sys
from pathlib import Path

REWARD = Path("/logs/verifier/reward.json")


def write(accuracy):
    REWARD.write_text(json.dumps({"accuracy": accuracy}))
    print(f"accuracy: {accuracy}")


def main(actual_path):
    expected_path, tolerance = os.environ.get("EXPECTED_TOTALS"), os.environ.get("TOLERANCE")
    if not expected_path or not tolerance:
        print("FAIL: EXPECTED_TOTALS / TOLERANCE not set: [verifier.env] was not applied")
        write(0.0)
        return
    expected = json.loads(Path(expected_path).read_text())
    try:
        actual = json.loads(Path(actual_path).read_text())
    except (OSError, ValueError) as error:
        print(f"FAIL: {error}")
        write(0.0)
        return
    right = 0
    for name, value in expected.items():
        got = actual.get(name) if isinstance(actual, dict) else None
        ok = isinstance(got, (int, float)) and abs(got - value) <= float(tolerance)
        right += ok
        print(f"{'PASS' if ok else 'FAIL'}: {name} expected {value}, got {got}")
    write(round(right / len(expected), 4))


if __name__ == "__main__":
    main(sys.argv[1])
