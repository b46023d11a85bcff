#!/bin/bash
# Verifier (bash and coreutils only: ubuntu:24.04 has no Python).

if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi

mkdir -p /logs/verifier
failures=0
check() {
    if "${@:2}"; then echo "PASS: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

check "service.conf has the five settings" diff -u /tests/expected_service.conf /srv/app/config/service.conf
check "log directory exists" test -d /var/log/ledger-api
check "start.sh is executable" test -x /srv/app/bin/start.sh

if [ "$failures" -eq 0 ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
