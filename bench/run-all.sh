#!/usr/bin/env bash
# Every benchmark in one run (`make bench`): transport and VerifyJWS against the peers, GetHistory against the
# simulator, scale, the cost of caller authentication, the subscription state (reads with 1,000,000 subscriptions
# stored, ingestion from the webhook); then bench/results/<date>.json (gitignored) and the table + chart in
# bench/README.md.
#
#   bench/run-all.sh                          # full: 3 rounds each, ~25 minutes on 2 cores (5 of them seeding the state)
#   QUICK=1 bench/run-all.sh                  # smoke: 3 short rounds each, ~6 minutes (100,000 subscriptions stored)
#   STATE_DIR=/var/tmp/state bench/run-all.sh # keep the seeded state stores there (~14 GiB) for the next run
set -euo pipefail
cd "$(dirname "$0")/.."
export QUICK=${QUICK:-0}
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || make venv
"$PY" -c 'import matplotlib' 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check -r bench/requirements.txt
[ -x .build/release/appstore-gateway ] && [ -x .build/release/verify-benchmark ] && [ -x .build/release/log-benchmark ] &&
  [ -x .build/release/state-seed ] || swift build -c release
[ -x bench/peers/grpc-swift/.build/release/grpc-swift-peer ] ||
  swift build -c release --package-path bench/peers/grpc-swift   # first build: several minutes

export BENCH_OUT; BENCH_OUT=$(mktemp -d)
trap 'rm -rf "$BENCH_OUT"' EXIT
failed=()
for script in transport-peers verify-peers history access_log scale auth; do
  echo "== bench/$script.sh"
  bench/$script.sh || failed+=("$script")
done
# The fleet's shapes on this machine: many connections, two loops, placement, a Python caller's verified page.
for shape in 64x32 256x8; do
  echo "== bench/transport.sh at $shape"
  CLIENTS=${shape%x*} STREAMS=${shape#*x} bench/transport.sh || failed+=("transport $shape")
done
echo "== LOOPS=2 bench/verify.sh"
LOOPS=2 bench/verify.sh || failed+=("verify LOOPS=2")
echo "== bench/history_placement.sh"
BURSTS=$( [ "$QUICK" = 1 ] && echo 1 || echo 3 ) bench/history_placement.sh || failed+=("history_placement")
echo "== bench/python_caller.py"
"$PY" bench/python_caller.py --rounds 3 --calls "$( [ "$QUICK" = 1 ] && echo 20 || echo 40 )" || failed+=("python_caller")
# The subscription state (issue 46): reads with a million subscriptions stored (seeded straight into the store,
# then removed unless STATE_DIR keeps it), ingestion from the webhook.
echo "== bench/subscription_state.sh"
COUNT=$( [ "$QUICK" = 1 ] && echo 100000 || echo 1000000 ) bench/subscription_state.sh || failed+=("subscription_state")
echo "== bench/webhook.py --state"
"$PY" bench/webhook.py --state --rounds 3 --count "$( [ "$QUICK" = 1 ] && echo 3000 || echo 8000 )" ||
  failed+=("webhook --state")
# Subscription events out (issue 47): delivery to team webhooks and a stream consumer, and what fan-out costs.
echo "== bench/events.py"
"$PY" bench/events.py --rounds 3 --count "$( [ "$QUICK" = 1 ] && echo 1000 || echo 2000 )" || failed+=("events")

# The fleet's store (issue 48): ingestion into PostgreSQL with every 200 committed, GetSubscription over loopback
# against pgbench on the same server.
echo "== bench/postgres.py"
"$PY" bench/postgres.py --rounds 3 --count "$( [ "$QUICK" = 1 ] && echo 1000 || echo 4000 )" || failed+=("postgres")

mkdir -p bench/results
out=bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)$( [ "$QUICK" = 1 ] && echo -quick || true ).json
"$PY" bench/collect.py "$BENCH_OUT" "$out" "$QUICK"
"$PY" bench/report.py "$out"
echo "wrote $out, bench/README.md and bench/chart.png"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
