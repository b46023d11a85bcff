#!/usr/bin/env bash
# The reference solution: the version the simulated user gives is 2.4.0.
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

path = Path("CHANGELOG.md")
title, rest = path.read_text(encoding="utf-8").split("\n", 1)
entry = "## 2.4.0\n- Add --json output to the report command\n"
# rest begins with the blank line that now separates the new section from the older ones.
path.write_text(f"{title}\n\n{entry}{rest}", encoding="utf-8")
PY
