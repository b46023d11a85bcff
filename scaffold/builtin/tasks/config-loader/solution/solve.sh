#!/usr/bin/env bash
# Reference solution for config-loader: install the implemented config_loader.py.
set -euo pipefail

cp "$COMET_SOLUTION_DIR/config_loader.py" config_loader.py
