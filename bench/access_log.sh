#!/usr/bin/env bash
# What one access-log line costs the thread finishing an RPC: the old path (swift-log + JSON handler, one
# write(2) per line) against the gateway's (line built as bytes, queued for the writer thread), both
# writing into a pipe that a reader drains; and what any other line a loop logs costs (a warning with five
# metadata fields through swift-log and the JSON handler with the trace metadata provider, as `serve` logs,
# its bytes queued). Medians over ROUNDS rounds with their spread.
#
#   bench/access_log.sh                 # 5 rounds of 200,000 lines
#   ROUNDS=9 LINES=500000 bench/access_log.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-5}
LINES=${LINES:-$( [ "${QUICK:-0}" = 1 ] && echo 50000 || echo 200000 )}
swift build -c release --product log-benchmark >/dev/null
on_server_core .build/release/log-benchmark "$LINES" "$ROUNDS" > "${TMPDIR:-/tmp}/access_log.$$.jsonl"
result=$(python3 - "${TMPDIR:-/tmp}/access_log.$$.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
def stat(key):
    values = sorted(r[key] / 1000 for r in rows)
    return {"median": statistics.median(values), "min": values[0], "max": values[-1], "runs": values}
print(json.dumps({"gateway_us_per_line": stat("ns_per_line_queued_bytes"),
                  "swift_log_us_per_line": stat("ns_per_line_swift_log_sync"),
                  "other_line_us": stat("ns_per_other_line_queued")}))
PY
)
emit access_log "$result"
python3 -c '
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
for key, what in (("ns_per_line_swift_log_sync", "swift-log + JSON handler, written inline"),
                  ("ns_per_line_queued_bytes", "bytes queued for the log writer thread (the gateway)"),
                  ("ns_per_other_line_queued", "any other line (swift-log, the JSON handler, queued)")):
    values = sorted(r[key] for r in rows)
    print(f"{what}: median {statistics.median(values) / 1000:.2f} us per line "
          f"(min {values[0] / 1000:.2f}, max {values[-1] / 1000:.2f}, {len(values)} rounds)")
' "${TMPDIR:-/tmp}/access_log.$$.jsonl"
rm -f "${TMPDIR:-/tmp}/access_log.$$.jsonl"
