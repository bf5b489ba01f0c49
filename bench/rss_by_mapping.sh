#!/usr/bin/env bash
# Where the resident memory is: the gateway's and nghttpd's RSS while 1,000 streams are open (h2load -c 10
# -m 100, health Check / a static file, one loop / one worker), summed per group of mappings from
# /proc/<pid>/smaps: Foundation, Swift's runtime, the C libraries both servers map, the other C libraries,
# the program itself, anonymous memory. Shows the floor under the peak-RSS figure of bench/scale.sh.
# Run alone, not by `make bench`.
#
#   bench/rss_by_mapping.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

PORT=${PORT:-30176}
BIN=${BIN:-.build/release/appstore-gateway}
command -v h2load >/dev/null && command -v nghttpd >/dev/null || scripts/install-deps.sh
[ -x "$BIN" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
cleanup() { kill "${pid:-}" "${load_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
printf '\x00\x00\x00\x00\x00' > "$work/health.bin"
reference_www "$work/www"

groups() {  # PID -> "MiB group" lines
  awk '
    /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6 ? $6 : "[anonymous]") }
    /^Rss:/ { rss[name] += $2 }
    END {
      for (n in rss) {
        g = "other C libraries"
        if (n ~ /appstore-gateway|nghttpd/) g = "the program"
        else if (n ~ /libFoundation|_FoundationICU/) g = "Foundation"
        else if (n ~ /swift|libdispatch|libBlocksRuntime/) g = "Swift runtime"
        else if (n ~ /libcrypto|libssl|libc\.so|libm\.so|ld-linux|libstdc|libgcc|libnghttp2|libz\.so|libev/) g = "C libraries both map"
        else if (n ~ /^\[/) g = "anonymous"
        sum[g] += rss[n]
      }
      for (g in sum) printf "%6.1f MiB  %s\n", sum[g] / 1024, g
    }' "/proc/$1/smaps" | sort -rn
}

for server in gateway nghttpd; do
  if [ "$server" = nghttpd ]; then
    nghttpd --no-tls -n 1 -d "$work/www" "$PORT" > /dev/null 2>&1 &
    url="http://127.0.0.1:$PORT/$HEALTH_PATH"; headers=("${GRPC_HEADERS[@]}")
  else
    "$BIN" serve --listen "127.0.0.1:$PORT" --threads 1 > /dev/null 2>&1 &
    url="http://127.0.0.1:$PORT/$HEALTH_PATH"; headers=("${GRPC_HEADERS[@]}")
  fi
  pid=$!
  wait_port "$PORT" 30; sleep 0.5
  h2load -n 400000 -c 10 -m 100 -t 1 -d "$work/health.bin" "${headers[@]}" "$url" > /dev/null &
  load_pid=$!
  sleep 1.5  # streams open
  echo "== $server: $(awk '/^VmRSS/ {printf "RSS %.1f MiB", $2 / 1024}' "/proc/$pid/status") with 1,000 streams open"
  groups "$pid"
  wait "$load_pid"; load_pid=
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  sleep 0.5
done
