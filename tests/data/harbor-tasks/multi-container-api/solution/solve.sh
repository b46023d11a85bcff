#!/bin/bash
# Oracle: ask the sidecar by its service name, on the trial's network, and write the answer.
set -euo pipefail

python3 - <<'PY'
import json
import urllib.request

with urllib.request.urlopen("http://api-server:5000/items", timeout=10) as response:
    items = json.load(response)
name = next(item["name"] for item in items if item["id"] == 2)
with open("/app/answer.txt", "w") as answer:
    answer.write(name + "\n")
print("answer:", name)
PY
