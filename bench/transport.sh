#!/usr/bin/env bash
# Transport benchmark: h2load against the gateway's gRPC health Check and against nghttpd serving a small
# static file, in the same run with the same load flags; prints both rates and their ratio.
#
#   bench/transport.sh            # release build, 3 interleaved rounds, >= 5 s per measurement
#   ROUNDS=5 REQUESTS=2000000 THREADS=1 bench/transport.sh
#   CLIENTS=64 STREAMS=32 bench/transport.sh   # another shape (fleet shapes: 64 × 32, 256 × 8); make bench runs both
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-$( [ "${QUICK:-0}" = 1 ] && echo 300000 || echo 1200000 )}  # >= 5 s at the rates seen on 2 cores
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
THREADS=${THREADS:-1}             # gateway event loops (0 = one per core); 1 is pinned like for like (lib.sh)
NGHTTPD_WORKERS=${NGHTTPD_WORKERS:-$( [ "$THREADS" = 0 ] && nproc || echo "$THREADS" )}
GW_PORT=${GW_PORT:-30151}
NG_PORT=${NG_PORT:-30152}
BIN=.build/release/appstore-gateway

command -v h2load >/dev/null && command -v nghttpd >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" "${ng_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# A gRPC request body: the 5-byte prefix and an empty HealthCheckRequest (service "").
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"
# nghttpd serves the same 5 bytes back as a static file (POST with the same body, same flags).
reference_www "$work/www"

pin=("${SERVER_PIN[@]}"); [ "$THREADS" = 1 ] || pin=()
"${pin[@]}" "$BIN" serve --listen "127.0.0.1:$GW_PORT" --threads "$THREADS" > "$work/gw.log" 2>&1 &
gw_pid=$!
"${pin[@]}" nghttpd --no-tls -n "$NGHTTPD_WORKERS" -d "$work/www" "$NG_PORT" > /dev/null 2>&1 &
ng_pid=$!
wait_port "$GW_PORT" 30; wait_port "$NG_PORT" 30
grpc_ok "http://127.0.0.1:$GW_PORT/grpc.health.v1.Health/Check" "$work/health.bin"

rate() {  # url [extra h2load args…] -> req/s
  local url=$1; shift
  on_load_core h2load -n "$REQUESTS" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/health.bin" "$@" "$url" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4} /^requests:/ { if ($8+0 != '"$REQUESTS"') print "FAILED" > "/dev/stderr" }'
}

gw_rates=(); ng_rates=()
for round in $(seq 1 "$ROUNDS"); do
  g=$(rate "http://127.0.0.1:$GW_PORT/$HEALTH_PATH" "${GRPC_HEADERS[@]}")
  n=$(rate "http://127.0.0.1:$NG_PORT/$HEALTH_PATH" "${GRPC_HEADERS[@]}")
  gw_rates+=("$g"); ng_rates+=("$n")
  printf 'round %d: gateway %s req/s, nghttpd %s req/s\n' "$round" "$g" "$n"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
g=$(median "${gw_rates[@]}"); n=$(median "${ng_rates[@]}")
awk -v g="$g" -v n="$n" 'BEGIN { printf "median: gateway %.0f req/s, nghttpd %.0f req/s, ratio %.2f (goal >= 0.80)\n", g, n, g / n }'
printf 'flags: h2load -n %s -c %s -m %s -t 1; gateway threads=%s; nghttpd workers=%s; %s cores\n' \
  "$REQUESTS" "$CLIENTS" "$STREAMS" "$THREADS" "$NGHTTPD_WORKERS" "$(nproc)"
emit "transport_${CLIENTS}x${STREAMS}" "$(printf '{"gateway":%s,"nghttpd":%s,"vs_nghttpd":%s,"connections":%s,"streams":%s}' \
  "$(stat_json "${gw_rates[@]}")" "$(stat_json "${ng_rates[@]}")" \
  "$(stat_json $(ratios "${gw_rates[*]}" "${ng_rates[*]}"))" "$CLIENTS" "$STREAMS")"
