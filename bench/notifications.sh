#!/usr/bin/env bash
# StreamNotifications benchmark, one command, two figures:
#   1. records/second streamed through the gateway from the simulator (every record verified and decoded,
#      three JWS each), next to the same pages read straight from the simulator (no verification);
#   2. the gateway's RSS with 100 concurrent slow streams (each reads one event per second).
#
#   bench/notifications.sh                     # release build
#   BIN=.build/debug/appstore-gateway bench/notifications.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
STREAMS=${STREAMS:-100}
HOLD_SECONDS=${HOLD_SECONDS:-10}
CUSTOMERS=${CUSTOMERS:-50}
BIN=${BIN:-.build/release/appstore-gateway}
PY=${PY:-.venv/bin/python}

[ -x "$PY" ] || make venv >/dev/null
if [ "$BIN" = .build/release/appstore-gateway ]; then swift build -c release --product appstore-gateway >/dev/null; fi

work=$(mktemp -d)
cleanup() { kill "${gw_pid:-}" "${sim_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The simulator with Apple's rates × 100, so its limits are not what is measured.
"$BIN" simulator --listen 127.0.0.1:0 --state-dir "$work/sim" --seed 7 --customers "$CUSTOMERS" \
  --rate-limit-scale 100 > "$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 50); do grep -q "listening on" "$work/sim.log" 2>/dev/null && break; sleep 0.1; done
sim_url=$(grep -o 'https://[^ ]*' "$work/sim.log" | head -1)

# The gateway's own bucket raised likewise (the defaults mirror Apple's 50/s).
APPSTORE_GATEWAY_RATE_LIMITS_GET_NOTIFICATION_HISTORY_PER_SECOND=5000 \
APPSTORE_GATEWAY_RATE_LIMITS_GET_NOTIFICATION_HISTORY_BURST=5000 \
  "$BIN" serve --config "$work/sim/gateway.yaml" --listen 127.0.0.1:0 > "$work/gw.out" 2> "$work/gw.log" &
gw_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
gw_addr=$(grep -o 'listening on [0-9.:]*' "$work/gw.out" | head -1 | awk '{print $3}')

"$PY" - "$gw_addr" "$gw_pid" "$sim_url" "$work/sim" "$ROUNDS" "$STREAMS" "$HOLD_SECONDS" <<'PY'
import json, os, sys, threading, time
sys.path.insert(0, "Tests/interop")
import conftest  # generates the stubs
import grpc, requests, yaml
from appstore.gateway.v1 import gateway_pb2_grpc, notification_pb2
from google.protobuf import timestamp_pb2

address, pid, sim_url, sim_dir, rounds, streams, hold = sys.argv[1:8]
rounds, streams, hold = int(rounds), int(streams), int(hold)
now = time.time()
def ts(seconds):
    t = timestamp_pb2.Timestamp(); t.FromMilliseconds(int(seconds * 1000)); return t
request = notification_pb2.StreamNotificationsRequest(start_date=ts(now - 179 * 86400), end_date=ts(now + 3600))
stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(address))

def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

# Reference: the same pages straight from the simulator (Apple's JSON, nothing verified).
from appstoreserverlibrary.api_client import AppStoreServerAPIClient
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(sim_dir, "tls", "ca.pem")
app = yaml.safe_load(open(os.path.join(sim_dir, "gateway.yaml")))["apps"][0]
client = AppStoreServerAPIClient(open(app["privateKeyFile"], "rb").read(), app["keyId"], app["issuerId"],
                                 app["bundleId"], Environment.PRODUCTION)
client._base_url = sim_url
def direct():
    body = NotificationHistoryRequest(startDate=request.start_date.ToMilliseconds(), endDate=request.end_date.ToMilliseconds())
    token, count = None, 0
    while True:
        page = client.get_notification_history(token, body)
        count += len(page.notificationHistory)
        if not page.hasMore:
            return count
        token = page.paginationToken

gateway_rates, direct_rates = [], []
for round in range(rounds):
    start = time.perf_counter(); count = sum(1 for _ in stub.StreamNotifications(request, timeout=300))
    gateway_rates.append(count / (time.perf_counter() - start))
    start = time.perf_counter(); n = direct()
    direct_rates.append(n / (time.perf_counter() - start))
    print(f"round {round + 1}: {count} records; gateway {gateway_rates[-1]:.0f} records/s, "
          f"simulator direct {direct_rates[-1]:.0f} records/s")
median = lambda v: sorted(v)[len(v) // 2]

idle = rss_kib()
stop = threading.Event(); received = [0] * streams; errors = []
def slow(i):
    channel = grpc.insecure_channel(address, options=[("grpc.http2.bdp_probe", 0)])
    call = gateway_pb2_grpc.AppStoreGatewayStub(channel).StreamNotifications(request, timeout=hold + 60)
    try:
        for _ in call:
            received[i] += 1
            if stop.wait(1):
                break
    except grpc.RpcError as error:
        errors.append(error.code())
    call.cancel(); channel.close()
threads = [threading.Thread(target=slow, args=(i,)) for i in range(streams)]
for t in threads: t.start()
peak = idle
deadline = time.time() + hold
while time.time() < deadline:
    time.sleep(0.5); peak = max(peak, rss_kib())
loaded = rss_kib()
stop.set()
for t in threads: t.join()
print(f"records/s through the gateway (median of {rounds}): {median(gateway_rates):.0f} "
      f"(simulator direct, unverified: {median(direct_rates):.0f}; ratio {median(gateway_rates) / median(direct_rates):.2f})")
print(f"gateway RSS: idle {idle / 1024:.1f} MiB; {streams} slow streams after {hold}s: {loaded / 1024:.1f} MiB "
      f"(peak {peak / 1024:.1f} MiB, {(loaded - idle) / streams:.0f} KiB per stream); "
      f"events read {sum(received)}, errors {len(errors)}")
PY
