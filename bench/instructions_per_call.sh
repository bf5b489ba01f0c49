#!/usr/bin/env bash
# User-space instructions per health Check call, counted by valgrind's callgrind: the gateway (one loop) and
# nghttpd (one worker) serving the same bytes, each under callgrind, counted over CALLS calls after a warm-up
# (the counters are zeroed in between), all of the process's threads together. Unlike CPU time, the count does
# not move with the machine's load or its neighbours, so on shared cores it is the figure that tells two builds
# apart: give a second binary as BEFORE. Kernel work (the socket calls) is not counted; under callgrind each
# process runs far slower, so more calls arrive per socket read than at full speed (per-read costs shrink).
#
#   bench/instructions_per_call.sh                          # 64 × 32, 10,000 calls
#   BEFORE=/tmp/old/appstore-gateway CONNECTIONS=4 bench/instructions_per_call.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

CALLS=${CALLS:-10000}
CONNECTIONS=${CONNECTIONS:-64}
STREAMS=${STREAMS:-32}
PORT=${PORT:-30181}
BIN=${BIN:-.build/release/appstore-gateway}
BEFORE=${BEFORE:-}
PY=${PY:-.venv/bin/python}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
command -v h2load >/dev/null && command -v nghttpd >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() { kill "${vg:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"
reference_www "$work/www"

# NAME COMMAND… (listening on $PORT) -> prints "NAME: N instructions per call" and the split by library
count() {
  local name=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" --compress-strings=no --compress-pos=no \
    "$@" > "$work/$name.log" 2>&1 &
  vg=$!
  wait_port "$PORT" 120
  local url="http://127.0.0.1:$PORT/$HEALTH_PATH"
  h2load -n 2000 -c "$CONNECTIONS" -m "$STREAMS" -t 1 -d "$work/health.bin" "${GRPC_HEADERS[@]}" "$url" |
    grep -q '2000 succeeded' || { echo "$name does not answer" >&2; exit 1; }
  callgrind_control -z "$vg" > /dev/null 2>&1
  h2load -n "$CALLS" -c "$CONNECTIONS" -m "$STREAMS" -t 1 -d "$work/health.bin" "${GRPC_HEADERS[@]}" "$url" |
    grep -q "$CALLS succeeded" || { echo "$name failed calls" >&2; exit 1; }
  callgrind_control -d "$vg" > /dev/null 2>&1
  kill "$vg"; wait "$vg" 2>/dev/null || true; vg=
  # The dump asked for after the zeroing is part 1 (the process's exit writes the rest to the file itself).
  "$PY" bench/callgrind_split.py "$name" "$CALLS" "$work/$name.out.1"
}

# valgrind cannot read the DWARF 5 the Swift toolchain writes: the gateway runs from a copy without it.
strip -g -o "$work/gateway" "$BIN"
count gateway "$work/gateway" serve --listen "127.0.0.1:$PORT" --threads 1
if [ -n "$BEFORE" ]; then
  strip -g -o "$work/before" "$BEFORE"
  count before "$work/before" serve --listen "127.0.0.1:$PORT" --threads 1
fi
count nghttpd nghttpd --no-tls -n 1 -d "$work/www" "$PORT"
echo "$CONNECTIONS connections × $STREAMS streams, $CALLS calls counted after 2,000, one loop / one worker"
