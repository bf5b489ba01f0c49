#!/usr/bin/env bash
# Transport against the peers: h2load with the same flags (-c 4 -m 32, one h2load thread) against the gateway's
# gRPC health Check, nghttpd serving a static file (the ceiling: HTTP/2 with no gRPC work), a grpc-swift-2 server
# on grpc-swift-nio-transport (bench/peers/grpc-swift) and a grpcio server (bench/peers/grpcio_server.py), each
# answering the same health-Check call; rounds interleave the four so machine noise hits them alike.
# Like for like: one gateway loop against one nghttpd worker, every server on core 0 and h2load on core 1
# (bench/lib.sh); THREADS=0 gives every server all cores (the scaling figure, bench/scale.sh, keeps it apart).
#
#   bench/transport-peers.sh                  # 3 rounds, >= 5 s per measurement
#   QUICK=1 bench/transport-peers.sh          # 3 rounds of 2 s
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-$( [ "$QUICK" = 1 ] && echo 2 || echo 5 )}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
THREADS=${THREADS:-1}       # gateway event loops (0 = one per core); nghttpd gets as many workers
WORKERS=$( [ "$THREADS" = 0 ] && nproc || echo "$THREADS" )
GW_PORT=${GW_PORT:-30155}; NG_PORT=${NG_PORT:-30156}; GS_PORT=${GS_PORT:-30157}; PY_PORT=${PY_PORT:-30158}
BIN=.build/release/appstore-gateway
PEER=bench/peers/grpc-swift/.build/release/grpc-swift-peer
PY=${PY:-.venv/bin/python}

command -v h2load >/dev/null && command -v nghttpd >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null
# The grpc-swift-2 peer is a package of its own (first build: several minutes).
[ -x "$PEER" ] || swift build -c release --package-path bench/peers/grpc-swift >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

printf '\x00\x00\x00\x00\x00' > "$work/health.bin"     # gRPC frame: empty HealthCheckRequest (service "")
reference_www "$work/www"   # the same answer, as a file at the same path

pin=("${SERVER_PIN[@]}"); [ "$THREADS" = 1 ] || pin=()
"${pin[@]}" "$BIN" serve --listen "127.0.0.1:$GW_PORT" --threads "$THREADS" > "$work/gw.log" 2>&1 & pids+=($!)
"${pin[@]}" nghttpd --no-tls -n "$WORKERS" -d "$work/www" "$NG_PORT" > /dev/null 2>&1 & pids+=($!)
"${pin[@]}" "$PEER" "$GS_PORT" > "$work/gs.log" 2>&1 & pids+=($!)
"${pin[@]}" "$PY" bench/peers/grpcio_server.py "$PY_PORT" > "$work/py.log" 2>&1 & pids+=($!)
for port in "$GW_PORT" "$NG_PORT" "$GS_PORT" "$PY_PORT"; do wait_port "$port" 30; done
for port in "$GW_PORT" "$GS_PORT" "$PY_PORT"; do grpc_ok "http://127.0.0.1:$port/grpc.health.v1.Health/Check" "$work/health.bin"; done

rate() {  # url [extra h2load args…] -> req/s; failures go to stderr
  local url=$1; shift
  on_load_core h2load -D "$SECONDS_PER_RUN" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/health.bin" "$@" "$url" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4}
         /^requests:/ { if ($10+0 > 0 || $12+0 > 0) print "h2load saw failures: " $0 > "/dev/stderr" }'
}
path=$HEALTH_PATH

gw=(); ng=(); gs=(); py=()
for round in $(seq 1 "$ROUNDS"); do
  g=$(rate "http://127.0.0.1:$GW_PORT/$path" "${GRPC_HEADERS[@]}")
  n=$(rate "http://127.0.0.1:$NG_PORT/$path" "${GRPC_HEADERS[@]}")
  s=$(rate "http://127.0.0.1:$GS_PORT/$path" "${GRPC_HEADERS[@]}")
  p=$(rate "http://127.0.0.1:$PY_PORT/$path" "${GRPC_HEADERS[@]}")
  gw+=("$g"); ng+=("$n"); gs+=("$s"); py+=("$p")
  printf 'round %d: gateway %s, nghttpd %s, grpc-swift-2 %s, grpcio %s req/s\n' "$round" "$g" "$n" "$s" "$p"
done

emit transport_peers "$(printf '{"gateway":%s,"nghttpd":%s,"grpc_swift":%s,"grpcio":%s,"vs_nghttpd":%s,"vs_grpc_swift":%s,"vs_grpcio":%s,"flags":"h2load -D %s -c %s -m %s -t 1; gateway threads=%s, nghttpd workers=%s; servers on core %s, h2load on core %s"}' \
  "$(stat_json "${gw[@]}")" "$(stat_json "${ng[@]}")" "$(stat_json "${gs[@]}")" "$(stat_json "${py[@]}")" \
  "$(stat_json $(ratios "${gw[*]}" "${ng[*]}"))" "$(stat_json $(ratios "${gw[*]}" "${gs[*]}"))" \
  "$(stat_json $(ratios "${gw[*]}" "${py[*]}"))" "$SECONDS_PER_RUN" "$CLIENTS" "$STREAMS" "$THREADS" "$WORKERS" "$( [ ${#pin[@]} -gt 0 ] && echo "$SERVER_CPU" || echo none)" "$LOAD_CPU")"
awk -v g="$(median "${gw[@]}")" -v n="$(median "${ng[@]}")" -v s="$(median "${gs[@]}")" -v p="$(median "${py[@]}")" 'BEGIN {
  printf "median req/s: gateway %.0f, nghttpd %.0f (%.2f; goal >= 0.80), grpc-swift-2 %.0f (%.1fx; goal >= 5x), grpcio %.0f (%.1fx)\n",
    g, n, g / n, s, g / s, p, g / p }'
