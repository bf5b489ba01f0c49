# Shared helpers of the bench/ scripts (sourced, not run).
#   median/spread of numbers; `emit NAME JSON` writes a result fragment for bench/run-all.sh when BENCH_OUT is set.

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
minimum() { printf '%s\n' "$@" | sort -g | head -n 1; }
maximum() { printf '%s\n' "$@" | sort -g | tail -n 1; }

# stat_json v1 v2 … -> {"median":…,"min":…,"max":…,"runs":[…]}
stat_json() {
  local runs; runs=$(IFS=,; echo "$*")
  printf '{"median":%s,"min":%s,"max":%s,"runs":[%s]}' "$(median "$@")" "$(minimum "$@")" "$(maximum "$@")" "$runs"
}

# ratios a[i]/b[i] of two same-length arrays passed as "a1 a2 …" "b1 b2 …" -> one ratio per round
ratios() {
  paste <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") | awk '$2 > 0 {printf "%.4f\n", $1 / $2}'
}

# emit NAME JSON: a result fragment for run-all.sh (BENCH_OUT is its directory); always echoed.
emit() {
  echo "result $1: $2"
  if [ -n "${BENCH_OUT:-}" ]; then printf '%s\n' "$2" > "$BENCH_OUT/$1.json"; fi
}

# wait_port PORT [SECONDS]: until something listens on 127.0.0.1:PORT.
wait_port() {
  local port=$1 tries=$(( ${2:-20} * 10 ))
  for _ in $(seq 1 "$tries"); do
    ss -ltn "sport = :$port" | grep -q LISTEN && return 0
    sleep 0.1
  done
  echo "nothing listens on port $port" >&2; return 1
}

# Like for like on a 2-core machine: the server measured (gateway, nghttpd, a peer, openssl speed) runs on
# core 0 (SERVER_CPU), the load generator on core 1 (LOAD_CPU), so neither steals the other's core and one
# gateway loop meets one nghttpd worker. On a single core nothing is pinned.
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
# Prefixes (arrays) for a command started in the background: `"${SERVER_PIN[@]}" server … &` keeps `$!` the
# server's own pid (taskset execs it), so the script's cleanup really stops it. A shell function would put
# a subshell in between, and a server left running with SO_REUSEPORT silently takes a share of the next
# run's connections.
SERVER_PIN=(); LOAD_PIN=()
if [ "$(nproc)" -ge 2 ]; then SERVER_PIN=(taskset -c "$SERVER_CPU"); LOAD_PIN=(taskset -c "$LOAD_CPU"); fi
on_server_core() { "${SERVER_PIN[@]}" "$@"; }
on_load_core() { "${LOAD_PIN[@]}" "$@"; }

# The reference: nghttpd serves the gateway's health Check answer (the 7-byte gRPC frame saying SERVING) as a
# static file at the very path a gRPC client asks the gateway for, and h2load sends both servers the same
# headers, so both receive the same request bytes. The path counts: HPACK never indexes :path, so every request
# carries it as a Huffman-coded literal the server decodes (28 characters here: a shorter path for nghttpd
# alone made the reference ~0.3 µs a call cheaper; bench/README.md, "Placement").
HEALTH_PATH=grpc.health.v1.Health/Check
GRPC_HEADERS=(-H 'content-type: application/grpc' -H 'te: trailers')
reference_www() { mkdir -p "$1/${HEALTH_PATH%/*}" && printf '\x00\x00\x00\x00\x02\x08\x01' > "$1/$HEALTH_PATH"; }

# grpc_ok URL BODY: fails unless one call answers grpc-status 0. h2load counts any HTTP 200 as a success, and
# a gRPC error is an HTTP 200: a benchmark must first prove it measures answers, not refusals.
grpc_ok() {
  local status
  status=$(nghttp -v -d "$2" -H 'content-type: application/grpc' -H 'te: trailers' "$1" 2>&1 |
    grep -a -o -E 'grpc-status: [0-9]+' | head -n 1)
  [ "$status" = "grpc-status: 0" ] || { echo "not an OK answer from $1: ${status:-no grpc-status}" >&2; return 1; }
}

# verify_request SAMPLE OUT [APP]: OUT becomes a gRPC frame holding VerifyJWSRequest{jws: the JWS in SAMPLE,
# app: APP when given}, the message encoded by protoc-c itself.
verify_request() {
  { printf 'jws: "%s"\n' "$(tr -d '\n' < "$1")"; [ -z "${3:-}" ] || printf 'app: "%s"\n' "$3"; } |
    protoc-c -Iproto -I/usr/include --encode=appstore.gateway.v1.VerifyJWSRequest appstore/gateway/v1/verify.proto \
    > "$2.message"
  python3 - "$2.message" "$2" <<'PY'
import struct, sys
payload = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b"\0" + struct.pack(">I", len(payload)) + payload)
PY
  rm -f "$2.message"
}

# latency_bursts LOG COMMAND…: BURSTS bursts of BURST sequential calls (1 connection, 1 stream), 1.1 s apart (Apple's
# budget refills in between), each h2load's per-request lines appended to LOG (emptied first). COMMAND is h2load
# with its request (or a function that runs it), before or after its URL; a burst with failures is reported.
latency_bursts() {
  local log=$1 lines out; shift
  lines=$(mktemp -u); out=$(mktemp)
  : > "$log"
  for _ in $(seq 1 "$BURSTS"); do
    "$@" -n "$BURST" -c 1 -m 1 --log-file "$lines" > "$out" 2>&1
    grep -q " $BURST succeeded" "$out" || echo "a latency burst had failures: $(grep -a '^requests:' "$out")" >&2
    cat "$lines" >> "$log" 2>/dev/null; rm -f "$lines"; sleep 1.1
  done
  rm -f "$out"
}
