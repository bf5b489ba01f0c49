#!/usr/bin/env python3
"""The notification webhook with the SQLite store: notifications/s sustained (each answered 200 only after
its synchronous WAL commit) and webhook-to-follower latency (POST sent → event read by a live
StreamNotifications follower), p50 and p99.

    nice -n 19 .venv/bin/python bench/webhook.py [--rounds 3] [--count 400] [--posters 4]
    GATEWAY_BIN=.build/debug/appstore-gateway .venv/bin/python bench/webhook.py   # default: the release build

Reference, measured in the same rounds on the same disk: Python's sqlite3 inserting the same rows with the
same settings (WAL, synchronous=FULL, one commit per row), i.e. what durability alone costs. The bodies are
signed beforehand by the simulator (`POST /simulator/notifications` with `deliver: false`), so the simulator
is not what is measured. Prints a Markdown table (median of the rounds, min–max)."""
import argparse
import http.client
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
os.environ.setdefault("GATEWAY_BIN", os.path.join(ROOT, ".build", "release", "appstore-gateway"))

import conftest  # noqa: E402,F401  (generates the stubs)
import grpc  # noqa: E402
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--posters", type=int, default=4)
    parser.add_argument("--latency-count", type=int, default=200)
    args = parser.parse_args()
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
