#!/bin/bash
# Runs one Harbor-format task by hand on a Docker engine the way Harbor's runtime does, to check the
# examples before (and independently of) comet-eval's own Harbor runtime:
#   build environment/ (FROM lines rewritten in a temporary copy), start the container in its WORKDIR,
#   oracle: copy solution/ to /solution and run it as root with [solution.env]; nop: do nothing;
#   then copy tests/ to /tests, create /logs/verifier, run `bash /tests/test.sh` from WORKDIR with
#   [verifier.env], and print the reward (reward.txt first, else reward.json) and ctrf.json's summary.
#
# usage: verify_by_hand.sh TASK_DIR oracle|nop [STANDIN_IMAGE]
#   STANDIN_IMAGE replaces every FROM (default: $HARBOR_STANDIN or comet-eval/base:trixie); the
#   published Dockerfiles keep their real FROM lines.
# environment:
#   HOST_CA=path      mount this CA bundle at /etc/ssl/certs/host-ca.crt and point PIP_CERT,
#                     SSL_CERT_FILE and REQUESTS_CA_BUNDLE at it for the verifier (default: the host's
#                     /etc/ssl/certs/ca-certificates.crt when it exists; HOST_CA= to run without)
#   UV_SHIM=1         before the verifier, install uv 0.9.5 from PyPI into /root/.local/bin with the
#                     env file the astral.sh installer writes (what the runtime's offline stand-in does)
#   AFTER_SOLVE=cmd   run this shell command in the container after the oracle (e.g. undo one part of
#                     the solution to see a fractional reward)
#   NO_SKILLS=1       the CONTROL condition of a SkillsBench task: comment out the Dockerfile's
#                     `COPY skills ...` lines, leave skills/ out of the build context, and check that no
#                     SKILL.md exists anywhere in the container
#   NO_TASK_ENV=1     do not pass [solution.env] / [verifier.env] (to see that a task depends on them)
#   OUT_DIR=dir       where /logs/verifier and test.sh's output are kept (default /tmp/harbor-by-hand)
#   KEEP=1            leave the container running (its name is printed)
set -uo pipefail

task_dir=$(cd "${1:?usage: verify_by_hand.sh TASK_DIR oracle|nop [STANDIN_IMAGE]}" && pwd)
mode=${2:?usage: verify_by_hand.sh TASK_DIR oracle|nop [STANDIN_IMAGE]}
standin=${3:-${HARBOR_STANDIN:-comet-eval/base:trixie}}
host_ca=${HOST_CA-/etc/ssl/certs/ca-certificates.crt}
name=$(basename "$task_dir")
tag="harbor-by-hand/$name:manual"
container="harbor-by-hand-$name-$mode-$$"

case $mode in oracle | nop) ;; *) echo "mode must be oracle or nop" >&2; exit 2 ;; esac
if [ -f "$task_dir/environment/docker-compose.yaml" ]; then
    # Several containers on a network of their own: what `docker compose` (or the harness) runs, not this.
    echo "$name: skipped (a docker-compose environment: run it with the harness, --backend docker)"
    exit 0
fi

# [solution.env] / [verifier.env] as docker exec -e arguments (the host's python reads the TOML).
env_args() {
    [ -z "${NO_TASK_ENV:-}" ] || return 0
    python3 - "$task_dir/task.toml" "$1" <<'PY'
import sys, tomllib
section = tomllib.load(open(sys.argv[1], "rb")).get(sys.argv[2], {}).get("env", {})
for key, value in section.items():
    print(f"{key}={value}")
PY
}

context=$(mktemp -d)
trap 'rm -rf "$context"; [ -n "${KEEP:-}" ] || docker rm -f "$container" >/dev/null 2>&1' EXIT
cp -a "$task_dir/environment/." "$context/"
sed -i -E "s|^FROM[[:space:]]+[^[:space:]]+|FROM $standin|" "$context/Dockerfile"
if [ -n "${NO_SKILLS:-}" ]; then
    sed -i -E 's|^([[:space:]]*COPY[[:space:]]+skills[[:space:]])|# (CONTROL) \1|' "$context/Dockerfile"
    rm -rf "$context/skills"
fi

start=$(date +%s)
build_log=$(mktemp)
if ! docker build -q -t "$tag" "$context" > "$build_log" 2>&1; then
    cat "$build_log" >&2; rm -f "$build_log"; echo "BUILD FAILED" >&2; exit 1
fi
rm -f "$build_log"
echo "build: $(($(date +%s) - start)) s"

mounts=()
verifier_ca=()
if [ -n "$host_ca" ] && [ -f "$host_ca" ]; then
    mounts=(-v "$host_ca:/etc/ssl/certs/host-ca.crt:ro")
    verifier_ca=(-e PIP_CERT=/etc/ssl/certs/host-ca.crt -e SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt
        -e REQUESTS_CA_BUNDLE=/etc/ssl/certs/host-ca.crt)
fi
# PID 1 only keeps the container alive; what the oracle starts in the background stays up after it.
docker run -d --name "$container" "${mounts[@]}" "$tag" sleep infinity >/dev/null || exit 1
if [ -n "${NO_SKILLS:-}" ]; then
    leaked=$(docker exec "$container" find / -xdev -name SKILL.md 2>/dev/null)
    if [ -n "$leaked" ]; then echo "SKILL LEAK under CONTROL: $leaked" >&2; exit 1; fi
    echo "CONTROL: no SKILL.md in the container"
fi
workdir=$(docker inspect -f '{{.Config.WorkingDir}}' "$tag")
echo "container: $container (WORKDIR ${workdir:-/})"

if [ "$mode" = oracle ]; then
    solution_env=()
    while IFS= read -r pair; do solution_env+=(-e "$pair"); done < <(env_args solution)
    docker cp "$task_dir/solution/." "$container:/solution"
    docker exec "$container" chmod -R +x /solution
    docker exec -u root -e DEBIAN_FRONTEND=noninteractive "${solution_env[@]}" "$container" \
        bash /solution/solve.sh
    echo "solve.sh exit: $?"
    if [ -n "${AFTER_SOLVE:-}" ]; then
        docker exec "$container" sh -c "$AFTER_SOLVE"
        echo "after solve: $AFTER_SOLVE (exit $?)"
    fi
fi

if [ -n "${UV_SHIM:-}" ]; then
    docker exec "${verifier_ca[@]}" "$container" sh -c '
        pip install -q --target /tmp/uv-shim uv==0.9.5 &&
        mkdir -p "$HOME/.local/bin" && cp /tmp/uv-shim/bin/uv /tmp/uv-shim/bin/uvx "$HOME/.local/bin/" &&
        printf "%s\n" "#!/bin/sh" "case \":\${PATH}:\" in *:\"\$HOME/.local/bin\":*) ;; *) export PATH=\"\$HOME/.local/bin:\$PATH\" ;; esac" > "$HOME/.local/bin/env"
    ' && echo "uv shim installed"
fi

verifier_env=()
while IFS= read -r pair; do verifier_env+=(-e "$pair"); done < <(env_args verifier)
docker cp "$task_dir/tests/." "$container:/tests"
docker exec "$container" mkdir -p /logs/verifier
start=$(date +%s)
out="${OUT_DIR:-/tmp/harbor-by-hand}/$container"
mkdir -p "$out"
docker exec "${verifier_ca[@]}" "${verifier_env[@]}" "$container" bash /tests/test.sh > "$out/test-stdout.txt" 2>&1
echo "test.sh exit: $? ($(($(date +%s) - start)) s); last lines of $out/test-stdout.txt:"
tail -n 8 "$out/test-stdout.txt" | sed 's/^/    /'
docker cp "$container:/logs/verifier/." "$out/verifier" >/dev/null 2>&1

if docker exec "$container" test -f /logs/verifier/reward.txt; then
    echo "reward.txt: $(docker exec "$container" cat /logs/verifier/reward.txt)"
elif docker exec "$container" test -f /logs/verifier/reward.json; then
    echo "reward.json: $(docker exec "$container" cat /logs/verifier/reward.json)"
else
    echo "NO REWARD FILE"
fi
if docker exec "$container" test -f /logs/verifier/ctrf.json; then
    docker exec "$container" cat /logs/verifier/ctrf.json | python3 -c '
import json, sys
results = json.load(sys.stdin)["results"]
print("ctrf summary:", {k: results["summary"][k] for k in ("tests", "passed", "failed", "skipped")})
for test in results["tests"]:
    print("    ctrf", test["status"], test["name"])'
fi
