"""Checks /app/answer.txt against what the API sidecar answers now (standard library only)."""

import json
import sys
import urllib.request
from pathlib import Path


def main():
    with urllib.request.urlopen("http://api-server:5000/items", timeout=10) as response:
        items = json.load(response)
    expected = next(item["name"] for item in items if item["id"] == 2)
    answer = Path("/app/answer.txt")
    if not answer.is_file():
        print("FAIL: /app/answer.txt does not exist")
        return 1
    got = answer.read_text().strip()
    print(("PASS" if got == expected else "FAIL") + f": answer {got!r}, expected {expected!r}")
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
