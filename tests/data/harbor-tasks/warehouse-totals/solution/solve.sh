#!/bin/bash
set -euo pipefail

python3 - <<'PY'
import csv, json
from collections import defaultdict

totals = defaultdict(float)
with open("/opt/warehouse/inventory.csv", newline="") as rows:
    for row in csv.DictReader(rows):
        totals[row["warehouse"]] += int(row["quantity"]) * float(row["unit_price"])
with open("/opt/warehouse/totals.json", "w") as out:
    json.dump({name: round(value, 2) for name, value in totals.items()}, out, indent=2)
PY
