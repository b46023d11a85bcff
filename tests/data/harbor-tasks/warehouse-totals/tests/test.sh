#!/bin/bash
# Verifier: writes /logs/verifier/reward.json ({"accuracy": <share of warehouses right>}), no reward.txt.

if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi

mkdir -p /logs/verifier
python3 /tests/score_totals.py /opt/warehouse/totals.json \
    || echo '{"accuracy": 0}' > /logs/verifier/reward.json
