#!/usr/bin/env bash
# Where one gateway loop spends its time on the health Check path: perf samples the gateway (pinned to
# core 0) while h2load (pinned to core 1) drives it, then prints the heaviest symbols, by shared object
# and by symbol (self time), and the req/s of the run.
#
#   bench/profile.sh                 # release build, 600k requests
#   REQUESTS=300000 TOP=40 bench/profile.sh
#   CONNECTIONS=64 STREAMS=32 bench/profile.sh   # another h2load shape (default 4 × 32)
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${REQUESTS:-600000}
TOP=${TOP:-30}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-32}
PORT=${PORT:-30171}
BIN=.build/release/appstore-gateway
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"

taskset -c 0 "$BIN" serve --listen "127.0.0.1:$PORT" --threads 1 > "$work/gw.log" 2>&1 &
gw_pid=$!
sleep 1
perf record -q -F 2000 -g -p "$gw_pid" -o "$work/perf.data" > /dev/null 2>&1 &
perf_pid=$!
sleep 0.5
taskset -c 1 h2load -n "$REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" -t 1 -d "$work/health.bin" -H 'content-type: application/grpc' \
  -H 'te: trailers' "http://127.0.0.1:$PORT/grpc.health.v1.Health/Check" | grep -E '^(finished|requests):'
kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
echo "--- self time by shared object"
perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
echo "--- self time by symbol (top $TOP)"
perf report -i "$work/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' |
  sed -E 's/ +- +- *$//; s/ +$//' | cut -c1-160 | head -"$TOP"
