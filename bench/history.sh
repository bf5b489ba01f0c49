#!/usr/bin/env bash
# GetHistory benchmark: the gateway (`serve --simulator`, release build) against the same request sent straight
# to the simulator (h2load over TLS with a pre-minted App Store Server API token), interleaved in one run.
#   latency     bursts of sequential calls (1 connection, 1 stream) -> p50/p99 of each path, added p50
#   split       the added p50 split from the gateway's access-log lines of those calls (bench/README.md):
#               transport (duration - handler_us), upstream work (handler_us - verify_us - direct p50),
#               verification (verify_us)
#   throughput  -c 4 -m 8 identical calls for SECONDS_PER_RUN -> successful answers/s of each path
#   coalescing  COALESCE identical calls at once -> upstream calls made (the gateway's Apple request counter)
#   connections FANOUT concurrent distinct calls (grpcio) -> most TCP connections open to the simulator at once
# The simulator enforces Apple's budget (getTransactionHistory 50/s per app) and so does the gateway: bursts
# stay under it, and throughput beyond it only comes from coalescing identical calls.
#
#   bench/history.sh                          # 3 rounds
#   QUICK=1 bench/history.sh                  # 3 short rounds
#   BIN=/tmp/before/appstore-gateway bench/history.sh   # another build (before/after comparisons)
#   GW_LOG=/tmp/gw.log bench/history.sh      # keep the gateway's log, and in /tmp/gw.log.ranges the line
#                                             # ranges of the latency bursts' calls (`history_tool.py stages`)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-3}
BURSTS=${BURSTS:-$( [ "$QUICK" = 1 ] && echo 2 || echo 5 )}       # latency bursts per path and round
BURST=${BURST:-40}                                                  # sequential calls per burst (< budget 50/s)
SECONDS_PER_RUN=${SECONDS_PER_RUN:-$( [ "$QUICK" = 1 ] && echo 2 || echo 5 )}
COALESCE=${COALESCE:-100}
FANOUT=${FANOUT:-1000}
PORT=${PORT:-30154}
ADMIN_PORT=${ADMIN_PORT:-$(( PORT + 1 ))}
BIN=${BIN:-.build/release/appstore-gateway}
PY=${PY:-.venv/bin/python}

command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() {
  kill "${gw_pid:-}" "${ss_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true
  [ -z "${GW_LOG:-}" ] || cp "$work/gw.log" "$GW_LOG"
  rm -rf "$work"
}
trap cleanup EXIT

# The default log level, as in production (a debug line per Apple answer would be measured too); upstream calls
# are counted by the gateway's own metric on its admin port.
APPSTORE_GATEWAY_ADMIN="127.0.0.1:$ADMIN_PORT" "$BIN" serve --simulator --state-dir "$work/state" \
  --listen "127.0.0.1:$PORT" > "$work/gw.out" 2> "$work/gw.log" &
gw_pid=$!
wait_port "$PORT" 60
sim_url=$(awk -F'"' '/productionURL/ {print $2}' "$work/state/gateway.yaml")
sim_port=${sim_url##*:}
"$PY" bench/history_tool.py ids "$work/state" > "$work/ids"
txid=$(sed -n 1p "$work/ids")                       # the longest history: a full first page of 20 JWS
"$PY" bench/history_tool.py body "$txid" "$work/request.bin"
token=$("$PY" bench/history_tool.py jwt "$work/state")
gw_url="http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/GetHistory"
sim_url="https://127.0.0.1:$sim_port/inApps/v2/history/$txid"
gw() { h2load -d "$work/request.bin" -H 'content-type: application/grpc' -H 'te: trailers' "$@" "$gw_url"; }
direct() { h2load -H "authorization: $token" "$@" "$sim_url"; }
upstream_calls() {  # successful GetHistory answers from the simulator so far
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '/^appstore_gateway_apple_requests_total\{/ &&
    /endpoint="getTransactionHistory"/ && /http_status="200"/ {n += $NF} END {printf "%d\n", n}'
}

# Both answers must succeed before anything is timed.
gw -n 1 -c 1 -m 1 | grep -q '1 succeeded' && direct -n 1 -c 1 -m 1 | grep -q '^status codes: 1 2xx' ||
  { echo "GetHistory does not answer" >&2; cat "$work/gw.log" >&2; exit 1; }

ok_rate() {  # gw|direct -> successful answers per second under -c 4 -m 8 (same request)
  local path=$1 out
  out=$($path -D "$SECONDS_PER_RUN" -c 4 -m 8 2>&1)
  if [ "$path" = direct ]; then
    awk -v s="$SECONDS_PER_RUN" '/^status codes:/ {printf "%.1f\n", $3 / s}' <<<"$out"
  else
    # h2load cannot read gRPC trailers: count answers as large as a successful one (errors are tiny).
    awk -v s="$SECONDS_PER_RUN" -v ok="$gw_ok_bytes" '
      /^requests:/ {done = $8} /^traffic:/ {gsub(/[()]/, "", $8); data = $8}
      END {n = (data / ok < done) ? data / ok : done; printf "%.1f\n", n / s}' <<<"$out"
  fi
}
gw_ok_bytes=$(gw -n 10 -c 1 -m 1 | awk '/^traffic:/ {gsub(/[()]/, "", $8); printf "%d", $8 / 10}')
sleep 1.1

[ -z "${GW_LOG:-}" ] || : > "$GW_LOG.ranges"
g50=(); g99=(); d50=(); d99=(); added=(); gthr=(); dthr=(); coalesced=(); transport=(); handoffs=(); verify=()
for round in $(seq 1 "$ROUNDS"); do
  from=$(( $(wc -l < "$work/gw.log") + 1 ))
  latency_bursts "$work/gw-lat.log" gw; read -r gp50 gp99 gn < <("$PY" bench/history_tool.py percentiles "$work/gw-lat.log")
  to=$(wc -l < "$work/gw.log")
  [ -z "${GW_LOG:-}" ] || echo "$from $to" >> "$GW_LOG.ranges"
  latency_bursts "$work/d-lat.log" direct; read -r dp50 dp99 dn < <("$PY" bench/history_tool.py percentiles "$work/d-lat.log")
  read -r tr_us ho_us ve_us split_n < <("$PY" bench/history_tool.py split "$work/gw.log" "$from" "$to" "$dp50")
  transport+=("$tr_us"); handoffs+=("$ho_us"); verify+=("$ve_us")
  gt=$(ok_rate gw); sleep 1.1; dt=$(ok_rate direct); sleep 1.1
  before=$(upstream_calls)
  gw -n "$COALESCE" -c 1 -m "$COALESCE" > /dev/null
  sleep 0.2; calls=$(( $(upstream_calls) - before )); sleep 1
  g50+=("$gp50"); g99+=("$gp99"); d50+=("$dp50"); d99+=("$dp99"); added+=($(( gp50 - dp50 )))
  gthr+=("$gt"); dthr+=("$dt"); coalesced+=("$calls")
  printf 'round %d: gateway p50 %d µs p99 %d µs (%d calls) | direct p50 %d µs p99 %d µs (%d) | added p50 %d µs = transport %d + upstream work %d + verification %d (+ %d unaccounted; %d logged calls) | ok/s gateway %s direct %s | %d identical calls -> %d upstream\n' \
    "$round" "$gp50" "$gp99" "$gn" "$dp50" "$dp99" "$dn" $(( gp50 - dp50 )) "$tr_us" "$ho_us" "$ve_us" \
    $(( gp50 - dp50 - tr_us - ho_us - ve_us )) "$split_n" "$gt" "$dt" "$COALESCE" "$calls"
done

# Upstream connections under FANOUT concurrent distinct calls: sample `ss` every 50 ms during the load.
( while :; do ss -Htn state established "dport = :$sim_port" | wc -l; sleep 0.05; done ) > "$work/conns" &
ss_pid=$!
fan=$("$PY" bench/history_tool.py fanout "127.0.0.1:$PORT" "$work/state" "$FANOUT")
kill "$ss_pid"; wait "$ss_pid" 2>/dev/null || true; ss_pid=
conns=$(sort -g "$work/conns" | tail -n 1)
echo "$FANOUT concurrent distinct calls: $fan; upstream connections to the simulator: at most $conns"

emit history "$(printf '{"gateway_p50_us":%s,"gateway_p99_us":%s,"direct_p50_us":%s,"direct_p99_us":%s,"added_p50_us":%s,"p50_ratio":%s,"gateway_ok_per_s":%s,"direct_ok_per_s":%s,"throughput_ratio":%s,"coalesce_calls":%s,"upstream_calls":%s,"added_transport_us":%s,"added_handoffs_us":%s,"added_verify_us":%s,"fanout":%s,"fanout_status":"%s","upstream_connections_max":%s,"flags":"latency: %sx%s sequential calls per path per round; throughput: h2load -D %s -c 4 -m 8"}' \
  "$(stat_json "${g50[@]}")" "$(stat_json "${g99[@]}")" "$(stat_json "${d50[@]}")" "$(stat_json "${d99[@]}")" \
  "$(stat_json "${added[@]}")" "$(stat_json $(ratios "${g50[*]}" "${d50[*]}"))" \
  "$(stat_json "${gthr[@]}")" "$(stat_json "${dthr[@]}")" "$(stat_json $(ratios "${gthr[*]}" "${dthr[*]}"))" \
  "$COALESCE" "$(stat_json "${coalesced[@]}")" "$(stat_json "${transport[@]}")" "$(stat_json "${handoffs[@]}")" \
  "$(stat_json "${verify[@]}")" "$FANOUT" "$fan" "$conns" "$BURSTS" "$BURST" "$SECONDS_PER_RUN")"
awk -v a="$(median "${added[@]}")" -v c="$conns" -v u="$(median "${coalesced[@]}")" -v n="$COALESCE" \
  -v t="$(median "${transport[@]}")" -v h="$(median "${handoffs[@]}")" -v v="$(median "${verify[@]}")" 'BEGIN {
  printf "median: added p50 %d µs (goal <= 150 + verification): transport %d, upstream work %d, verification %d µs; %d identical calls -> %s upstream; %d upstream connection(s) (goal 1-2)\n", a, t, h, v, n, u, c }'
