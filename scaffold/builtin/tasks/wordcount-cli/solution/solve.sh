#!/usr/bin/env bash
# Reference solution for wordcount-cli: install the implemented wc.py.
set -euo pipefail

cp "$COMET_SOLUTION_DIR/wc.py" wc.py
