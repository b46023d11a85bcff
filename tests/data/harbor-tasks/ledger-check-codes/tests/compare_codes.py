"""Exit 0 when the agent's codes.tsv has exactly the expected rows (trailing whitespace ignored)."""

import sys
from pathlib import Path


def rows(path):
    with Path(path).open() as handle:
        return [line.rstrip("\r\n").rstrip() for line in handle if line.strip()]


def main(actual_path, expected_path):
    try:
        actual = rows(actual_path)
    except OSError as error:
        print(f"FAIL: {error}")
        return 1
    expected = rows(expected_path)
    if actual == expected:
        print(f"PASS: {len(expected)} codes match")
        return 0
    padded = actual + [""] * max(0, len(expected) - len(actual))
    for want, got in zip(expected, padded[: len(expected)], strict=True):
        if want != got:
            print(f"FAIL: expected {want!r}, got {got!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
