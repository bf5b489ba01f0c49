#!/usr/bin/env python3
"""The notification webhook with the SQLite store: notifications/s sustained (each answered 200 only after
its synchronous WAL commit) and webhook-to-follower latency (POST sent → event read by a live
StreamNotifications follower), p50 and p99.

    nice -n 19 .venv/bin/python bench/webhook.py [--rounds 3] [--count 400] [--posters 4]
    GATEWAY_BIN=.build/debug/appstore-gateway .venv/bin/python bench/webhook.py   # default: the release build

With `--state` (issue 46; `make bench` runs it): ingestion into the subscription state instead. New purchases
(each its own subscription: a lifecycle's `buy`, SUBSCRIBED / INITIAL_BUY with its signed transaction and
renewal info) are posted by `--posters` keep-alive connections at once, as fast as the webhook answers (by
bench/peers/webhook_post.c: a few µs of CPU a notification, so the posters take little of the 2 cores); the
rate is notifications per second from the first POST until the state holds every one of them (the webhook's 200
comes after the log's synchronous commit, so every acknowledgement is durable; the projector then applies the
log to the state). The latency is from a notification's 200 to its subscription being readable: the state's row
committed in the store's file, polled read-only every millisecond for every 10th purchase (the file
GetSubscription reads, through a read connection of its own that sees every commit), under that load and, with
nothing else posted, one purchase at a time. The gateway runs with its default loops on both cores, the posters
beside it. Afterwards, sampled GetSubscription answers must come from the notification, and the gateway must
not have asked Apple.

    .venv/bin/python bench/webhook.py --state [--rounds 3] [--count 8000] [--posters 32] [--json OUT]

32 deliveries in flight by default: each waits for its commit, and the log commits the deliveries waiting together
(group commit), so with few in flight the cores idle between commits (8: ~1,700/s, 64: ~2,300/s on 2 cores).

Reference, measured in the same rounds on the same disk: Python's sqlite3 inserting the same rows with the
same settings (WAL, synchronous=FULL, one commit per row), i.e. what durability alone costs. The bodies are
signed beforehand by the simulator (`POST /simulator/notifications` with `deliver: false`), so the simulator
is not what is measured. Prints a Markdown table (median of the rounds, min–max)."""
import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
os.environ.setdefault("GATEWAY_BIN", os.path.join(ROOT, ".build", "release", "appstore-gateway"))

import conftest  # noqa: E402,F401  (generates the stubs)
import grpc  # noqa: E402
import requests  # noqa: E402
from appstore.gateway.v1 import common_pb2, subscription_state_pb2, subscription_state_pb2_grpc  # noqa: E402
from test_webhook import Follower, Simulator, WebhookGateway, follow_request  # noqa: E402


def signed_bodies(sim, count, notification_type):
    bodies = []
    while len(bodies) < count:
        batch = sim.deliver("http://127.0.0.1:9/unused", notificationType=notification_type, deliver=False,
                            count=min(500, count - len(bodies)))
        bodies += [(n["notificationUUID"], json.dumps({"signedPayload": n["signedPayload"]}).encode()) for n in batch]
    return bodies


def post_all(webhook, bodies, posters):
    """`posters` keep-alive connections posting their share; returns the wall time."""
    host, port = webhook.split("//")[1].split("/")[0].split(":")
    path = "/" + webhook.split("//")[1].split("/", 1)[1]
    shares = [bodies[i::posters] for i in range(posters)]
    failures = []

    def poster(share):
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        for _, body in share:
            connection.request("POST", path, body=body, headers={"content-type": "application/json"})
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                failures.append(answer.status)
        connection.close()

    threads = [threading.Thread(target=poster, args=(share,)) for share in shares]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:5]
    return time.perf_counter() - started


def reference_rate(rows):
    """Python's sqlite3, same pragmas, one committed insert per row."""
    path = os.path.join(tempfile.mkdtemp(prefix="bench-sqlite-"), "reference.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE n(position INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT UNIQUE, payload TEXT)")
    started = time.perf_counter()
    for uuid, body in rows:
        db.execute("INSERT INTO n(uuid, payload) VALUES(?, ?) ON CONFLICT(uuid) DO NOTHING", (uuid, body.decode()))
    elapsed = time.perf_counter() - started
    db.close()
    return len(rows) / elapsed


def latencies(gw, sim, count, notification_type):
    """One POST at a time; each latency is from sending the POST to the follower reading the event. The
    follower starts first, so its catch-up (Apple's history of a window ending now) is empty."""
    follower = Follower(gw, follow_request(notification_type, start=time.time() - 1), timeout=600)
    time.sleep(1.0)
    bodies = signed_bodies(sim, count, notification_type)
    host, port = gw.webhook.split("//")[1].split("/")[0].split(":")
    path = "/" + gw.webhook.split("//")[1].split("/", 1)[1]
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    measured = []
    for index, (_, body) in enumerate(bodies):
        started = time.perf_counter()
        connection.request("POST", path, body=body, headers={"content-type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200
        waited = time.perf_counter()
        while len(follower.events) <= index:
            assert follower.thread.is_alive(), follower.error
            assert time.perf_counter() - waited < 10, f"event {index} never reached the follower"
            time.sleep(0.0002)
        measured.append((time.perf_counter() - started) * 1000)
        time.sleep(0.01)
    connection.close()
    follower.cancel()
    return measured


def spread(values, fmt="{:,.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


# ---- Ingestion into the subscription state (--state) ----


def purchases(sim, count, workers=4):
    """`count` new purchases, each a lifecycle of its own bought once (signed by the simulator, not delivered, the
    lifecycle ended at once): (originalTransactionId, body) for each notification the buy sends."""
    def make(share):
        session = requests.Session()
        made = []
        for _ in range(share):
            started = session.post(sim.url + "/simulator/lifecycles", verify=sim.ca, timeout=30, json={
                "name": "bench-purchase", "steps": [{"step": "buy", "product": "premium.monthly"}],
                "environment": "Sandbox", "deliver": False})
            assert started.status_code == 200, started.text
            original = started.json()["originalTransactionId"]
            step = session.post(f"{sim.url}/simulator/lifecycles/{original}/step", verify=sim.ca, timeout=30)
            assert step.status_code == 200, step.text
            session.delete(f"{sim.url}/simulator/lifecycles/{original}", verify=sim.ca, timeout=30)
            made += [(original, json.dumps({"signedPayload": n["signedPayload"]}).encode())
                     for n in step.json()["notifications"]]
        session.close()
        return made

    shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return [item for part in pool.map(make, shares) for item in part]


class FastPoster:
    """Posts pre-encoded bodies over `posters` keep-alive HTTP/1.1 connections at once with bench/peers/webhook_post.c
    (a few microseconds of CPU a notification: the posters share the 2 cores with the gateway, and a Python poster
    took 259–574 µs of them per notification). Times are CLOCK_MONOTONIC, the clock of time.perf_counter."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="bench-poster-")
        self.binary = os.path.join(self.dir, "webhook_post")
        subprocess.run(["cc", "-O2", "-pthread", "-o", self.binary, os.path.join(ROOT, "bench", "peers", "webhook_post.c")],
                       check=True)
        self.cpu_seconds = 0.0   # the poster processes' CPU, every run so far

    def post(self, url, bodies, posters, sample_every=0, on_ack=None):
        """Posts every body; returns (started, finished) in perf_counter seconds. `on_ack(index, at)` is called for
        every `sample_every`-th body answered 200 as the answer comes. Fails when any answer was not 200."""
        hostport, path = url.split("//")[1].split("/", 1)
        host, port = hostport.split(":")
        file = os.path.join(self.dir, "bodies")
        with open(file, "wb") as out:
            for body in bodies:
                out.write(b"%d\n" % len(body) + body)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen([self.binary, host, port, "/" + path, str(posters), file, str(sample_every)],
                                stdout=subprocess.PIPE, text=True)
        started = finished = None
        failures = 0
        for line in proc.stdout:
            kind, *rest = line.split()
            if kind == "start":
                started = float(rest[0])
            elif kind == "ack" and on_ack:
                on_ack(int(rest[0]), float(rest[1]))
            elif kind == "done":
                finished, failures = float(rest[0]), int(rest[1])
        assert proc.wait() == 0, "the poster failed"
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu_seconds += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert failures == 0, f"{failures} notifications were not answered 200"
        return started, finished


class RawPoster:
    """One keep-alive HTTP/1.1 connection posting pre-encoded bodies, one at a time, from Python (latencies)."""

    def __init__(self, url):
        host, port = url.split("//")[1].split("/")[0].split(":")
        path = "/" + url.split("//")[1].split("/", 1)[1]
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\ncontent-type: application/json\r\n"
                     "content-length: ").encode()
        self.buffer = b""

    def post(self, body):
        self.sock.sendall(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            assert name.strip().lower() != b"transfer-encoding", "a chunked answer"
        self.buffer = rest
        while len(self.buffer) < length:
            self._read()
        self.buffer = self.buffer[length:]
        return status

    def _read(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the webhook closed the connection")
        self.buffer += data

    def close(self):
        self.sock.close()


class StateWatch:
    """Polls the store's file read-only (WAL: it sees every commit) for the records of sampled purchases: when each
    first became readable."""

    def __init__(self, database):
        self.db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, check_same_thread=False)
        self.pending = {}   # original id -> when its 200 came (perf_counter)
        self.early = set()  # records seen before their 200 was (a 200 and a poll racing)
        self.latencies = []
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def acknowledged(self, original, at):
        with self.lock:
            if original in self.early:   # readable before its 200 was read here: no wait to count
                self.early.discard(original)
                self.latencies.append(0.0)
            else:
                self.pending[original] = at

    def _run(self):
        # Only rows added since the last poll are read (by rowid), so a poll costs the new records, not the
        # purchases still waited for: a watcher that asked for every pending id each millisecond took more CPU the
        # further the state fell behind, from the gateway it was measuring.
        last = self.db.execute("SELECT coalesce(max(rowid), 0) FROM subscription_records").fetchone()[0]
        while self.running:
            rows = self.db.execute(
                "SELECT rowid, original_transaction_id FROM subscription_records WHERE rowid > ? ORDER BY rowid",
                (last,)).fetchall()
            if rows:
                last = rows[-1][0]
                now = time.perf_counter()
                with self.lock:
                    for _, original in rows:
                        acknowledged = self.pending.pop(original, None)
                        if acknowledged is not None:
                            self.latencies.append((now - acknowledged) * 1000)
                        else:
                            self.early.add(original)
            time.sleep(0.001)

    def wait_empty(self, timeout=60):
        deadline = time.perf_counter() + timeout
        while self.pending:
            assert time.perf_counter() < deadline, f"{len(self.pending)} purchases never became readable"
            time.sleep(0.005)

    def stop(self):
        self.running = False
        self.thread.join()


def record_count(database):
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM subscription_records").fetchone()[0]


def wait_records(database, count, timeout=120):
    deadline = time.perf_counter() + timeout
    while (have := record_count(database)) < count:
        assert time.perf_counter() < deadline, f"the state holds {have} of {count} subscriptions"
        time.sleep(0.002)
    return time.perf_counter()


def ingest(gw, database, items, posters, watch, poster, sample_every=10):
    """Posts `items` over `posters` connections at once (`poster`: a FastPoster); returns (seconds until every 200,
    seconds until the state held them all), both from the first POST."""
    before = record_count(database)
    started, acknowledged = poster.post(
        gw.webhook, [body for _, body in items], posters, sample_every,
        lambda index, at: watch.acknowledged(items[index][0], at))
    in_state = wait_records(database, before + len({original for original, _ in items}))
    return acknowledged - started, in_state - started


def one_at_a_time(gw, items, watch):
    """Each purchase posted alone, 20 ms apart, and waited for until readable."""
    connection = RawPoster(gw.webhook)
    for original, body in items:
        assert connection.post(body) == 200
        watch.acknowledged(original, time.perf_counter())
        watch.wait_empty(10)
        time.sleep(0.02)
    connection.close()


def cpu_seconds(pid):
    """The process's CPU time so far (user + system, every thread)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric_total(gw, name):
    return sum(float(line.rsplit(" ", 1)[1]) for line in gw.metrics().splitlines()
               if line.startswith(name + "{") or line.startswith(name + " "))


def check_answers(gw, items):
    """A few GetSubscription answers: from the notification, entitled, the very transaction posted."""
    channel = grpc.insecure_channel(gw.address)
    stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
    for original, body in items:
        payload = json.loads(body)["signedPayload"].split(".")[1]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["data"]
        reply = stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(
            original_transaction_id=original, environment=common_pb2.ENVIRONMENT_SANDBOX), timeout=10).subscription
        assert reply.source == subscription_state_pb2.SUBSCRIPTION_SOURCE_NOTIFICATION, reply
        assert reply.entitled and reply.signed_transaction_info == data["signedTransactionInfo"]
    channel.close()
    assert metric_total(gw, "appstore_gateway_state_apple_reads_total") == 0, "the state asked Apple"
    assert metric_total(gw, "appstore_gateway_state_rejected_total") == 0, "the state rejected a notification"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def stat(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def state_main(args):
    sim = Simulator()
    poster = FastPoster()
    alone_count = 100
    figures = {key: [] for key in ("rate", "webhook_rate", "reference", "p50_ms", "p95_ms", "p99_ms",
                                   "alone_p50_ms", "alone_p95_ms", "cpu_us", "poster_cpu_us")}
    try:
        started = time.perf_counter()
        pool = purchases(sim, args.count + alone_count + 50)
        print(f"signed {len(pool)} purchases in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        warm, measured, alone = pool[:50], pool[50:50 + args.count], pool[50 + args.count:]
        for round_number in range(args.rounds):
            database = os.path.join(tempfile.mkdtemp(prefix="bench-state-"), "notifications.db")
            figures["reference"].append(reference_rate([(str(i), body) for i, (_, body) in enumerate(measured)]))
            gw = WebhookGateway(sim, database)
            try:
                watch = StateWatch(database)
                ingest(gw, database, warm, args.posters, watch, poster)   # chains verified, caches warm
                watch.wait_empty()
                watch.latencies.clear()
                cpu, mine = cpu_seconds(gw.proc.pid), cpu_seconds(os.getpid()) + poster.cpu_seconds
                acked, in_state = ingest(gw, database, measured, args.posters, watch, poster)
                figures["cpu_us"].append((cpu_seconds(gw.proc.pid) - cpu) * 1e6 / len(measured))
                figures["poster_cpu_us"].append(
                    (cpu_seconds(os.getpid()) + poster.cpu_seconds - mine) * 1e6 / len(measured))
                watch.wait_empty()
                loaded = list(watch.latencies)
                watch.latencies.clear()
                one_at_a_time(gw, alone, watch)
                alone_latencies = list(watch.latencies)
                watch.stop()
                check_answers(gw, measured[::max(1, len(measured) // 20)] + alone[-3:])
            finally:
                gw.stop()
            figures["rate"].append(len(measured) / in_state)
            figures["webhook_rate"].append(len(measured) / acked)
            figures["p50_ms"].append(percentile(loaded, 0.50))
            figures["p95_ms"].append(percentile(loaded, 0.95))
            figures["p99_ms"].append(percentile(loaded, 0.99))
            figures["alone_p50_ms"].append(percentile(alone_latencies, 0.50))
            figures["alone_p95_ms"].append(percentile(alone_latencies, 0.95))
            print(f"round {round_number + 1}: {figures['rate'][-1]:,.0f} notifications/s into the state "
                  f"(webhook 200s at {figures['webhook_rate'][-1]:,.0f}/s; sqlite3 {figures['reference'][-1]:,.0f}/s); "
                  f"readable after the 200: p50 {figures['p50_ms'][-1]:.1f} ms, p95 {figures['p95_ms'][-1]:.1f} ms, "
                  f"p99 {figures['p99_ms'][-1]:.1f} ms under load ({len(loaded)} sampled), alone p50 "
                  f"{figures['alone_p50_ms'][-1]:.1f} ms p95 {figures['alone_p95_ms'][-1]:.1f} ms; gateway CPU "
                  f"{figures['cpu_us'][-1]:.0f} µs per notification (posters and watcher "
                  f"{figures['poster_cpu_us'][-1]:.0f} µs)", file=sys.stderr)
    finally:
        sim.stop()
    ratios = [r / ref for r, ref in zip(figures["rate"], figures["reference"])]
    result = {key: stat(values) for key, values in figures.items()}
    result.update({"vs_reference": stat(ratios), "count": args.count, "posters": args.posters, "alone": alone_count})
    print(f"binary: {os.environ['GATEWAY_BIN']}; {args.rounds} rounds; {args.count} new purchases, {args.posters} "
          f"keep-alive posters; load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| figure | gateway | reference | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| notifications/s into the subscription state (every 200 durable, {args.posters} deliveries in flight) | {spread(figures['rate'])} | "
          f"{spread(figures['reference'])} (sqlite3, the log's rows alone) | {spread(ratios, '{:.2f}')} |")
    print(f"| webhook 200s/s in the same runs | {spread(figures['webhook_rate'])} | — | — |")
    print(f"| gateway CPU µs per notification (every thread: HTTP, verification, log, projection) | "
          f"{spread(figures['cpu_us'])} | — | — |")
    print(f"| CPU µs per notification of the posters (bench/peers/webhook_post.c) and the watcher (Python), same cores | "
          f"{spread(figures['poster_cpu_us'])} | — | — |")
    for key, name in (("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99")):
        print(f"| 200 → readable in the state, {name} ms, under that load | {spread(figures[key], '{:.1f}')} | — | — |")
    for key, name in (("alone_p50_ms", "p50"), ("alone_p95_ms", "p95")):
        print(f"| 200 → readable in the state, {name} ms, one purchase at a time | {spread(figures[key], '{:.1f}')} | — | — |")
    out = args.json or (os.path.join(os.environ["BENCH_OUT"], "state_ingest.json") if os.environ.get("BENCH_OUT") else None)
    if out:
        json.dump(result, open(out, "w"), indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, help="notifications posted per round (400; with --state 8000)")
    parser.add_argument("--posters", type=int, help="keep-alive connections posting at once (4; with --state 32)")
    parser.add_argument("--latency-count", type=int, default=200)
    parser.add_argument("--state", action="store_true", help="ingestion into the subscription state instead")
    parser.add_argument("--json", help="with --state: where to write the figures (default: $BENCH_OUT/state_ingest.json)")
    args = parser.parse_args()
    if args.state:
        args.count = args.count or 8000
        args.posters = args.posters or 32
        return state_main(args)
    args.count = args.count or 400
    args.posters = args.posters or 4
    sim = Simulator()
    rates, references, p50s, p99s = [], [], [], []
    try:
        for round_number in range(args.rounds):
            database = os.path.join(tempfile.mkdtemp(prefix="bench-webhook-"), "notifications.db")
            gw = WebhookGateway(sim, database)
            try:
                bodies = signed_bodies(sim, args.count, "PRICE_CHANGE")
                references.append(reference_rate(bodies))
                rates.append(len(bodies) / post_all(gw.webhook, bodies, args.posters))
                measured = latencies(gw, sim, args.latency_count, "REVOKE")
                measured.sort()
                p50s.append(measured[len(measured) // 2])
                p99s.append(measured[min(len(measured) - 1, int(len(measured) * 0.99))])
            finally:
                gw.stop()
            print(f"round {round_number + 1}: {rates[-1]:,.0f}/s (sqlite3 {references[-1]:,.0f}/s), "
                  f"p50 {p50s[-1]:.2f} ms, p99 {p99s[-1]:.2f} ms", file=sys.stderr)
    finally:
        sim.stop()
    ratios = [r / ref for r, ref in zip(rates, references)]
    print(f"binary: {os.environ['GATEWAY_BIN']}; {args.rounds} rounds; {args.count} notifications, "
          f"{args.posters} keep-alive posters; latency over {args.latency_count} sequential posts; "
          f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| figure | gateway | reference | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| webhook notifications/s sustained (200 after a synchronous WAL commit) | {spread(rates)} | "
          f"{spread(references)} (sqlite3, same pragmas) | {spread(ratios, '{:.2f}')} |")
    print(f"| webhook → follower latency p50 (ms) | {spread(p50s, '{:.2f}')} | — | — |")
    print(f"| webhook → follower latency p99 (ms) | {spread(p99s, '{:.2f}')} | — | — |")


if __name__ == "__main__":
    main()
