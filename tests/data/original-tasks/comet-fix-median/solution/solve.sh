#!/usr/bin/env bash
# The reference solution: the fix, a test for it, and the Comet workflow's files as a run leaves them.
set -euo pipefail
cp "$COMET_SOLUTION_DIR/stats.py" stats.py
cat >> test_stats.py <<'PY'


def test_median_even_unsorted():
    assert median([4, 1, 3, 2]) == 2.5
PY
change=openspec/changes/archive/2026-01-01-fix-median
mkdir -p "$change/.comet"
{
  echo "# Proposal: fix median()"
  echo
  echo "## Why"
  echo "median() is wrong for even-length and unsorted input."
  echo
  echo "## What changes"
  echo "- median() sorts a copy of its input"
  echo "- the even-length case averages the two middle values"
  echo
  echo "## Impact"
  echo "stats.py only; test_stats.py gains a test."
} > "$change/proposal.md"
printf '# Design\n\nConsider the tradeoff of sorting a copy against sorting in place; the alternative mutates input.\n' > "$change/design.md"
printf -- '- [x] Write a failing test\n- [x] Sort a copy\n- [x] Average the middle pair\n' > "$change/tasks.md"
printf '# Plan\n\n1. test\n2. fix\n' > "$change/plan.md"
printf '# Verification\n\nAll tests pass.\n' > "$change/verification.md"
printf 'workflow: full\nphase: archive\n' > "$change/.comet.yaml"
