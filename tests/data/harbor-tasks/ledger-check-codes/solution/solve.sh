#!/bin/bash
# Oracle: uses the task's skill, as SkillsBench oracles do (3d-scan-calc imports its skill's script).
# Under CONTROL the skills are not in the image, so this import fails and the oracle scores 0: that is
# expected, not a broken task.
set -euo pipefail

SKILL_DIR=/root/.claude/skills/zrx7-checksum
python3 - "$SKILL_DIR/scripts" <<'PY'
import sys

sys.path.insert(0, sys.argv[1])
from zrx7 import check_code

with open("/root/ledger/records.txt") as records, open("/root/ledger/codes.tsv", "w") as out:
    for line in records:
        if line.strip():
            out.write(f"{line.strip()}\t{check_code(line)}\n")
PY
