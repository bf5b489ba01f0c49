#!/usr/bin/env bash
# Fleet shape: health Check req/s of the gateway against nghttpd (same 5-byte body, same cores), at the
# connection shapes a shared gateway sees and across event loops, for a machine with more cores than this
# repository's CI. Interleaved rounds; medians and spreads come from bench/fleet_summary.py.
#   shapes   one loop vs one worker on core 0, h2load on the upper half of the cores: CONNSxSTREAMS in SHAPES
#   scaling  `serve --threads n` vs `nghttpd -n n` on cores 0..n-1 for n in LOOPS, at 64 connections × 32 streams
# With BEFORE=<an older release binary> the shapes also run that binary, in the same rounds (A/B).
#   bench/fleet.sh                                   # from the repository, after `swift build -c release`
#   bench/pack-fleet-bundle.sh fleet.tar.xz          # or anywhere, from the bundle: scaling-bundle/fleet.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/bin/appstore-gateway" ]; then          # inside a bundle
  export LD_LIBRARY_PATH=$here/lib; BIN=$here/bin/appstore-gateway; H2LOAD=$here/bin/h2load; NGHTTPD=$here/bin/nghttpd
  BEFORE=${BEFORE:-$( [ -x "$here/bin/appstore-gateway-before" ] && echo "$here/bin/appstore-gateway-before" )}
else
  BIN=$here/../.build/release/appstore-gateway; H2LOAD=$(command -v h2load); NGHTTPD=$(command -v nghttpd)
fi
ROUNDS=${ROUNDS:-3}; SECONDS_PER_RUN=${SECONDS_PER_RUN:-4}
SHAPES=${SHAPES:-"4x32 64x32 256x8"}; LOOPS=${LOOPS:-"1 2 4 8"}
cores=$(nproc); half=$((cores / 2)); load="$half-$((cores - 1))"; threads=$(( half < 8 ? half : 8 ))
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"; mkdir -p "$work/www/grpc.health.v1.Health"
# nghttpd serves the same answer at the same path, asked with the same headers (bench/lib.sh, reference_www)
printf '\x00\x00\x00\x00\x02\x08\x01' > "$work/www/grpc.health.v1.Health/Check"
rate() { awk '/^finished in/ {gsub(",", "", $4); print $4}'; }
h2() { # url conns streams: every server gets the gRPC headers (the same request)
  taskset -c "$load" "$H2LOAD" -D "$SECONDS_PER_RUN" -t "$(( $2 < threads ? $2 : threads ))" -c "$2" -m "$3" \
    -d "$work/health.bin" -H 'content-type: application/grpc' -H 'te: trailers' "$1" 2>&1 | rate
}
serve() { # binary port loops cores
  taskset -c "$4" "$1" serve --listen "127.0.0.1:$2" --threads "$3" > "$work/gw-$2.log" 2>&1 &
}
echo "# cores $cores; h2load on $load (up to $threads threads); $ROUNDS rounds of $SECONDS_PER_RUN s"
for shape in $SHAPES; do
  conns=${shape%x*}; streams=${shape#*x}
  serve "$BIN" 51101 1 0; [ -n "${BEFORE:-}" ] && serve "$BEFORE" 51102 1 0
  taskset -c 0 "$NGHTTPD" --no-tls -n 1 -d "$work/www" 51201 > /dev/null 2>&1 &
  sleep 1.5
  for round in $(seq "$ROUNDS"); do
    echo "shape=$shape round=$round gateway $(h2 http://127.0.0.1:51101/grpc.health.v1.Health/Check "$conns" "$streams")"
    [ -n "${BEFORE:-}" ] && echo "shape=$shape round=$round before $(h2 http://127.0.0.1:51102/grpc.health.v1.Health/Check "$conns" "$streams")"
    echo "shape=$shape round=$round nghttpd $(h2 http://127.0.0.1:51201/grpc.health.v1.Health/Check "$conns" "$streams")"
  done
  kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
done
for n in $LOOPS; do
  [ "$n" -le "$half" ] || continue
  serve "$BIN" 51101 "$n" "0-$((n - 1))"
  taskset -c "0-$((n - 1))" "$NGHTTPD" --no-tls -n "$n" -d "$work/www" 51201 > /dev/null 2>&1 &
  sleep 1.5
  for round in $(seq "$ROUNDS"); do
    echo "loops=$n round=$round gateway $(h2 http://127.0.0.1:51101/grpc.health.v1.Health/Check 64 32)"
    echo "loops=$n round=$round nghttpd $(h2 http://127.0.0.1:51201/grpc.health.v1.Health/Check 64 32)"
  done
  kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
done
