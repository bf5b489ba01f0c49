"""Soak: mixed load on a release gateway in front of a fault-injecting simulator, RSS sampled every 10 s.

  .venv/bin/python bench/soak.py [SECONDS]          (default 600; `make soak` runs it)

Load (loopback only, bounded by SECONDS): GetHistory (some with all_pages, some with 50 ms deadlines),
VerifyJWS (genuine and garbage), StreamNotifications read partly then cancelled, health checks. The
simulator answers 5000001 on every 7th call (retried by the gateway). Passes when the process stays up,
every error is one the load provoked (UNAVAILABLE after injected faults, DEADLINE_EXCEEDED, CANCELLED),
the gateway sent no GOAWAY INTERNAL_ERROR (its appstore_gateway_goaway_sent_total, scraped at the end: the
calls' outcomes do not show one, since grpcio re-dials), and RSS shows no growth trend: the mean of the last
third of samples is within 15 % + 8 MiB of the middle third's."""
import concurrent.futures
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import grpc
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
from conftest import STUBS_DIR  # noqa: E402,F401  (generates the stubs)
from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2, notification_pb2, verify_pb2  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

BIN = os.path.join(ROOT, ".build", "release", "appstore-gateway")
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 600.0
ALLOWED = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


def main():
    state = tempfile.mkdtemp(prefix="soak-")
    sim = subprocess.Popen([BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", state, "--seed", "11",
                            "--customers", "30", "--rate-limit-scale", "100", "--fault", "error=5000001",
                            "--fault-every", "7"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert "listening" in sim.stdout.readline()
    config = yaml.safe_load(open(os.path.join(state, "gateway.yaml")))
    config.update({"listen": "127.0.0.1:0", "admin": "127.0.0.1:0", "logging": {"level": "warning"}})
    config["rateLimits"] = {"getTransactionHistory": {"perSecond": 5000, "burst": 5000},
                            "getNotificationHistory": {"perSecond": 5000, "burst": 5000}}
    yaml.safe_dump(config, open(os.path.join(state, "soak.yaml"), "w"))
    env = dict(os.environ, APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY="0s")
    gw = subprocess.Popen([BIN, "serve", "--config", os.path.join(state, "soak.yaml")], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env=env)
    port = re.search(r":(\d+)$", gw.stdout.readline().strip()).group(1)
    admin = re.search(r"admin on (http://\S+)", gw.stdout.readline()).group(1)
    index = json.load(open(os.path.join(state, "transactions.json")))
    ids = [c["transactionId"] for c in next(iter(index.values()))["Production"] if c["transactionId"]]
    jws = open(os.path.join(ROOT, "Tests", "SignedDataTests", "Fixtures", "transaction-Sandbox-1.jws")).read()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    now = time.time()
    stream_request = notification_pb2.StreamNotificationsRequest()
    stream_request.start_date.FromSeconds(int(now - 170 * 86400))
    stream_request.end_date.FromSeconds(int(now))

    counts, unexpected, lock = {}, [], threading.Lock()
    stop = time.monotonic() + SECONDS

    def record(name, code, details=""):
        with lock:
            counts[(name, code.name)] = counts.get((name, code.name), 0) + 1
            if code != grpc.StatusCode.OK and code not in ALLOWED:
                unexpected.append((name, code.name, details[:120]))

    def worker(seed):
        rng = random.Random(seed)
        while time.monotonic() < stop:
            kind = rng.choice(["history", "history", "pages", "short", "verify", "garbage", "stream", "health"])
            try:
                if kind in ("history", "pages", "short"):
                    stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=rng.choice(ids), all_pages=kind == "pages"),
                                    timeout=0.05 if kind == "short" else 20)
                elif kind in ("verify", "garbage"):
                    stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws if kind == "verify" else "x.y.z"), timeout=5)
                elif kind == "stream":
                    call = stub.StreamNotifications(stream_request, timeout=20)
                    for i, _ in enumerate(call):
                        if i >= rng.randint(1, 30):
                            call.cancel()
                            break
                else:
                    health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                record(kind, grpc.StatusCode.OK)
            except grpc.RpcError as error:
                record(kind, error.code(), error.details() or "")

    samples = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(worker, i) for i in range(8)]
        while time.monotonic() < stop:
            rss = int(next(l for l in open(f"/proc/{gw.pid}/status") if l.startswith("VmRSS")).split()[1])
            samples.append(rss)
            print(f"t={len(samples) * 10 - 10:4d}s rss={rss / 1024:.1f} MiB calls={sum(counts.values())}", flush=True)
            if gw.poll() is not None:
                break
            time.sleep(min(10, max(0, stop - time.monotonic())))
        for f in futures:
            f.result()
    alive = gw.poll() is None
    goaways = goaways_sent(admin) if alive else {}
    gw.send_signal(signal.SIGTERM)
    exit_code = gw.wait(timeout=30)
    sim.terminate()
    sim.wait(timeout=10)

    third = max(1, len(samples) // 3)
    middle = sum(samples[third:2 * third]) / max(1, len(samples[third:2 * third]))
    last = sum(samples[-third:]) / third
    growth_ok = last <= middle * 1.15 + 8 * 1024
    print(json.dumps({"seconds": SECONDS, "calls": {f"{k[0]}:{k[1]}": v for k, v in sorted(counts.items())},
                      "rss_mib_middle": round(middle / 1024, 1), "rss_mib_last": round(last / 1024, 1),
                      "goaways_sent": goaways, "unexpected": unexpected[:10], "alive": alive, "exit": exit_code},
                     indent=1))
    ok = alive and exit_code == 0 and not unexpected and growth_ok and len(samples) >= 3 and \
        goaways.get("INTERNAL_ERROR", 0) == 0
    print("soak: PASS" if ok else "soak: FAIL")
    return 0 if ok else 1


def goaways_sent(admin):
    """GOAWAY frames the gateway sent so far, by code (appstore_gateway_goaway_sent_total)."""
    text = urllib.request.urlopen(admin + "/metrics", timeout=10).read().decode()
    prefix = 'appstore_gateway_goaway_sent_total{code="'
    return {line[len(prefix):].split('"', 1)[0]: int(float(line.rsplit(" ", 1)[1]))
            for line in text.splitlines() if line.startswith(prefix)}


if __name__ == "__main__":
    sys.exit(main())
