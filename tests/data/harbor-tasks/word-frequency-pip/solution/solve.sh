#!/bin/bash
set -euo pipefail

cat > /app/wordfreq.py <<'PY'
import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    counts = Counter(word.lower() for word in WORD.findall(text))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
PY
