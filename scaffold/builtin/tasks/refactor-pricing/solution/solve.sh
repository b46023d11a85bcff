#!/usr/bin/env bash
# Reference solution for refactor-pricing: install the refactored pricing.py.
set -euo pipefail

cp "$COMET_SOLUTION_DIR/pricing.py" pricing.py
