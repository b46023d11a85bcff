#!/usr/bin/env bash
# Reference solution for generic-skill-smoke: write the requested result.md.
set -euo pipefail

cat > result.md <<'REPORT'
# Skill Smoke Result

Wrote this short report after reading the workspace README.

## Approach

- Read README.md to learn that the workspace holds no application code.
- Wrote result.md with the exact level-1 title required by the instruction.
- Listed the concrete steps taken as separate bullet points in plain English.

## Verification

- Checked that the title is the first line and that every bullet has at least three words.
REPORT
