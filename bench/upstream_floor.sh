#!/usr/bin/env bash
# The libcurl floor under GetHistory's upstream exchange: the CPU one client spends per request for the
# page GetHistory fetches (a full page of 20 signed transactions from `serve --simulator`, over one reused
# HTTP/2 TLS connection, 40 requests/s: under the 50/s budget the simulator enforces), measured two ways,
# interleaved per round:
#   curl_page   libcurl driven as the gateway drives it (bench/peers/curl_page.c, built here with cc; its whole
#               loop measured, each wake-up from the pause between requests included): the floor under the
#               gateway's upstream exchange, whatever the gateway does around it (the gateway drives a call's
#               transfer on the call's event loop, mixed with the handler's work: bench/history_cpu.sh shows
#               the loop's share)
#   h2load      the same request from h2load (nghttp2 + OpenSSL, no libcurl), what the direct path of
#               bench/history.sh pays (perf stat task-clock; the first request, with the TLS handshake,
#               subtracted with a one-request run)
# Run alone, not by `make bench`: needs cc, libcurl's headers (libcurl4-openssl-dev) and perf.
#
#   bench/upstream_floor.sh                 # 3 rounds of 120 requests
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-120}
PORT=${PORT:-30166}
ADMIN_PORT=${ADMIN_PORT:-$(( PORT + 1 ))}
BIN=${BIN:-.build/release/appstore-gateway}
PY=${PY:-.venv/bin/python}
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cc -O2 -o "$work/curl_page" bench/peers/curl_page.c -lcurl

# The gateway serves only as the simulator's host here: its state directory holds the page, the key and the CA.
APPSTORE_GATEWAY_ADMIN="127.0.0.1:$ADMIN_PORT" "$BIN" serve --simulator --threads 1 --state-dir "$work/state" \
  --listen "127.0.0.1:$PORT" > "$work/gw.out" 2> "$work/gw.log" &
gw_pid=$!
wait_port "$PORT" 60
for _ in $(seq 1 50); do [ -s "$work/state/transactions.json" ] && break; sleep 0.1; done
txid=$("$PY" bench/history_tool.py ids "$work/state" | sed -n 1p)   # the longest history: a full page of 20
token=$("$PY" bench/history_tool.py jwt "$work/state")
sim_url="$(awk -F'"' '/productionURL/ {print $2}' "$work/state/gateway.yaml")/inApps/v2/history/$txid"
ca=$(awk -F'"' '/caFile/ {print $2}' "$work/state/gateway.yaml")

h2load_ms() {  # task-clock ms of one h2load run of $1 requests
  perf stat -x, -e task-clock h2load -n "$1" -c 1 -m 1 --rps 40 -H "authorization: $token" "$sim_url" 2>&1 \
    >/dev/null | awk -F, '/task-clock/ {print $1}'
}
c=(); h=()
for round in $(seq 1 "$ROUNDS"); do
  sleep 1.1
  read -r us bytes < <("$work/curl_page" "$sim_url" "$token" "$ca" "$REQUESTS")
  c+=("$us")
  sleep 1.1
  one=$(h2load_ms 1); sleep 1.1; many=$(h2load_ms $(( REQUESTS + 1 )))
  h+=("$(awk -v a="$one" -v b="$many" -v n="$REQUESTS" 'BEGIN { printf "%.1f\n", (b - a) * 1000 / n }')")
  printf 'round %d (page %s bytes): libcurl as the gateway drives it %s µs, h2load %s µs CPU per request\n' \
    "$round" "$bytes" "${c[-1]}" "${h[-1]}"
done
printf 'median CPU µs per page request: libcurl %s (%s–%s), h2load %s (%s–%s)\n' \
  "$(median "${c[@]}")" "$(minimum "${c[@]}")" "$(maximum "${c[@]}")" \
  "$(median "${h[@]}")" "$(minimum "${h[@]}")" "$(maximum "${h[@]}")"
