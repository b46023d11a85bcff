#!/bin/bash
set -euo pipefail

python3 - <<'PY'
import csv, json

readings = {}
with open("/app/measurements.csv", newline="") as rows:
    for row in csv.DictReader(rows):
        readings.setdefault(row["sensor"], []).append(float(row["value"]))
summary = {
    sensor: {
        "count": len(values),
        "mean": round(sum(values) / len(values), 3),
        "min": min(values),
        "max": max(values),
    }
    for sensor, values in readings.items()
}
with open("/app/summary.json", "w") as out:
    json.dump(summary, out, indent=2)
PY
