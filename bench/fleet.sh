#!/usr/bin/env bash
# Fleet shape, for a machine with more cores than this repository's CI (interleaved rounds; medians and spreads
# from bench/fleet_summary.py). h2load runs on the upper half of the cores, every server on the lower half.
#   loops    health Check: `serve --threads n` vs `nghttpd -n n` on cores 0..n-1 for n in LOOPS, 64 conns × 32 streams
#   verify   VerifyJWS/s (signature cache off, every call pays its ECDSA) with n loops on cores 0..n-1 vs
#            `openssl speed -elapsed -multi n ecdsap256` verify/s on the same cores, n in VERIFY_LOOPS
#   history  GetHistory added p50 (`serve --simulator`, through the gateway − straight to its simulator, bursts of
#            BURST sequential calls) with the gateway pinned to core 0, on cores 0-1, and free on every core
#   shapes   health Check, one loop vs one worker on core 0: CONNSxSTREAMS in SHAPES
# Every server gets the same request (the gRPC headers, the same path; nghttpd serves the answer as a file).
# With BEFORE=<an older release binary>, loops and shapes run it too, in the same rounds (A/B).
#   bench/fleet.sh                                   # from the repository, after `swift build -c release`
#   bench/pack-fleet-bundle.sh fleet.tar.xz          # or anywhere, from the bundle: fleet-bundle/fleet.sh
#   PARTS="loops verify" ROUNDS=5 bench/fleet.sh     # some parts only
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/bin/appstore-gateway" ]; then          # inside a bundle: its own binaries first on PATH
  export LD_LIBRARY_PATH=$here/lib PATH=$here/bin:$PATH; BIN=$here/bin/appstore-gateway
  BEFORE=${BEFORE:-$( [ -x "$here/bin/appstore-gateway-before" ] && echo "$here/bin/appstore-gateway-before" )}
else
  BIN=$here/../.build/release/appstore-gateway
fi
ROUNDS=${ROUNDS:-3}; SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}; PARTS=${PARTS:-"loops verify history shapes"}
SHAPES=${SHAPES:-"4x32 64x32 256x8"}; LOOPS=${LOOPS:-"1 2 4 8"}; VERIFY_LOOPS=${VERIFY_LOOPS:-$LOOPS}
BURSTS=${BURSTS:-3}; BURST=${BURST:-40}
cores=$(nproc); half=$((cores / 2)); load="$half-$((cores - 1))"; threads=$(( half < 8 ? half : 8 ))
. "$here/lib.sh"   # GRPC_HEADERS, HEALTH_PATH, reference_www, grpc_ok, latency_bursts (the bundle carries it)
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"; reference_www "$work/www"
if [ -f "$here/verify-request.bin" ]; then cp "$here/verify-request.bin" "$work/verify.bin"
else (cd "$here/.." && verify_request Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws "$work/verify.bin")
fi
health_path=/$HEALTH_PATH; verify_path=/appstore.gateway.v1.AppStoreGateway/VerifyJWS
history_path=/appstore.gateway.v1.AppStoreGateway/GetHistory
# Python (history's tool) runs without the bundle's libraries; the openssl it signs with keeps them.
mkdir -p "$work/bin"; printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "${LD_LIBRARY_PATH:-}" "$(command -v openssl)" > "$work/bin/openssl"
chmod +x "$work/bin/openssl"
tool() { env -u LD_LIBRARY_PATH PATH="$work/bin:$PATH" python3 "$here/history_tool.py" "$@"; }
rate() { awk '/^finished in/ {gsub(",", "", $4); print $4}'; }
h2() { # url conns streams [body]: every server gets the gRPC headers (the same request)
  taskset -c "$load" h2load -D "$SECONDS_PER_RUN" -t "$(( $2 < threads ? $2 : threads ))" -c "$2" -m "$3" \
    -d "${4:-$work/health.bin}" "${GRPC_HEADERS[@]}" "$1" 2>&1 | rate
}
serve() { # binary port loops cores [env…]: in the background, its pid in $!
  local binary=$1 port=$2 loops=$3 on=$4; shift 4
  env "$@" taskset -c "$on" "$binary" serve --listen "127.0.0.1:$port" --threads "$loops" > "$work/gw-$port.log" 2>&1 &
}
warm() { # url conns streams: a short untimed load first (connections, caches, the allocator's first pages)
  taskset -c "$load" h2load -n $(( $2 * $3 * 20 )) -t "$(( $2 < threads ? $2 : threads ))" -c "$2" -m "$3" \
    -d "$work/health.bin" "${GRPC_HEADERS[@]}" "$1" > /dev/null 2>&1
}
stop() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; }
echo "# cores $cores; h2load on $load (up to $threads threads); $ROUNDS rounds of $SECONDS_PER_RUN s; parts: $PARTS"
echo "# $(taskset -p $$)"

loops() {
  for n in $LOOPS; do
    [ "$n" -le "$half" ] || continue
    serve "$BIN" 51101 "$n" "0-$((n - 1))"; [ -n "${BEFORE:-}" ] && serve "$BEFORE" 51102 "$n" "0-$((n - 1))"
    taskset -c "0-$((n - 1))" nghttpd --no-tls -n "$n" -d "$work/www" 51201 > /dev/null 2>&1 &
    sleep 1.5
    for port in 51101 51102 51201; do warm "http://127.0.0.1:$port$health_path" 64 32; done
    for round in $(seq "$ROUNDS"); do
      echo "loops=$n round=$round gateway $(h2 http://127.0.0.1:51101$health_path 64 32)"
      [ -n "${BEFORE:-}" ] && echo "loops=$n round=$round before $(h2 http://127.0.0.1:51102$health_path 64 32)"
      echo "loops=$n round=$round nghttpd $(h2 http://127.0.0.1:51201$health_path 64 32)"
    done
    stop
  done
}

verify() {
  for n in $VERIFY_LOOPS; do
    [ "$n" -le "$half" ] || continue
    serve "$BIN" 51103 "$n" "0-$((n - 1))" APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE=0 \
      APPSTORE_GATEWAY_VERIFICATION_ALLOW_UNBOUND_VERIFICATION=true
    sleep 1.5; grpc_ok "http://127.0.0.1:51103$verify_path" "$work/verify.bin" || { stop; continue; }
    for round in $(seq "$ROUNDS"); do
      echo "verify=$n round=$round gateway $(h2 http://127.0.0.1:51103$verify_path $(( n * 4 > 4 ? n * 4 : 4 )) 32 "$work/verify.bin")"
      echo "verify=$n round=$round openssl $(taskset -c "0-$((n - 1))" openssl speed -elapsed -multi "$n" \
        -seconds "$SECONDS_PER_RUN" ecdsap256 2>/dev/null | awk '/256 bits ecdsa \(nistp256\)/ {print $NF; exit}')"
    done
    stop
  done
}

history() { # one state directory (the simulator's apps, keys and history), reused by every start
  local state=$work/state port=51104 placement on sim txid token g d last=$((cores - 1))
  "$BIN" serve --simulator --state-dir "$state" --listen "127.0.0.1:$port" > "$work/history.log" 2>&1 &
  for _ in $(seq 300); do [ -f "$state/gateway.yaml" ] && grpc_ok "http://127.0.0.1:$port$health_path" "$work/health.bin" 2>/dev/null && break; sleep 0.1; done
  stop
  txid=$(tool ids "$state" | sed -n 1p)
  tool body "$txid" "$work/history.bin"
  token=$(tool jwt "$state") || return
  for round in $(seq "$ROUNDS"); do
    for placement in pinned two free; do
      case $placement in pinned) on=0 ;; two) on=0-1 ;; free) on=0-$last ;; esac
      taskset -c "$on" "$BIN" serve --simulator --state-dir "$state" --listen "127.0.0.1:$port" > "$work/history.log" 2>&1 &
      for _ in $(seq 300); do grpc_ok "http://127.0.0.1:$port$health_path" "$work/health.bin" 2>/dev/null && break; sleep 0.1; done
      grpc_ok "http://127.0.0.1:$port$history_path" "$work/history.bin" || { stop; return; }
      sim=$(awk -F'"' '/productionURL/ {print $2}' "$state/gateway.yaml")   # the simulator's port, this start's
      taskset -c "$last" h2load -n 5 -c 1 -m 1 -d "$work/history.bin" "${GRPC_HEADERS[@]}" \
        "http://127.0.0.1:$port$history_path" > /dev/null
      sleep 1.1
      latency_bursts "$work/gw.lat" taskset -c "$last" h2load -d "$work/history.bin" "${GRPC_HEADERS[@]}" \
        "http://127.0.0.1:$port$history_path"
      latency_bursts "$work/direct.lat" taskset -c "$last" h2load -H "authorization: $token" "$sim/inApps/v2/history/$txid"
      stop
      read -r g _ < <(tool percentiles "$work/gw.lat")
      read -r d _ < <(tool percentiles "$work/direct.lat")
      echo "history=$placement round=$round added $((g - d))"
      echo "history=$placement round=$round gateway $g"; echo "history=$placement round=$round direct $d"
    done
  done
}

shapes() {
  for shape in $SHAPES; do
    conns=${shape%x*}; streams=${shape#*x}
    serve "$BIN" 51101 1 0; [ -n "${BEFORE:-}" ] && serve "$BEFORE" 51102 1 0
    taskset -c 0 nghttpd --no-tls -n 1 -d "$work/www" 51201 > /dev/null 2>&1 &
    sleep 1.5
    for port in 51101 51102 51201; do warm "http://127.0.0.1:$port$health_path" "$conns" "$streams"; done
    for round in $(seq "$ROUNDS"); do
      echo "shape=$shape round=$round gateway $(h2 http://127.0.0.1:51101$health_path "$conns" "$streams")"
      [ -n "${BEFORE:-}" ] && echo "shape=$shape round=$round before $(h2 http://127.0.0.1:51102$health_path "$conns" "$streams")"
      echo "shape=$shape round=$round nghttpd $(h2 http://127.0.0.1:51201$health_path "$conns" "$streams")"
    done
    stop
  done
}

for part in $PARTS; do "$part"; done
