#!/usr/bin/env bash
# VerifyJWS against the peers, per core, interleaved in one run: the gateway over gRPC (h2load, one event loop,
# a genuine Apple JWS), the verifier in-process (no gRPC), Apple's app-store-server-library for Python
# (`SignedDataVerifier`, offline, same root, same JWS) and `openssl speed ecdsap256` verify/s (the ES256 floor).
#
#   bench/verify-peers.sh                     # 3 rounds of 5 s
#   QUICK=1 bench/verify-peers.sh             # 3 rounds of 2 s
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-$( [ "$QUICK" = 1 ] && echo 2 || echo 5 )}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
PORT=${PORT:-30159}
SAMPLE=${SAMPLE:-Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws}
ROOT=certs/AppleRootCA-G3.cer
BIN=.build/release/appstore-gateway
INPROC=.build/release/verify-benchmark
PY=${PY:-.venv/bin/python}

command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] && [ -x "$INPROC" ] || swift build -c release >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The request body: a gRPC frame holding VerifyJWSRequest{jws: SAMPLE}.
verify_request "$SAMPLE" "$work/request.bin"

# One JWS sent over and over: without the verified-signature cache, so every call pays its ECDSA; with no
# app configured, verification not bound to an app must be allowed, or every call is INVALID_ARGUMENT.
APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE=0 APPSTORE_GATEWAY_VERIFICATION_ALLOW_UNBOUND_VERIFICATION=true \
  "${SERVER_PIN[@]}" "$BIN" serve --listen "127.0.0.1:$PORT" --threads 1 > "$work/gw.log" 2>&1 &
gw_pid=$!
wait_port "$PORT" 30
grpc_ok "http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/VerifyJWS" "$work/request.bin"

grpc_rate() {
  on_load_core h2load -D "$SECONDS_PER_RUN" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/request.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/VerifyJWS" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4} /^requests:/ { if ($10+0 > 0 || $12+0 > 0) print "h2load saw failures: " $0 > "/dev/stderr" }'
}
openssl_rate() {  # verify/s of one core, wall clock like the others (without -elapsed, speed divides by CPU time,
                  # which overstates the rate ~3x on a busy machine: 15k/s vs 5k/s seen here)
  on_server_core openssl speed -elapsed -seconds "$SECONDS_PER_RUN" ecdsap256 2>/dev/null | awk '/256 bits ecdsa \(nistp256\)/ {print $NF}'
}

g=(); i=(); a=(); o=()
for round in $(seq 1 "$ROUNDS"); do
  gr=$(grpc_rate); ir=$(on_server_core "$INPROC" "$SAMPLE" "$ROOT" "$SECONDS_PER_RUN")
  ar=$(on_server_core "$PY" bench/peers/apple_python_verify.py "$SAMPLE" "$ROOT" "$SECONDS_PER_RUN"); or=$(openssl_rate)
  g+=("$gr"); i+=("$ir"); a+=("$ar"); o+=("$or")
  printf 'round %d: gateway over gRPC %s/s, in-process %s/s, Apple Python %s/s, openssl ecdsap256 verify %s/s\n' \
    "$round" "$gr" "$ir" "$ar" "$or"
done

emit verify_peers "$(printf '{"gateway_grpc":%s,"in_process":%s,"apple_python":%s,"openssl_verify":%s,"grpc_vs_apple_python":%s,"grpc_vs_openssl":%s,"in_process_vs_openssl":%s,"flags":"sample %s; h2load -D %s -c %s -m %s -t 1; gateway threads=1"}' \
  "$(stat_json "${g[@]}")" "$(stat_json "${i[@]}")" "$(stat_json "${a[@]}")" "$(stat_json "${o[@]}")" \
  "$(stat_json $(ratios "${g[*]}" "${a[*]}"))" "$(stat_json $(ratios "${g[*]}" "${o[*]}"))" \
  "$(stat_json $(ratios "${i[*]}" "${o[*]}"))" "$(basename "$SAMPLE")" "$SECONDS_PER_RUN" "$CLIENTS" "$STREAMS")"
awk -v g="$(median "${g[@]}")" -v i="$(median "${i[@]}")" -v a="$(median "${a[@]}")" -v o="$(median "${o[@]}")" 'BEGIN {
  printf "median per core: gRPC %.0f/s = %.1fx Apple Python (%.0f/s; goal >= 30x) and %.2f of OpenSSL (%.0f/s; goal >= 0.75); in-process %.0f/s (%.2f)\n",
    g, g / a, a, g / o, o, i, i / o }'
