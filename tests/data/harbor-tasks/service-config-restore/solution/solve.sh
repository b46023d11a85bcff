#!/bin/bash
# Oracle: reads its template from /solution (Harbor uploads solution/ there) and the channel from
# [solution.env].
set -euo pipefail

: "${RELEASE_CHANNEL:?RELEASE_CHANNEL is not set: the runtime did not pass [solution.env]}"

mkdir -p /srv/app/config /var/log/ledger-api
sed "s/@RELEASE_CHANNEL@/$RELEASE_CHANNEL/" /solution/service.conf.in > /srv/app/config/service.conf
chmod +x /srv/app/bin/start.sh
