#!/usr/bin/env bash
set -euo pipefail
cat > words.py <<'PY'
import re
from collections import Counter


def count_words(text):
    return dict(Counter(w.lower() for w in re.findall(r"[A-Za-z0-9']+", text)))
PY
