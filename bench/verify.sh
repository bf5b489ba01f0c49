#!/usr/bin/env bash
# VerifyJWS benchmark, per core: the gateway over gRPC (h2load, one event loop, a genuine Apple JWS in the
# request body), the verifier in-process (no gRPC), and `openssl speed ecdsap256` verify/s, same run.
#
#   bench/verify.sh                       # 3 rounds
#   ROUNDS=5 SECONDS_PER_RUN=8 bench/verify.sh
#   LOOPS=2 bench/verify.sh               # the gateway with 2 loops on every core vs `openssl speed -multi 2`
#                                         # (nothing pinned: h2load shares the cores, a few % of a VerifyJWS's cost)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
LOOPS=${LOOPS:-1}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
PORT=${PORT:-30153}
SAMPLE=${SAMPLE:-Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws}
ROOT=certs/AppleRootCA-G3.cer
BIN=.build/release/appstore-gateway
INPROC=.build/release/verify-benchmark

command -v h2load >/dev/null || scripts/install-deps.sh
if [ "$LOOPS" != 1 ]; then SERVER_PIN=(); LOAD_PIN=(); CLIENTS=$(( CLIENTS > LOOPS * 4 ? CLIENTS : LOOPS * 4 )); fi
swift build -c release --product appstore-gateway >/dev/null
swift build -c release --product verify-benchmark >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The request body: a gRPC frame holding VerifyJWSRequest{jws: SAMPLE}.
verify_request "$SAMPLE" "$work/request.bin"

# One JWS sent over and over: without the verified-signature cache, so every call pays its ECDSA; with no
# app configured, verification not bound to an app must be allowed, or every call is INVALID_ARGUMENT.
APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE=0 APPSTORE_GATEWAY_VERIFICATION_ALLOW_UNBOUND_VERIFICATION=true \
  "${SERVER_PIN[@]}" "$BIN" serve --listen "127.0.0.1:$PORT" --threads "$LOOPS" > "$work/gw.log" 2>&1 &
gw_pid=$!
wait_port "$PORT" 30
grpc_ok "http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/VerifyJWS" "$work/request.bin"

grpc_rate() {  # -> req/s; with LOOPS > 1 also the cores the gateway had, from its CPU time (in $work/cores)
  local t0; t0=$(awk '{print $14 + $15}' "/proc/$gw_pid/stat")
  grpc_load
  awk -v t0="$t0" -v hz="$(getconf CLK_TCK)" -v s="$SECONDS_PER_RUN" '{printf "%.2f\n", ($14 + $15 - t0) / hz / s}' \
    "/proc/$gw_pid/stat" > "$work/cores"
}
grpc_load() {
  on_load_core h2load -D "$SECONDS_PER_RUN" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/request.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/VerifyJWS" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4} /^requests:/ { if ($10+0 > 0 || $12+0 > 0) print "h2load saw failures: " $0 > "/dev/stderr" }'
}
openssl_rate() {  # verify/s of one core, wall clock like the others (without -elapsed, speed divides by CPU time,
                  # which overstates the rate ~3x on a busy machine: 15k/s vs 5k/s seen here)
  local multi=(); [ "$LOOPS" = 1 ] || multi=(-multi "$LOOPS")
  on_server_core openssl speed -elapsed "${multi[@]}" -seconds "$SECONDS_PER_RUN" ecdsap256 2>/dev/null |
    awk '/256 bits ecdsa \(nistp256\)/ {print $NF} /^ecdsa +256 bits/ {print $NF}' | head -n 1
}

g_rates=(); i_rates=(); o_rates=(); cores=()
for round in $(seq 1 "$ROUNDS"); do
  g=$(grpc_rate); i=$([ "$LOOPS" = 1 ] && "$INPROC" "$SAMPLE" "$ROOT" "$SECONDS_PER_RUN" || echo 0); o=$(openssl_rate)
  g_rates+=("$g"); i_rates+=("$i"); o_rates+=("$o"); cores+=("$(cat "$work/cores")")
  if [ "$LOOPS" = 1 ]; then
    printf 'round %d: gateway over gRPC %s/s, in-process %s/s, openssl ecdsap256 verify %s/s\n' "$round" "$g" "$i" "$o"
  else
    printf 'round %d: gateway over gRPC %s/s on %s cores of CPU time (h2load shares them), openssl -multi %s verify %s/s\n' \
      "$round" "$g" "${cores[-1]}" "$LOOPS" "$o"
  fi
done
g=$(median "${g_rates[@]}"); i=$(median "${i_rates[@]}"); o=$(median "${o_rates[@]}")
awk -v g="$g" -v i="$i" -v o="$o" 'BEGIN {
  printf "median over '"$LOOPS"' loop(s): gRPC %.0f/s (%.2f of OpenSSL), in-process %.0f/s (%.2f), OpenSSL P-256 verify %.0f/s; goal >= 0.75\n", g, g/o, i, i/o, o }'
[ "$LOOPS" = 1 ] || emit "verify_loops$LOOPS" "$(printf '{"gateway_grpc":%s,"openssl_verify":%s,"grpc_vs_openssl":%s,"gateway_cores":%s,"loops":%s}' \
  "$(stat_json "${g_rates[@]}")" "$(stat_json "${o_rates[@]}")" "$(stat_json $(ratios "${g_rates[*]}" "${o_rates[*]}"))" \
  "$(stat_json "${cores[@]}")" "$LOOPS")"
echo "sample: $SAMPLE; h2load -D $SECONDS_PER_RUN -c $CLIENTS -m $STREAMS -t 1; gateway threads=$LOOPS; $(nproc) cores"
