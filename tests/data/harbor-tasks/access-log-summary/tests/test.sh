#!/bin/bash
# Verifier: one check per summary. check_outputs.py writes /logs/verifier/ctrf.json (the shape
# pytest-json-ctrf writes, without needing pytest) and the reward: passed / (passed + failed).

if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi

mkdir -p /logs/verifier
python3 /tests/check_outputs.py || echo 0 > /logs/verifier/reward.txt
