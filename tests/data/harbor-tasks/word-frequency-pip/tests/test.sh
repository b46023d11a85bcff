#!/bin/bash
# Verifier: installs pytest from PyPI (HTTPS) and runs the tests. Needs network at verify time; behind a
# TLS-intercepting proxy pip also needs the host's CA bundle (PIP_CERT).

if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi

mkdir -p /logs/verifier

if ! pip install --no-cache-dir --disable-pip-version-check pytest==8.4.1; then
    echo "pip install pytest==8.4.1 failed (no network to PyPI, or no CA bundle for it)"
fi

if python3 -m pytest /tests/test_outputs.py -rA; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
