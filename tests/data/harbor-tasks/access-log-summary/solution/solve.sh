#!/bin/bash
# Oracle: all three summaries. (Doing only the first two gives reward 0.6667: see ../README.md.)
set -euo pipefail

mkdir -p /root/project/out
python3 - <<'PY'
import collections, json, re

LINE = re.compile(r'"(?P<method>\S+) (?P<path>\S+) [^"]*" (?P<status>\d{3}) (?P<size>\d+|-)')
statuses, paths, total = collections.Counter(), collections.Counter(), 0
for line in open("/root/project/access.log"):
    match = LINE.search(line)
    if match:
        statuses[match["status"]] += 1
        paths[match["path"]] += 1
        total += 0 if match["size"] == "-" else int(match["size"])
json.dump(dict(statuses), open("/root/project/out/status_counts.json", "w"))
open("/root/project/out/top_path.txt", "w").write(paths.most_common(1)[0][0] + "\n")
open("/root/project/out/bytes_total.txt", "w").write(f"{total}\n")
PY
