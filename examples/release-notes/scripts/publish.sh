#!/bin/sh
# publish-notes: copy the approved draft ($1) to the releases folder.
set -eu
mkdir -p releases
cp "$1" "releases/$(basename "$1")"
echo "releases/$(basename "$1")"
