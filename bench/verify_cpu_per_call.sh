#!/usr/bin/env bash
# CPU time per VerifyJWS call over gRPC: the gateway's user+system CPU (from /proc) over N calls of one genuine
# Apple JWS, one event loop pinned to core 0, h2load on core 1 (bench/lib.sh), access log on (the default).
# Steadier than req/s for comparing builds: give a second binary as BEFORE and rounds interleave the two.
# SIGNATURE_CACHE (default 0) is verification.signatureCacheSize: 0 makes every call pay its ECDSA, as the
# OpenSSL comparison needs; a positive size skips the ECDSA of the repeated JWS, leaving what the gateway itself
# costs per call (parsing, JSON, the answer, HTTP/2, logging) plus a SHA-256 of the JWS for the cache key.
#
#   bench/verify_cpu_per_call.sh                               # 3 rounds of 40,000 calls
#   SIGNATURE_CACHE=1000 BEFORE=/tmp/old/appstore-gateway bench/verify_cpu_per_call.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-40000}
SIGNATURE_CACHE=${SIGNATURE_CACHE:-0}
SAMPLE=${SAMPLE:-Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws}
BIN=.build/release/appstore-gateway
BEFORE=${BEFORE:-}
command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The request body: a gRPC frame holding VerifyJWSRequest{jws: SAMPLE}.
verify_request "$SAMPLE" "$work/request.bin"

start() {  # binary port log -> pid
  APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE=$SIGNATURE_CACHE \
    APPSTORE_GATEWAY_VERIFICATION_ALLOW_UNBOUND_VERIFICATION=true \
    "${SERVER_PIN[@]}" "$1" serve --listen "127.0.0.1:$2" --threads 1 > "$3" 2>&1 &
  echo $!
}
gw=$(start "$BIN" 30164 "$work/gw.log"); pids+=("$gw")
[ -z "$BEFORE" ] || { old=$(start "$BEFORE" 30165 "$work/before.log"); pids+=("$old"); }
for port in 30164 $( [ -n "$BEFORE" ] && echo 30165 ); do
  wait_port "$port" 30
  grpc_ok "http://127.0.0.1:$port/appstore.gateway.v1.AppStoreGateway/VerifyJWS" "$work/request.bin"
done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per_call() {  # pid port -> CPU µs per call
  local before; before=$(ticks "$1")
  on_load_core h2load -n "$CALLS" -c 4 -m 32 -t 1 -d "$work/request.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' "http://127.0.0.1:$2/appstore.gateway.v1.AppStoreGateway/VerifyJWS" > "$work/h2load.out"
  grep -q " $CALLS succeeded, 0 failed" "$work/h2load.out" || { cat "$work/h2load.out" >&2; exit 1; }
  awk -v a="$before" -v b="$(ticks "$1")" -v n="$CALLS" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f\n", (b - a) / hz * 1e6 / n }'
}
g=(); o=()
for round in $(seq 1 "$ROUNDS"); do
  g+=("$(per_call "$gw" 30164)")
  [ -z "$BEFORE" ] || o+=("$(per_call "$old" 30165)")
  printf 'round %d: gateway %s µs/call%s\n' "$round" "${g[-1]}" "$( [ -z "$BEFORE" ] || echo ", before ${o[-1]}")"
done
printf 'median CPU µs per VerifyJWS call (signature cache %s): gateway %s (%s–%s)%s\n' "$SIGNATURE_CACHE" \
  "$(median "${g[@]}")" "$(minimum "${g[@]}")" "$(maximum "${g[@]}")" \
  "$( [ -z "$BEFORE" ] || echo ", before $(median "${o[@]}") ($(minimum "${o[@]}")–$(maximum "${o[@]}"))")"
