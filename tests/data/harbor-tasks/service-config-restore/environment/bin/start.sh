#!/bin/sh
exec echo "ledger-api would start with $(cat /srv/app/config/service.conf | wc -l) settings"
