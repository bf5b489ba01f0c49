#!/usr/bin/env bash
# CPU time per GetHistory call, thread by thread, from /proc/<pid>/task/*/schedstat (nanoseconds): the
# gateway's event loop, the libcurl thread, Swift's pool (shared with the simulator's handlers), the
# simulator's loop and the rest, over bursts of sequential calls on `serve --simulator --threads 1`. The
# latency split of bench/history.sh moves by hundreds of µs from run to run on shared cores; the CPU each
# thread spends on a call moves far less, so it is the figure to compare builds with: give a second binary as
# BEFORE and the rounds interleave the two.
#
#   bench/history_cpu.sh                                          # 3 rounds of 5 bursts of 40 calls
#   BEFORE=/tmp/old/appstore-gateway ROUNDS=5 bench/history_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
BURSTS=${BURSTS:-5}
BURST=${BURST:-40}          # sequential calls per burst, below Apple's 50/s budget the simulator enforces
PORT=${PORT:-30164}
ADMIN_PORT=${ADMIN_PORT:-$(( PORT + 1 ))}
BIN=${BIN:-.build/release/appstore-gateway}
BEFORE=${BEFORE:-}
PY=${PY:-.venv/bin/python}

command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Per-thread CPU in µs per call of one binary, as "loop curl pool simulator other total".
measure() {
  local bin=$1 state="$work/state-$RANDOM" txid
  APPSTORE_GATEWAY_ADMIN="127.0.0.1:$ADMIN_PORT" "$bin" serve --simulator --threads 1 --state-dir "$state" \
    --listen "127.0.0.1:$PORT" > "$work/gw.out" 2> "$work/gw.log" &
  gw_pid=$!
  wait_port "$PORT" 60
  txid=$("$PY" bench/history_tool.py ids "$state" | sed -n 1p)   # the longest history: a full page of 20
  "$PY" bench/history_tool.py body "$txid" "$work/request.bin"
  call() {
    h2load -d "$work/request.bin" -H 'content-type: application/grpc' -H 'te: trailers' -n "$1" -c 1 -m 1 \
      "http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/GetHistory" | grep -q "$1 succeeded" ||
      { echo "GetHistory failed" >&2; cat "$work/gw.log" >&2; exit 1; }
  }
  call 20; sleep 1.1   # warm: connections, the JWT, the chain and signature caches
  snapshot() {
    for task in /proc/"$gw_pid"/task/*; do
      printf '%s %s %s\n' "${task##*/}" "$(tr ' ' _ < "$task/comm")" "$(cut -d' ' -f1 "$task/schedstat")"
    done | sort
  }
  snapshot > "$work/before"
  for _ in $(seq 1 "$BURSTS"); do call "$BURST"; sleep 1.05; done
  snapshot > "$work/after"
  kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true; gw_pid=
  join "$work/before" "$work/after" | awk -v n=$(( BURSTS * BURST )) '
    { us = ($5 - $3) / 1000 / n
      if ($2 ~ /^h2-loop/) loop += us; else if ($2 == "upstream-curl") curl += us
      else if ($2 ~ /qos/) pool += us; else if ($2 ~ /^sim-loop/) sim += us; else other += us
      total += us }
    END { printf "%.1f %.1f %.1f %.1f %.1f %.1f\n", loop, curl, pool, sim, other, total }'
}

for round in $(seq 1 "$ROUNDS"); do
  for which in gateway ${BEFORE:+before}; do
    bin=$BIN; [ "$which" = before ] && bin=$BEFORE
    read -r loop curl pool sim other total < <(measure "$bin")
    echo "$which $loop $curl $pool $sim $other $total" >> "$work/rows"
    printf 'round %d %-7s CPU µs per call: loop %s, libcurl thread %s, pool %s (the simulator'"'"'s handlers too), simulator loop %s, other %s, total %s\n' \
      "$round" "$which" "$loop" "$curl" "$pool" "$sim" "$other" "$total"
  done
done
"$PY" - "$work/rows" <<'PYEOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = ["loop", "libcurl thread", "pool", "simulator loop", "other", "total"]
for which in dict.fromkeys(row[0] for row in rows):
    mine = [[float(x) for x in row[1:]] for row in rows if row[0] == which]
    cells = [f"{name} {statistics.median(col):.1f} ({min(col):.1f}-{max(col):.1f})" for name, col in zip(names, zip(*mine))]
    print(f"median {which}: " + ", ".join(cells) + " µs per call")
PYEOF
