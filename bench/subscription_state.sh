#!/usr/bin/env bash
# Subscription state reads (issue 46): GetSubscription on one gateway loop with COUNT subscriptions stored in the
# SQLite store (random ids, warm), against the health Check on the same loop in the same rounds; the latency of
# one call at a time (no queueing: the server's time plus a loopback round trip) and the gateway's own
# grpc_server_handling_seconds under load; the RSS of a gateway serving GetSubscription with SMALL vs COUNT
# subscriptions stored; and the floor under any answer from this store: SQLite alone reading the same rows for
# random ids (bench/peers/sqlite_reads.c), which bounds the ratio to the health Check whatever the gateway does.
#
#   bench/subscription_state.sh                      # 1,000,000 vs 1,000 stored, 3 rounds (seeding: several minutes)
#   COUNT=100000 ROUNDS=5 SECONDS_PER_RUN=8 bench/subscription_state.sh
#   STATE_DIR=/var/tmp/state-bench bench/subscription_state.sh   # seed there once, reuse it in later runs
#
# The state is seeded straight into the store's file by `state-seed` (Sources/StateSeed: the reducer and the
# tables the gateway uses; each subscription one purchase, a renewal info, active for 1–30 more days, Apple-sized
# JWS); TRANSACTIONS=12 gives each a year of monthly renewals instead. GetSubscription needs another id in every
# call, which h2load cannot send (one body), so the calls come from bench/peers/grpc_bodies.c (nghttp2, like
# h2load: one thread, CLIENTS connections × STREAMS streams, the next of BODIES pre-encoded requests each call,
# ids drawn at random from those stored). The health Check is measured by h2load, as in bench/transport.sh, and
# by grpc_bodies too (it shows the driver is not what limits the GetSubscription rate). Placement as everywhere:
# the gateway (every thread of it, SQLite's included) on core 0, the load generator on core 1 (bench/lib.sh).
# Every GetSubscription is answered from the state: the run fails if the gateway asked Apple or answered stale.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

COUNT=${COUNT:-1000000}
SMALL=${SMALL:-1000}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-$( [ "${QUICK:-0}" = 1 ] && echo 3 || echo 6 )}
WARMUP=${WARMUP:-2}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
BODIES=${BODIES:-100000}
TRANSACTIONS=${TRANSACTIONS:-1}
STATE_DIR=${STATE_DIR:-}
GW_PORT=${GW_PORT:-30190}; ADMIN_PORT=${ADMIN_PORT:-30191}; HOOK_PORT=${HOOK_PORT:-30192}
BIN=.build/release/appstore-gateway
SEED=.build/release/state-seed
PY=${PY:-.venv/bin/python}
FIRST_ID=2100000000000000
SEED_FORMAT=1   # bump when state-seed writes other rows: a kept STATE_DIR is seeded again
TEMPLATE=Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws   # Apple's header and x5c chain
GS_PATH=appstore.gateway.v1.SubscriptionState/GetSubscription

command -v h2load >/dev/null || scripts/install-deps.sh
swift build -c release --product appstore-gateway >/dev/null
swift build -c release --product state-seed >/dev/null

work=$(mktemp -d)
cleanup() {
  kill "${gw_pid:-}" "${sim_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cc -O2 -o "$work/grpc_bodies" bench/peers/grpc_bodies.c -lnghttp2
cc -O2 -o "$work/sqlite_reads" bench/peers/sqlite_reads.c -lsqlite3

# The app, its keys and the simulator's PKI: a simulator state directory (the simulator is stopped once it wrote
# it: nothing here may call Apple, and a call that tried would fail and show).
"$BIN" simulator --listen 127.0.0.1:0 --state-dir "$work/sim" --seed 5 --customers 1 --apps 1 > "$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 300); do [ -s "$work/sim/gateway.yaml" ] && grep -q listening "$work/sim.log" && break; sleep 0.1; done
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=

# config DATABASE OUT: the simulator's configuration with the webhook and the SQLite store (the state lives in it).
config() {
  "$PY" - "$work/sim/gateway.yaml" "$1" "$2" "$GW_PORT" "$ADMIN_PORT" "$HOOK_PORT" <<'PY'
import sys, yaml
source, database, out, port, admin, hook = sys.argv[1:]
config = yaml.safe_load(open(source))
config["listen"] = f"127.0.0.1:{port}"
config["admin"] = f"127.0.0.1:{admin}"
config.setdefault("notifications", {}).update({
    "webhook": {"listen": f"127.0.0.1:{hook}", "path": "/apple/notifications"},
    "store": {"sqlite": database, "reconcileInterval": "0"}})
yaml.safe_dump(config, open(out, "w"))
PY
}

# seed COUNT DIR: a store holding COUNT subscriptions (reused when DIR already holds one made alike).
seed() {
  local count=$1 dir=$2 stamp="$1 $TRANSACTIONS $FIRST_ID format-$SEED_FORMAT"
  mkdir -p "$dir"
  if [ -f "$dir/notifications.db" ] && [ "$(cat "$dir/seeded" 2>/dev/null)" = "$stamp" ]; then
    echo "reusing $dir/notifications.db ($count subscriptions)"; return
  fi
  rm -f "$dir"/notifications.db*
  echo "seeding $count subscriptions into $dir/notifications.db"
  "$SEED" "$dir/notifications.db" "$count" --first-id "$FIRST_ID" --transactions "$TRANSACTIONS" \
    --header-from "$TEMPLATE" | tee "$dir/seed.txt"
  echo "$stamp" > "$dir/seeded"
}
small_dir=${STATE_DIR:+$STATE_DIR/small}; small_dir=${small_dir:-$work/small}
big_dir=${STATE_DIR:+$STATE_DIR/big}; big_dir=${big_dir:-$work/big}
seed "$SMALL" "$small_dir"
seed "$COUNT" "$big_dir"
config "$small_dir/notifications.db" "$work/small.yaml"
config "$big_dir/notifications.db" "$work/big.yaml"
db_mib=$(du -m "$big_dir/notifications.db" | cut -f1)
# Warm: the whole file read once into the page cache (a machine serving it would have it there; here it was
# just written, partly evicted by other work), and how much of it is cached (fincore), before and after the runs.
cached_percent() { fincore -nb -o RES,SIZE "$1" | awk '{printf "%.1f\n", 100 * $1 / $2}'; }
cat "$big_dir/notifications.db" > /dev/null
cached_before=$(cached_percent "$big_dir/notifications.db")
echo "store file ${db_mib} MiB, ${cached_before}% in the page cache"

# bodies COUNT OUT: BODIES GetSubscriptionRequest frames {original_transaction_id: a random stored id,
# environment: SANDBOX} (app empty: the one configured), back to back.
bodies() {
  python3 - "$1" "$2" "$BODIES" "$FIRST_ID" <<'PY'
import random, struct, sys
count, out, bodies, first = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(46)
with open(out, "wb") as f:
    for _ in range(bodies):
        ident = str(first + rng.randrange(count)).encode()
        message = b"\x12" + bytes([len(ident)]) + ident + b"\x18\x02"
        f.write(b"\0" + struct.pack(">I", len(message)) + message)
PY
}
bodies "$SMALL" "$work/small.bin"
bodies "$COUNT" "$work/big.bin"
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"

start_gateway() {  # CONFIG BODIES: started, and one call of the first body answered OK
  "${SERVER_PIN[@]}" "$BIN" serve --config "$1" --threads 1 > "$work/gw.log" 2>&1 &
  gw_pid=$!
  wait_port "$GW_PORT" 60
  head -c 25 "$2" > "$work/one.bin"
  grpc_ok "http://127.0.0.1:$GW_PORT/$GS_PATH" "$work/one.bin"
}
stop_gateway() { kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true; gw_pid=; }
metric() {  # NAME [LABEL-FILTER]: the sum of a series' samples
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v name="$1" -v filter="${2:-}" \
    'index($0, name) == 1 && (filter == "" || index($0, filter)) {sum += $NF} END {print sum + 0}'
}
# The GetSubscription rows of grpc_server_handling_seconds, cumulative: "le count" lines.
histogram() {
  curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" |
    awk '/^grpc_server_handling_seconds_bucket/ && /grpc_method="GetSubscription"/ {
      match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5); print le, $NF }'
}
h2load_rate() {  # body path -> req/s
  on_load_core h2load -D "$SECONDS_PER_RUN" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$1" "${GRPC_HEADERS[@]}" \
    "http://127.0.0.1:$GW_PORT/$2" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4} /^requests:/ { if ($10+0 > 0 || $12+0 > 0) print "h2load saw failures: " $0 > "/dev/stderr" }'
}
driver() {  # bodies path clients streams -> the driver's line
  on_load_core "$work/grpc_bodies" 127.0.0.1 "$GW_PORT" "/$2" "$1" "$3" "$4" "$WARMUP" "$SECONDS_PER_RUN"
}
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$gw_pid/status"; }
# CPU ticks of the gateway so far: "LOOP OTHER" (the gRPC loop's thread; the rest of the process: SQLite's read
# queue, Swift's pool, the webhook's loop, the log writer; from the process's total, which keeps the time of
# worker threads that have exited).
thread_ticks() {
  local total loop
  total=$(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$gw_pid/stat")
  loop=$(grep -l -x h2-loop-0 /proc/"$gw_pid"/task/*/comm 2>/dev/null | head -n 1 | sed 's/comm$/stat/' |
    xargs -r awk '{sub(/^.*\) /, ""); print $12 + $13}') || true
  echo "${loop:-0} $((total - ${loop:-0}))"
}
# cpu_us BEFORE AFTER CALLS -> "loop_us other_us" per call
cpu_us() {
  awk -v b="$1" -v a="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(b, x, " "); split(a, y, " "); o = y[2] - x[2]; if (o < 0) o = 0   # a tick read between the two reads
    printf "%.1f %.1f\n", (y[1] - x[1]) / hz * 1e6 / n, o / hz * 1e6 / n }'
}
# serve_and_sample BODIES: GetSubscription load, RSS sampled every 0.5 s; prints the driver's line, then
# "rss_peak KiB rss_end KiB" on the next line.
serve_and_sample() {
  local line peak=0 r
  driver "$1" "$GS_PATH" "$CLIENTS" "$STREAMS" > "$work/driver.out" &
  local load=$!
  while kill -0 "$load" 2>/dev/null; do
    r=$(rss_kib); [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.5
  done
  wait "$load" || { echo "GetSubscription calls failed: $(cat "$work/driver.out")" >&2; return 1; }
  cat "$work/driver.out"
  echo "rss_peak $peak rss_end $(rss_kib)"
}
check_no_apple() {
  local reads stale
  reads=$(metric appstore_gateway_state_apple_reads_total); stale=$(metric appstore_gateway_state_stale_answers_total)
  [ "$reads" = 0 ] && [ "$stale" = 0 ] || { echo "the gateway asked Apple ($reads reads, $stale stale answers)" >&2; return 1; }
}
# p99 from a cumulative histogram ("le count" lines), linear within its bucket (µs).
histogram_p99() {
  sort -g | awk '{le[NR] = $1; c[NR] = $2} END {
    total = c[NR]; want = 0.99 * total; prev_le = 0; prev_c = 0
    for (i = 1; i <= NR; i++) { if (c[i] >= want) {
        if (le[i] == "+Inf") { print "inf"; exit }
        printf "%.0f\n", (prev_le + (le[i] - prev_le) * (want - prev_c) / (c[i] - prev_c)) * 1e6; exit }
      prev_le = le[i]; prev_c = c[i] } }'
}

# The floor under any answer from this store: SQLite alone (bench/peers/sqlite_reads.c, on the gateway's core with
# no gateway running) reading, for random stored ids, what one GetSubscription reads (the record row and its
# current ledger row), and the least any read of a record reads (three small columns of its row). µs a read.
floor_us() { field per_read_us "$(env "$@" "${SERVER_PIN[@]}" "$work/sqlite_reads" "$big_dir/notifications.db" "$COUNT" "$FIRST_ID" "$SECONDS_PER_RUN")"; }

health=(); driver_health=(); gs=(); gs_small=(); p50=(); p99=(); p99_server=(); within_1ms=(); p99_loaded=()
sqlite_read=(); sqlite_stamp=()
rss_small=(); rss_big=(); rss_small_peak=(); rss_big_peak=(); gs_loop_us=(); gs_other_us=(); health_loop_us=(); health_other_us=()
for round in $(seq 1 "$ROUNDS"); do
  # SMALL stored: the GetSubscription rate and the RSS serving it.
  start_gateway "$work/small.yaml" "$work/small.bin"
  line=$(serve_and_sample "$work/small.bin"); check_no_apple
  gs_small+=("$(field rate "$line")"); rss_small+=("$(field rss_end "$line")")
  rss_small_peak+=("$(field rss_peak "$line")")
  stop_gateway
  # COUNT stored: the health Check (h2load, and the driver), GetSubscription, one call at a time, the RSS.
  start_gateway "$work/big.yaml" "$work/big.bin"
  h=$(h2load_rate "$work/health.bin" "$HEALTH_PATH")
  t0=$(thread_ticks)
  line=$(serve_and_sample "$work/big.bin")
  t1=$(thread_ticks)
  loaded=$(histogram)
  dh=$(driver "$work/health.bin" "$HEALTH_PATH" "$CLIENTS" "$STREAMS")
  t2=$(thread_ticks)
  read -r gl go <<<"$(cpu_us "$t0" "$t1" "$(field all "$line")")"
  read -r hl ho <<<"$(cpu_us "$t1" "$t2" "$(field all "$dh")")"
  gs_loop_us+=("$gl"); gs_other_us+=("$go"); health_loop_us+=("$hl"); health_other_us+=("$ho")
  before=$(histogram)
  one=$(driver "$work/big.bin" "$GS_PATH" 1 1)
  after=$(histogram)
  check_no_apple
  health+=("$h"); driver_health+=("$(field rate "$dh")"); gs+=("$(field rate "$line")")
  rss_big+=("$(field rss_end "$line")"); rss_big_peak+=("$(field rss_peak "$line")"); p50+=("$(field p50_us "$one")"); p99+=("$(field p99_us "$one")")
  # The gateway's own grpc_server_handling_seconds: for the calls one at a time (the histogram's growth during
  # that run), and under the saturating load (CLIENTS × STREAMS calls in flight: mostly waiting their turn).
  alone=$(join <(sort -k1,1 <<<"$after") <(sort -k1,1 <<<"$before") | awk '{print $1, $2 - $3}')
  p99_server+=("$(histogram_p99 <<<"$alone")")
  within_1ms+=("$(awk '$1 == "0.001" {a = $2} $1 == "+Inf" {t = $2} END {printf "%.4f\n", a / t}' <<<"$alone")")
  p99_loaded+=("$(histogram_p99 <<<"$loaded")")
  stop_gateway
  sqlite_read+=("$(floor_us)"); sqlite_stamp+=("$(floor_us STAMP_ONLY=1)")
  printf 'round %d: health %s/s (grpc_bodies %s/s); GetSubscription %s/s with %s stored, %s/s with %s\n' \
    "$round" "$h" "${driver_health[-1]}" "${gs[-1]}" "$COUNT" "${gs_small[-1]}" "$SMALL"
  printf '  one at a time p50 %s µs p99 %s µs (server p99 %s µs, %s within 1 ms); server p99 under load %s µs\n' \
    "${p50[-1]}" "${p99[-1]}" "${p99_server[-1]}" "${within_1ms[-1]}" "${p99_loaded[-1]}"
  printf '  RSS %s KiB (peak %s) vs %s KiB (peak %s); CPU µs a call (loop + rest): GetSubscription %s + %s, health %s + %s\n' \
    "${rss_big[-1]}" "${rss_big_peak[-1]}" "${rss_small[-1]}" "${rss_small_peak[-1]}" "$gl" "$go" "$hl" "$ho"
  printf '  SQLite alone, µs a read: %s (one GetSubscription'"'"'s rows), %s (a record'"'"'s three small columns)\n' \
    "${sqlite_read[-1]}" "${sqlite_stamp[-1]}"
done

cached_after=$(cached_percent "$big_dir/notifications.db")
rss_diff=(); for i in "${!rss_big[@]}"; do rss_diff+=("$(awk -v a="${rss_big[$i]}" -v b="${rss_small[$i]}" 'BEGIN {printf "%.1f\n", (a - b) / 1024}')"); done
awk -v g="$(median "${gs[@]}")" -v h="$(median "${health[@]}")" -v s="$(median "${gs_small[@]}")" \
  -v p="$(median "${p99[@]}")" -v d="$(median "${rss_diff[@]}")" -v f="$(median "${sqlite_read[@]}")" \
  -v t="$(median "${sqlite_stamp[@]}")" 'BEGIN {
  printf "median: GetSubscription %.0f/s (%.2f of the health Check %.0f/s; goal >= 0.30), %.0f/s with '"$SMALL"' stored; p99 one at a time %s µs at the client (goal <= 1000); RSS %s MiB apart (goal <= 64)\n", g, g/h, h, s, p, d
  printf "SQLite alone: %s µs a GetSubscription'"'"'s reads, %s µs the least read of a record: with nothing else done they allow %.2f and %.2f of the health Check\n", f, t, 1e6 / f / h, 1e6 / t / h }'
echo "store: $COUNT subscriptions ($TRANSACTIONS transaction(s) each), ${db_mib} MiB, ${cached_before}% / ${cached_after}% in the page cache before / after; $BODIES request bodies; h2load/grpc_bodies -c $CLIENTS -m $STREAMS, $SECONDS_PER_RUN s (+$WARMUP s warm-up); gateway threads=1; $(nproc) cores"
# The result fragment: every figure as {"median","min","max","runs"}.
json="\"count\":$COUNT,\"small\":$SMALL,\"transactions\":$TRANSACTIONS,\"db_mib\":$db_mib"
json+=",\"cached_percent\":[$cached_before,$cached_after],\"vs_health\":$(stat_json $(ratios "${gs[*]}" "${health[*]}"))"
for name in health driver_health gs gs_small p50 p99 p99_server within_1ms p99_loaded rss_small rss_big rss_small_peak \
  rss_big_peak rss_diff gs_loop_us gs_other_us health_loop_us health_other_us sqlite_read sqlite_stamp; do
  declare -n values=$name
  key=${name/#gs_small/get_subscription_small}; key=${key/#gs/get_subscription}
  case $name in
    p50|p99) key=${name}_us ;; p99_server) key=server_p99_us ;; within_1ms) key=server_within_1ms ;;
    p99_loaded) key=server_p99_loaded_us ;; rss_small|rss_big|rss_small_peak|rss_big_peak) key=${name}_kib ;;
    rss_diff) key=rss_diff_mib ;; gs_loop_us|gs_other_us) key=$name ;; sqlite_read|sqlite_stamp) key=${name}_us ;;
  esac
  json+=",\"$key\":$(stat_json "${values[@]}")"
  unset -n values
done
emit subscription_state "{$json}"
