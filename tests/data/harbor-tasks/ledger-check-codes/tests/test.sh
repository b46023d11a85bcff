#!/bin/bash
# Verifier: compares /root/ledger/codes.tsv with the expected codes. It carries its own expected values
# (it does not import the skill), so it scores CONTROL runs too.

if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi

mkdir -p /logs/verifier
if python3 /tests/compare_codes.py /root/ledger/codes.tsv /tests/expected_codes.tsv; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
