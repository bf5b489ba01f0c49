#!/usr/bin/env bash
# CPU time per health Check call: the gateway's user+system CPU (from /proc) over N calls, against nghttpd
# serving the same bytes, both pinned to core 0 with h2load on core 1 (bench/lib.sh). CPU per call moves far
# less with machine noise than req/s does, so it is the figure to compare builds with: give a second binary
# as BEFORE (e.g. built from an older commit in a worktree) and rounds interleave the three.
#
#   bench/cpu_per_call.sh                                   # 3 rounds of 400,000 calls
#   BEFORE=/tmp/old/.build/release/appstore-gateway ROUNDS=5 bench/cpu_per_call.sh
#   CONNECTIONS=64 STREAMS=32 bench/cpu_per_call.sh         # another shape (h2load -c/-m; default 4 × 32)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-400000}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-32}
BIN=.build/release/appstore-gateway
BEFORE=${BEFORE:-}
command -v h2load >/dev/null && command -v nghttpd >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"
reference_www "$work/www"

"${SERVER_PIN[@]}" "$BIN" serve --listen 127.0.0.1:30161 --threads 1 > "$work/gw.log" 2>&1 &
gw=$!; pids+=("$gw")
"${SERVER_PIN[@]}" nghttpd --no-tls -n 1 -d "$work/www" 30162 > /dev/null 2>&1 &
ng=$!; pids+=("$ng")
if [ -n "$BEFORE" ]; then
  "${SERVER_PIN[@]}" "$BEFORE" serve --listen 127.0.0.1:30163 --threads 1 > "$work/before.log" 2>&1 &
  old=$!; pids+=("$old")
fi
for port in 30161 30162 $( [ -n "$BEFORE" ] && echo 30163 ); do wait_port "$port" 30; done
grpc_ok http://127.0.0.1:30161/grpc.health.v1.Health/Check "$work/health.bin"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per_call() {  # pid url [h2load args…] -> CPU µs per call
  local pid=$1 url=$2; shift 2
  local before; before=$(ticks "$pid")
  on_load_core h2load -n "$CALLS" -c "$CONNECTIONS" -m "$STREAMS" -t 1 -d "$work/health.bin" "$@" "$url" > /dev/null
  awk -v a="$before" -v b="$(ticks "$pid")" -v n="$CALLS" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.3f\n", (b - a) / hz * 1e6 / n }'
}
g=(); n=(); o=()
for round in $(seq 1 "$ROUNDS"); do
  g+=("$(per_call "$gw" "http://127.0.0.1:30161/$HEALTH_PATH" "${GRPC_HEADERS[@]}")")
  n+=("$(per_call "$ng" "http://127.0.0.1:30162/$HEALTH_PATH" "${GRPC_HEADERS[@]}")")
  [ -z "$BEFORE" ] || o+=("$(per_call "$old" "http://127.0.0.1:30163/$HEALTH_PATH" "${GRPC_HEADERS[@]}")")
  printf 'round %d: gateway %s µs/call, nghttpd %s%s\n' "$round" "${g[-1]}" "${n[-1]}" \
    "$( [ -z "$BEFORE" ] || echo ", before ${o[-1]}")"
done
printf 'median CPU µs per call: gateway %s (%s–%s), nghttpd %s (%s–%s)%s\n' \
  "$(median "${g[@]}")" "$(minimum "${g[@]}")" "$(maximum "${g[@]}")" \
  "$(median "${n[@]}")" "$(minimum "${n[@]}")" "$(maximum "${n[@]}")" \
  "$( [ -z "$BEFORE" ] || echo ", before $(median "${o[@]}") ($(minimum "${o[@]}")–$(maximum "${o[@]}"))")"
