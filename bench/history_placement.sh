#!/usr/bin/env bash
# GetHistory added p50 by placement: the gateway (`serve --simulator`, release build) pinned to one core, and
# free to use every core, in one run; optionally an older build beside it (BEFORE=), each placement and build
# started afresh in every round, in turn. h2load runs on the last core in every placement (like for like).
#   added p50 = GetHistory through the gateway − the same request straight to its simulator, both from h2load,
#   bursts of BURST sequential calls (1 connection, 1 stream) under Apple's 50/s budget.
# A third placement, fresh, is free with the signature cache off: every JWS of every page pays its ECDSA, as
# when each answer's JWS are new to the gateway (a page not seen before, or Apple signing each answer anew).
#
#   bench/history_placement.sh                                  # 3 rounds
#   BEFORE=/tmp/before/appstore-gateway ROUNDS=5 bench/history_placement.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
BURSTS=${BURSTS:-3}
BURST=${BURST:-40}
PORT=${PORT:-30174}
BIN=${BIN:-.build/release/appstore-gateway}
BEFORE=${BEFORE:-}
PY=${PY:-.venv/bin/python}
last=$(( $(nproc) - 1 ))
command -v h2load >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# one BINARY PLACEMENT -> "added gateway_p50 direct_p50" in µs
one() {
  # One state directory per build, made by its first start and reused (making it signs the whole simulated
  # history, which takes far longer than a round).
  local binary=$1 placement=$2 launch=() state="$work/state-$(basename "$(dirname "$1")")-$(cksum <<<"$1" | cut -d' ' -f1)"
  case $placement in
    pinned) launch=(taskset -c 0) ;;
    fresh) launch=(env APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE=0) ;;
  esac
  "${launch[@]}" "$binary" serve --simulator --state-dir "$state" --listen "127.0.0.1:$PORT" > /dev/null 2> "$work/gw.log" &
  gw_pid=$!
  wait_port "$PORT" 60
  local sim_url txid token
  sim_url=$(awk -F'"' '/productionURL/ {print $2}' "$state/gateway.yaml")
  txid=$("$PY" bench/history_tool.py ids "$state" | sed -n 1p)
  "$PY" bench/history_tool.py body "$txid" "$work/request.bin"
  token=$("$PY" bench/history_tool.py jwt "$state")
  local gw_url="http://127.0.0.1:$PORT/appstore.gateway.v1.AppStoreGateway/GetHistory"
  local direct_url="$sim_url/inApps/v2/history/$txid"
  # Warm both paths (connections, caches) and prove the gateway answers.
  taskset -c "$last" h2load -n 5 -c 1 -m 1 -d "$work/request.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$gw_url" | grep -q '5 succeeded' || { echo "GetHistory does not answer" >&2; exit 1; }
  sleep 1.1
  latency_bursts "$work/gw.lat" taskset -c "$last" h2load -d "$work/request.bin" "${GRPC_HEADERS[@]}" "$gw_url"
  latency_bursts "$work/direct.lat" taskset -c "$last" h2load -H "authorization: $token" "$direct_url"
  kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true; gw_pid=
  read -r g _ < <("$PY" bench/history_tool.py percentiles "$work/gw.lat")
  read -r d _ < <("$PY" bench/history_tool.py percentiles "$work/direct.lat")
  echo "$(( g - d )) $g $d"
}

builds=(gateway); [ -n "$BEFORE" ] && builds+=(before)
declare -A added
for round in $(seq 1 "$ROUNDS"); do
  for placement in pinned free fresh; do
    for build in "${builds[@]}"; do
      binary=$BIN; [ "$build" = before ] && binary=$BEFORE
      read -r a g d < <(one "$binary" "$placement")
      added[$build-$placement]+="$a "
      printf 'round %d: %-7s %-6s added p50 %5d µs (gateway %d, direct %d)\n' "$round" "$build" "$placement" "$a" "$g" "$d"
    done
  done
done
for build in "${builds[@]}"; do
  for placement in pinned free fresh; do
    # shellcheck disable=SC2086
    set -- ${added[$build-$placement]}
    printf 'median added p50, %s %s: %d µs (%d–%d)\n' "$build" "$placement" "$(median "$@")" "$(minimum "$@")" "$(maximum "$@")"
  done
done
stats=()
for build in "${builds[@]}"; do
  for placement in pinned free fresh; do
    # shellcheck disable=SC2086
    stats+=("\"${build}_${placement}\":$(stat_json ${added[$build-$placement]})")
  done
done
emit history_placement "{$(IFS=,; echo "${stats[*]}")}"
echo "$(nproc) cores; gateway pinned = taskset -c 0, free = every core, fresh = free with the signature cache off; h2load on core $last; $BURSTS × $BURST calls a path"
