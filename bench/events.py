#!/usr/bin/env python3
"""Subscription events out (issue 47): how fast and how soon the changes the webhook ingests reach the teams.

    .venv/bin/python bench/events.py [--rounds 3] [--count 3000] [--posters 8] [--json OUT]
    GATEWAY_BIN=.build/debug/appstore-gateway .venv/bin/python bench/events.py   # default: the release build

Each round starts a gateway (SQLite store, default loops, both cores) on the built-in simulator with two team
webhooks (`subscriptions.webhooks`) on a receiver of this process (a minimal asyncio HTTP/1.1 server answering
204 to every POST) and a WatchSubscriptionEvents consumer (grpcio). `--count` new purchases (each a subscription
of its own: SUBSCRIBED / INITIAL_BUY; two events each: INITIAL_PURCHASE and ENTITLEMENT_GRANTED) are posted by
`--posters` keep-alive connections as fast as the webhook answers. Figures:

- events/s delivered to a healthy team webhook: events received by one sink from the first POST to the last
  (ingestion and delivery together), and the delivery alone: the same events made by a gateway without the
  sink (whose progress was opened before them), then drained by one with it (from the first delivery to the last);
- delivery lag, from a notification's 200 to its INITIAL_PURCHASE at the webhook receiver and at the stream
  consumer: p50/p95 for every 10th purchase under that load, and one purchase at a time (nothing else posted);
- what fan-out costs Apple's answer: the webhook's 200 latency (POST sent → 200 read, one at a time) with no team
  webhook, and with three of which one stalls (never answers: each delivery waits for `timeout`), p50/p99.

The bodies are signed beforehand by the simulator, so signing is not what is measured. Prints a Markdown table
(median of the rounds, min–max) and writes JSON for bench/collect.py."""
import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
os.environ.setdefault("GATEWAY_BIN", os.path.join(ROOT, ".build", "release", "appstore-gateway"))

import conftest  # noqa: E402,F401  (generates the stubs)
import grpc  # noqa: E402
from appstore.gateway.v1 import subscription_state_pb2, subscription_state_pb2_grpc  # noqa: E402
from test_webhook import Simulator, WebhookGateway, free_port  # noqa: E402
from webhook import RawPoster, metric_total, percentile, purchases, spread  # noqa: E402


class Receiver:
    """Team endpoints on one asyncio loop (its own thread): `/ok/<n>` answer 204 at once, `/stall` never answers.
    Records when each event's body first arrived, by original transaction id and type."""

    def __init__(self):
        self.port = free_port()
        self.arrivals = {}      # (sink, originalTransactionId, type) -> perf_counter of the first arrival
        self.counts = {}        # sink -> bodies received
        self.first_last = {}    # sink -> [first, last] perf_counter
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(self.loop.create_server(lambda: _Protocol(self), "127.0.0.1", self.port))
        ready.set()
        self.loop.run_forever()
        server.close()

    @staticmethod
    def field(body, name):
        """A top-level string field of the event's JSON, found without parsing the whole body (the receiver shares
        the 2 cores with the gateway: it should cost as little as it can). The event's own fields come before
        `subscription` (field-number order), so the first match is the event's."""
        marker = b'"' + name + b'":"'
        start = body.find(marker)
        if start < 0:
            return None
        start += len(marker)
        return body[start:body.find(b'"', start)].decode()

    def received(self, path, body):
        now = time.perf_counter()
        key = (path, self.field(body, b"originalTransactionId"), self.field(body, b"type"))
        with self.lock:
            self.arrivals.setdefault(key, now)
            self.counts[path] = self.counts.get(path, 0) + 1
            span = self.first_last.setdefault(path, [now, now])
            span[1] = now

    def reset(self):
        with self.lock:
            self.arrivals.clear()
            self.counts.clear()
            self.first_last.clear()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class _Protocol(asyncio.Protocol):
    def __init__(self, receiver):
        self.receiver, self.buffer = receiver, b""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].split(b"\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4:head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length:]
            path = head[0].split(b" ")[1].decode()
            if path == "/stall":
                continue  # never answered: the gateway's timeout ends each attempt
            self.receiver.received(path, body)
            self.transport.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")


class Consumer:
    """A WatchSubscriptionEvents consumer recording when each purchase's INITIAL_PURCHASE arrived."""

    def __init__(self, gateway):
        self.channel = grpc.insecure_channel(gateway.address)
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(self.channel)
        self.call = stub.WatchSubscriptionEvents(subscription_state_pb2.WatchSubscriptionEventsRequest())
        self.arrivals, self.count = {}, 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        initial = subscription_state_pb2.SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE
        try:
            for event in self.call:
                self.count += 1
                if event.type == initial:
                    self.arrivals.setdefault(event.original_transaction_id, time.perf_counter())
        except grpc.RpcError:
            pass

    def stop(self):
        self.call.cancel()
        self.thread.join(5)
        self.channel.close()


def gateway_with(sim, sinks, secret_file, database=None):
    config = json.loads(json.dumps(sim.config))
    bundle = config["apps"][0]["bundleId"]
    config["apps"][0]["entitlements"] = {"premium": [f"{bundle}.premium.monthly"]}
    sim.config = config
    extra = {"subscriptions": {"webhooks": [
        {"url": url, "secretFile": secret_file, "timeout": "2s", "maxBackoff": "2s"} for url in sinks]}} if sinks else {}
    database = database or os.path.join(tempfile.mkdtemp(prefix="bench-events-"), "notifications.db")
    return WebhookGateway(sim, database, extra=extra)


def post_all(gw, items, posters, sampled):
    """Posts `items` over `posters` connections; records when every 10th was acknowledged."""
    shares = [list(enumerate(items))[i::posters] for i in range(posters)]
    connections = [RawPoster(gw.webhook) for _ in range(posters)]
    failures = []

    def poster(connection, share):
        for index, (original, body) in share:
            if connection.post(body) != 200:
                failures.append(original)
            elif index % 10 == 0:
                sampled[original] = time.perf_counter()

    threads = [threading.Thread(target=poster, args=(c, s)) for c, s in zip(connections, shares)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for connection in connections:
        connection.close()
    assert not failures, failures[:5]
    return started


def wait_for(predicate, timeout=120, what="events"):
    deadline = time.perf_counter() + timeout
    while not predicate():
        assert time.perf_counter() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def lags(acknowledged, arrivals):
    return [(arrivals[original] - at) * 1000 for original, at in acknowledged.items() if original in arrivals]


def answer_latencies(gw, items):
    """The webhook's 200 latency, one POST at a time."""
    connection = RawPoster(gw.webhook)
    measured = []
    for _, body in items:
        started = time.perf_counter()
        assert connection.post(body) == 200
        measured.append((time.perf_counter() - started) * 1000)
        time.sleep(0.005)
    connection.close()
    return measured


def stat(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--posters", type=int, default=8)
    parser.add_argument("--alone", type=int, default=100)
    parser.add_argument("--json")
    args = parser.parse_args()
    sim = Simulator()
    receiver = Receiver()
    secret_file = os.path.join(tempfile.mkdtemp(prefix="bench-events-secret-"), "secret")
    with open(secret_file, "w") as f:
        f.write("bench-secret\n")
    os.chmod(secret_file, 0o600)
    keys = ("events_per_s", "drain_events_per_s", "webhook_p50_ms", "webhook_p95_ms", "stream_p50_ms", "stream_p95_ms",
            "alone_webhook_p50_ms", "alone_webhook_p95_ms", "alone_stream_p50_ms", "alone_stream_p95_ms",
            "answer_plain_p50_ms", "answer_plain_p99_ms", "answer_fanout_p50_ms", "answer_fanout_p99_ms")
    figures = {key: [] for key in keys}
    try:
        started = time.perf_counter()
        pool = purchases(sim, args.count + 3 * args.alone + 50)
        print(f"signed {len(pool)} purchases in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        warm, measured = pool[:50], pool[50:50 + args.count]
        alone, plain, fanout = (pool[50 + args.count + i * args.alone:50 + args.count + (i + 1) * args.alone]
                                for i in range(3))
        for round_number in range(args.rounds):
            receiver.reset()
            gw = gateway_with(sim, [receiver.url("/ok/1"), receiver.url("/ok/2")], secret_file)
            consumer = Consumer(gw)
            try:
                time.sleep(0.3)
                post_all(gw, warm, 2, {})
                wait_for(lambda: receiver.counts.get("/ok/1", 0) >= 2 * len(warm))
                receiver.reset()
                sampled = {}
                first_post = post_all(gw, measured, args.posters, sampled)
                wait_for(lambda: receiver.counts.get("/ok/1", 0) >= 2 * len(measured))
                last = receiver.first_last["/ok/1"][1]
                figures["events_per_s"].append(2 * len(measured) / (last - first_post))
                hooks = {o: t for (p, o, k), t in receiver.arrivals.items()
                         if p == "/ok/1" and k == "SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE"}
                wait_for(lambda: all(o in consumer.arrivals for o in sampled), what="the stream")
                loaded_hook, loaded_stream = lags(sampled, hooks), lags(sampled, consumer.arrivals)
                # One at a time.
                single = {}
                connection = RawPoster(gw.webhook)
                for original, body in alone:
                    assert connection.post(body) == 200
                    single[original] = time.perf_counter()
                    wait_for(lambda: (("/ok/1", original, "SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE")
                                      in receiver.arrivals) and original in consumer.arrivals, 10)
                    time.sleep(0.01)
                connection.close()
                hooks = {o: t for (p, o, k), t in receiver.arrivals.items()
                         if p == "/ok/1" and k == "SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE"}
                alone_hook, alone_stream = lags(single, hooks), lags(single, consumer.arrivals)
            finally:
                consumer.stop()
                gw.stop()
            for key, values in (("webhook", loaded_hook), ("stream", loaded_stream),
                                ("alone_webhook", alone_hook), ("alone_stream", alone_stream)):
                figures[f"{key}_p50_ms"].append(percentile(values, 0.50))
                figures[f"{key}_p95_ms"].append(percentile(values, 0.95))
            # Delivery alone: a backlog drained. The team's sink is opened on an empty store (its progress starts
            # there), the events are made by a gateway without it, then a gateway with it delivers them all.
            receiver.reset()
            database = os.path.join(tempfile.mkdtemp(prefix="bench-events-drain-"), "notifications.db")
            gw = gateway_with(sim, [receiver.url("/drain")], secret_file, database)
            time.sleep(0.5)
            gw.stop()
            gw = gateway_with(sim, [], secret_file, database)
            try:
                post_all(gw, measured, args.posters, {})
                wait_for(lambda: metric_total(gw, "appstore_gateway_state_events_total") >= 2 * len(measured))
            finally:
                gw.stop()
            gw = gateway_with(sim, [receiver.url("/drain")], secret_file, database)
            try:
                wait_for(lambda: receiver.counts.get("/drain", 0) >= 2 * len(measured))
                first, last = receiver.first_last["/drain"]
                figures["drain_events_per_s"].append(2 * len(measured) / (last - first))
            finally:
                gw.stop()
            # Apple's answer with no team webhook, then with three of which one stalls.
            for name, sinks, items in (("plain", [], plain),
                                       ("fanout", [receiver.url("/ok/3"), receiver.url("/ok/4"), receiver.url("/stall")],
                                        fanout)):
                gw = gateway_with(sim, sinks, secret_file)
                try:
                    answer_latencies(gw, warm[:20])
                    measured_answers = answer_latencies(gw, items)
                finally:
                    gw.stop()
                figures[f"answer_{name}_p50_ms"].append(percentile(measured_answers, 0.50))
                figures[f"answer_{name}_p99_ms"].append(percentile(measured_answers, 0.99))
            print(f"round {round_number + 1}: " + ", ".join(f"{k} {figures[k][-1]:.1f}" for k in keys), file=sys.stderr)
    finally:
        receiver.stop()
        sim.stop()
    print(f"binary: {os.environ['GATEWAY_BIN']}; {args.rounds} rounds; {args.count} purchases ({2 * args.count} "
          f"events), {args.posters} keep-alive posters; one at a time: {args.alone}; load average after "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| figure | median (min–max) | goal |")
    print("| --- | --- | --- |")
    print(f"| events/s to a healthy team webhook, ingestion and delivery together (2 sinks, stream consumer on) | "
          f"{spread(figures['events_per_s'])} | |")
    print(f"| events/s to a healthy team webhook, delivery alone (a backlog drained) | "
          f"{spread(figures['drain_events_per_s'])} | ≥ 2,000 |")
    for key, name, goal in (("webhook", "200 → team webhook", "p95 ≤ 100"), ("stream", "200 → stream consumer", "p95 ≤ 100")):
        for p in ("p50", "p95"):
            print(f"| {name}, {p} ms, under that load | {spread(figures[f'{key}_{p}_ms'], '{:.1f}')} | "
                  f"{goal if p == 'p95' else ''} |")
            print(f"| {name}, {p} ms, one purchase at a time | {spread(figures[f'alone_{key}_{p}_ms'], '{:.1f}')} | "
                  f"{goal if p == 'p95' else ''} |")
    for p in ("p50", "p99"):
        print(f"| webhook 200 latency {p} ms, no team webhook | {spread(figures[f'answer_plain_{p}_ms'], '{:.2f}')} | |")
        print(f"| webhook 200 latency {p} ms, 3 team webhooks, one stalling | "
              f"{spread(figures[f'answer_fanout_{p}_ms'], '{:.2f}')} | unchanged |")
    out = args.json or (os.path.join(os.environ["BENCH_OUT"], "events.json") if os.environ.get("BENCH_OUT") else None)
    if out:
        json.dump({key: stat(values) for key, values in figures.items()}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
