#!/usr/bin/env python3
"""The shared (Redis) rate budget's cost: added latency per Apple call and Redis round trips per Apple
call, at 1 and 3 replicas, against the same gateways without Redis (rounds interleaved).

    nice -n 19 .venv/bin/python bench/shared_budget.py [--rounds 3] [--seconds 4]

The simulator's limits are scaled far above the load (Apple is not the bottleneck) and so are the
gateways' rateLimits, so only the token path differs: a local bucket, or one Lua call in Redis (batched
when callers wait together).
Round trips per call: `appstore_gateway_redis_round_trips_total` / `appstore_gateway_apple_requests_total`
deltas from /metrics, with 1 and 8 concurrent callers per replica. The added latency per Apple call is
round trips per call × the mean Redis round trip (the histogram's sum / count): the only work on the call
path that the local bucket does not do. Client-side p50s with and without Redis are printed beside it, but
on a shared 2-core machine their difference is noise. Prints a Markdown table."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
os.environ.setdefault("GATEWAY_BIN", os.path.join(ROOT, ".build", "debug", "appstore-gateway"))

import grpc  # noqa: E402
import yaml  # noqa: E402
from conftest import GATEWAY_BIN, Gateway  # noqa: E402
from test_shared_budget import Redis  # noqa: E402
from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2  # noqa: E402


def metric(gateway, name):
    text = urllib.request.urlopen(gateway.admin_url + "/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def drive(gateways, transactions, callers_per_gateway, seconds):
    """Callers in a loop; returns the client-side latencies (µs) of OK calls."""
    latencies, lock = [], threading.Lock()
    stop_at = time.monotonic() + seconds

    def caller(gateway, number):
        channel = grpc.insecure_channel(gateway.address)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        count = 0
        while time.monotonic() < stop_at:
            transaction = transactions[(number * 7 + count) % len(transactions)]
            count += 1
            started = time.perf_counter()
            try:
                stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=transaction), timeout=5)
            except grpc.RpcError:
                continue
            with lock:
                latencies.append((time.perf_counter() - started) * 1e6)
        channel.close()

    threads = [threading.Thread(target=caller, args=(g, n)) for g in gateways for n in range(callers_per_gateway)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


COUNTERS = ("appstore_gateway_redis_round_trips_total", "appstore_gateway_apple_requests_total",
            "appstore_gateway_redis_command_duration_seconds_sum", "appstore_gateway_redis_command_duration_seconds_count")


def measure(gateways, transactions, callers, seconds):
    """(client p50 µs, Redis round trips per Apple call, Apple calls/s, mean Redis round trip µs)."""
    before = [[metric(g, name) for name in COUNTERS] for g in gateways]
    latencies = drive(gateways, transactions, callers, seconds)
    delta = [sum(metric(g, name) - b[i] for g, b in zip(gateways, before)) for i, name in enumerate(COUNTERS)]
    trips, calls, rtt_sum, rtt_count = delta
    return (statistics.median(latencies), trips / max(calls, 1), calls / seconds,
            rtt_sum / rtt_count * 1e6 if rtt_count else 0.0)


def spread(values, digits=0):
    fmt = f"{{:,.{digits}f}}"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    args = parser.parse_args()

    state = tempfile.mkdtemp(prefix="bench-shared-")
    simulator = subprocess.Popen(
        [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", state, "--seed", "21",
         "--customers", "40", "--rate-limit-scale", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert re.search(r"listening on https://", simulator.stdout.readline())
    redis = Redis()
    base = yaml.safe_load(open(os.path.join(state, "gateway.yaml")))
    base["apps"][0]["environment"] = "production"
    base["rateLimits"] = {"getTransactionHistory": {"perSecond": 5000, "burst": 500}}
    index = json.load(open(os.path.join(state, "transactions.json")))
    transactions = [c["transactionId"] for c in next(iter(index.values()))["Production"] if c["transactionId"]]
    paths = {}
    for name, extra in (("local", {}), ("redis", {"redis": {"url": f"redis://127.0.0.1:{redis.port}/0"}})):
        paths[name] = os.path.join(state, f"{name}.yaml")
        yaml.safe_dump({**base, **extra}, open(paths[name], "w"))
    fleets = {name: [Gateway(["--config", path]) for _ in range(3)] for name, path in paths.items()}
    results = {}
    try:
        for fleet in fleets.values():
            drive(fleet, transactions, 1, 1)  # warm connections and JWTs
        for _ in range(args.rounds):
            for replicas in (1, 3):
                for callers in (1, 8):
                    for name, fleet in fleets.items():  # interleaved: subject and reference per round
                        results.setdefault((replicas, callers, name), []).append(
                            measure(fleet[:replicas], transactions, callers, args.seconds))
    finally:
        for fleet in fleets.values():
            for gateway in fleet:
                gateway.stop()
        redis.stop()
        simulator.terminate()
        simulator.wait()

    print(f"rounds {args.rounds} × {args.seconds:g} s per cell; load average after "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    print("| replicas | callers per replica | Apple calls/s | Redis round trips per Apple call | Redis round trip µs "
          "(mean) | added µs per Apple call (trips × round trip) | GetHistory p50 µs, Redis vs local bucket |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for replicas in (1, 3):
        for callers in (1, 8):
            shared = results[(replicas, callers, "redis")]
            local = results[(replicas, callers, "local")]
            added = [s[1] * s[3] for s in shared]
            print(f"| {replicas} | {callers} | {spread([s[2] for s in shared])} | {spread([s[1] for s in shared], 2)} "
                  f"| {spread([s[3] for s in shared])} | {spread(added)} "
                  f"| {spread([s[0] for s in shared])} vs {spread([l[0] for l in local])} |")


if __name__ == "__main__":
    main()
