#!/usr/bin/env bash
# Reference solution for fix-median: install the corrected stats.py.
set -euo pipefail

cp "$COMET_SOLUTION_DIR/stats.py" stats.py
