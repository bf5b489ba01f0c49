"""The outbound sinks end to end (docs/subscription-events.md): the simulator delivers Apple's notifications to the
gateway's webhook, the gateway makes subscription events and POSTs them, signed, to Python team endpoints
(`subscriptions.webhooks`), and relays Apple's notifications as received (`notifications.forward`). Each
endpoint records what arrives; the notification store's SQLite file (read-only) is the truth to compare with."""
import hashlib
import hmac
import http.server
import json
import os
import re
import socket
import sqlite3
import struct
import subprocess
import tempfile
import threading
import time
import types
import urllib.request

import pytest
import requests

from conftest import GATEWAY_BIN
from test_webhook import Simulator, WebhookGateway, database_path, free_port

SECRETS = [b"team-secret-new", b"team-secret-old"]


class Receiver:
    """A team endpoint on a loopback port. `decide(n, body)` (n counts POSTs from 1) answers a status, or
    ("stall", seconds, status) to answer that late, or "reset" to drop the connection unanswered (RST). Every POST is
    recorded with its arrival time and answer."""

    def __init__(self, decide=None, port=0):
        self.decide = decide or (lambda n, body: 204)
        self.lock = threading.Lock()
        self.posts = []  # dicts: at, headers, body, status
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    post = {"at": time.time(), "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body, "status": None}
                    receiver.posts.append(post)
                    n = len(receiver.posts)
                answer = receiver.decide(n, body)
                if answer == "reset":
                    post["status"] = "reset"
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                if isinstance(answer, tuple):
                    _, seconds, answer = answer
                    time.sleep(seconds)
                post["status"] = answer
                self.send_response(answer)
                if answer in (301, 302, 307, 308):
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def acknowledged(self):
        """The posts answered 2xx, in arrival order."""
        with self.lock:
            return [p for p in self.posts if isinstance(p["status"], int) and 200 <= p["status"] < 300]

    def events(self):
        """Each acknowledged event's JSON (first acknowledgement per event id), in arrival order."""
        seen, out = set(), []
        for post in self.acknowledged():
            event = json.loads(post["body"])
            if event["eventId"] not in seen:
                seen.add(event["eventId"])
                out.append(event)
        return out

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def secret_file(secrets=SECRETS):
    path = os.path.join(tempfile.mkdtemp(prefix="gw-team-secret-"), "team.secret")
    with open(path, "wb") as f:
        f.write(b"\n".join(secrets) + b"\n")
    os.chmod(path, 0o600)
    return path


def signature_ok(header, body, secrets=SECRETS, tolerance=300):
    """As examples/webhooks (receiver.py's verify): one t, one v1 per secret in order, each the hex HMAC-SHA256 of
    `<t>.<body>`."""
    parts = [part.partition("=") for part in header.split(",")]
    t = [value for key, _, value in parts if key == "t"]
    v1 = [value for key, _, value in parts if key == "v1"]
    if len(t) != 1 or abs(time.time() - int(t[0])) > tolerance:
        return False
    expected = [hmac.new(secret, t[0].encode() + b"." + body, hashlib.sha256).hexdigest() for secret in secrets]
    return v1 == expected


def webhook(url, secret, **settings):
    entry = {"url": url, "secretFile": secret, "timeout": "1s", "maxBackoff": "200ms"}
    entry.update(settings)
    return entry


def start_gateway(sim, database, webhooks=(), forward=()):
    """A gateway with the webhook receiver, entitlements (more events per step), and the given sinks."""
    config = json.loads(json.dumps(sim.config))
    bundle = config["apps"][0]["bundleId"]
    config["apps"][0]["entitlements"] = {"premium": [f"{bundle}.premium.monthly", f"{bundle}.premium.yearly"]}
    if forward:
        config.setdefault("notifications", {})["forward"] = list(forward)
    configured = types.SimpleNamespace(config=config)
    extra = {"subscriptions": {"webhooks": list(webhooks)}} if webhooks else None
    return WebhookGateway(configured, database, extra=extra)


def control(sim, method, path, body=None):
    answer = requests.request(method, sim.url + "/simulator/lifecycles" + path, json=body, verify=sim.ca, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def subscriptions(sim, gateway, count, steps=2):
    """`count` subscriptions of the renewals lifecycle, each stepped `steps` times (delivered to the webhook)."""
    originals = []
    for _ in range(count):
        started = control(sim, "POST", "", {"lifecycle": "renewals", "url": gateway.webhook, "environment": "Sandbox"})
        originals.append(started["originalTransactionId"])
    for _ in range(steps):
        for original in originals:
            step = control(sim, "POST", f"/{original}/step")
            assert all(n["deliveryStatus"] == 200 for n in step["notifications"]), step
    return originals


def stored_events(database, originals=None):
    """The events the gateway made: (event_id, original_transaction_id, sequence), in position order."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT event_id, original_transaction_id, sequence FROM subscription_events ORDER BY position").fetchall()
    return [row for row in rows if originals is None or row[1] in originals]


def wait_until(condition, timeout, what):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, what()
        time.sleep(0.05)


def metric(gateway, name, **labels):
    text = urllib.request.urlopen(gateway.admin_url + "/metrics", timeout=5).read().decode()
    total = None
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and all(
                f'{key}="{value}"' in line for key, value in labels.items()):
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


def assert_in_order_per_subscription(receiver, expected):
    """Each subscription's events first arrived in sequence order, each delivery (retries too) signed, and each
    event once acknowledged."""
    first_arrival = {}
    with receiver.lock:
        posts = list(receiver.posts)
    for post in posts:
        assert signature_ok(post["headers"].get("appstore-gateway-signature", ""), post["body"]), post["headers"]
        event = json.loads(post["body"])
        first_arrival.setdefault(event["eventId"], event)
    by_subscription = {}
    for event in first_arrival.values():
        by_subscription.setdefault(event["originalTransactionId"], []).append(int(event["sequence"]))
    for original, sequences in by_subscription.items():
        assert sequences == sorted(sequences), (original, sequences)
    acknowledged = receiver.events()
    assert sorted(e["eventId"] for e in acknowledged) == sorted(row[0] for row in expected)
    expected_sequences = {}
    for _, original, sequence in expected:
        expected_sequences.setdefault(original, []).append(sequence)
    for original, sequences in expected_sequences.items():
        assert by_subscription.get(original) == sequences, (original, by_subscription.get(original), sequences)


@pytest.fixture(scope="module")
def sim():
    simulator = Simulator("--rate-limit-scale", "100")
    yield simulator
    simulator.stop()


def test_a_healthy_team_endpoint_gets_every_event_once_signed_and_in_order(sim):
    receiver = Receiver()
    granted = Receiver()  # another team: only ENTITLEMENT_GRANTED, of the one app
    database = database_path()
    secret = secret_file()
    app = sim.config["apps"][0]["name"] if "name" in sim.config["apps"][0] else sim.config["apps"][0]["bundleId"]
    gateway = start_gateway(sim, database, webhooks=[
        webhook(receiver.url, secret), webhook(granted.url, secret, apps=[app], types=["ENTITLEMENT_GRANTED"])])
    try:
        originals = subscriptions(sim, gateway, 4, steps=3)
        expected = lambda: stored_events(database, originals)  # noqa: E731
        wait_until(lambda: len(expected()) >= 4 * 4, 10, lambda: f"events made: {expected()}")
        wait_until(lambda: {e["eventId"] for e in receiver.events()} >= {row[0] for row in expected()}, 10,
                   lambda: f"delivered {len(receiver.events())} of {len(expected())}")
        time.sleep(0.3)  # nothing more, nothing twice
        posts = receiver.acknowledged()
        assert len(posts) == len({json.loads(p["body"])["eventId"] for p in posts}), "an event was delivered twice"
        for post in posts:
            headers, body = post["headers"], post["body"]
            assert headers["content-type"] == "application/json"
            assert signature_ok(headers["appstore-gateway-signature"], body), headers
            event = json.loads(body)
            assert headers["appstore-gateway-event-id"] == event["eventId"]
            assert event["app"] and event["environment"] == "ENVIRONMENT_SANDBOX" and event["type"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", event["occurredAt"])
        assert_in_order_per_subscription(receiver, expected())
        sink = receiver.url
        assert metric(gateway, "appstore_gateway_webhook_out_delivered_total", sink=sink) == len(posts)
        assert metric(gateway, "appstore_gateway_webhook_out_dead_letters", sink=sink) == 0
        wait_until(lambda: len(granted.events()) == len(originals), 5, lambda: f"granted: {granted.events()}")
        assert {e["type"] for e in granted.events()} == {"SUBSCRIPTION_EVENT_TYPE_ENTITLEMENT_GRANTED"}
        assert {e["originalTransactionId"] for e in granted.events()} == set(originals)
    finally:
        gateway.stop()
        receiver.stop()
        granted.stop()


def test_a_flaky_endpoint_still_gets_every_event_in_order_and_a_stalled_one_delays_no_other(sim):
    """Every third POST answers 500, every seventh stalls past the 1 s timeout (and answers 204 after it), the fifth
    answers 307 (never followed), the eleventh and the thirteenth are reset unanswered: every event still arrives,
    signed, in order per subscription. Meanwhile a second team's endpoint that stalls
    every POST does not hold up a third, healthy one."""
    def flaky(n, body):
        if n == 5:
            return 307
        if n in (11, 13):
            return "reset"
        if n % 7 == 0:
            return ("stall", 1.5, 204)
        return 500 if n % 3 == 0 else 204

    flaky_receiver = Receiver(flaky)
    stalled = Receiver(lambda n, body: ("stall", 3, 204))
    healthy = Receiver()
    database = database_path()
    secret = secret_file()
    gateway = start_gateway(sim, database, webhooks=[
        webhook(flaky_receiver.url, secret), webhook(stalled.url, secret), webhook(healthy.url, secret)])
    try:
        originals = subscriptions(sim, gateway, 3, steps=3)
        made = time.time()
        expected = lambda: stored_events(database, originals)  # noqa: E731
        wait_until(lambda: len(expected()) >= 3 * 4, 10, lambda: f"events made: {expected()}")
        # The healthy team has everything while the stalled one has had nothing acknowledged yet.
        wait_until(lambda: {e["eventId"] for e in healthy.events()} >= {row[0] for row in expected()}, 4,
                   lambda: f"healthy got {len(healthy.events())} of {len(expected())}")
        assert time.time() - made < 4
        assert stalled.posts, "the stalled endpoint was never tried"
        wait_until(lambda: {e["eventId"] for e in flaky_receiver.events()} >= {row[0] for row in expected()}, 15,
                   lambda: f"flaky got {len(flaky_receiver.events())} of {len(expected())}")
        time.sleep(1.6)  # a stalled POST's late answer lands
        assert_in_order_per_subscription(flaky_receiver, expected())
        assert_in_order_per_subscription(healthy, expected())
        with flaky_receiver.lock:
            statuses = [p["status"] for p in flaky_receiver.posts]
        assert 307 in statuses and 500 in statuses and "reset" in statuses
        assert metric(gateway, "appstore_gateway_webhook_out_retried_total", sink=flaky_receiver.url) >= 3
    finally:
        gateway.stop()
        for receiver in (flaky_receiver, stalled, healthy):
            receiver.stop()


def test_more_subscriptions_than_attempt_slots_on_a_stalled_endpoint(sim):
    """70 subscriptions, each a lane of its own, to an endpoint that answers every POST 2 s late: 64 attempts are
    under way at once and the rest wait for a slot (the sink sleeps until an attempt ends); every event still
    arrives, the gateway lives on, and a healthy team meanwhile has everything."""
    slow = Receiver(lambda n, body: ("stall", 2, 204))
    healthy = Receiver()
    database = database_path()
    secret = secret_file()
    gateway = start_gateway(sim, database, webhooks=[webhook(slow.url, secret, timeout="5s"),
                                                     webhook(healthy.url, secret)])
    try:
        originals = subscriptions(sim, gateway, 70, steps=1)
        expected = lambda: stored_events(database, originals)  # noqa: E731
        wait_until(lambda: len(expected()) >= 70, 10, lambda: f"events made: {len(expected())}")
        wait_until(lambda: {e["eventId"] for e in healthy.events()} >= {row[0] for row in expected()}, 10,
                   lambda: f"healthy got {len(healthy.events())} of {len(expected())}")
        wait_until(lambda: {e["eventId"] for e in slow.events()} >= {row[0] for row in expected()}, 30,
                   lambda: f"slow got {len(slow.events())} of {len(expected())}")
        assert gateway.proc.poll() is None, gateway.read_log()[-2000:]
        assert_in_order_per_subscription(slow, expected())
    finally:
        gateway.stop()
        for receiver in (slow, healthy):
            receiver.stop()


def test_a_sigkill_mid_delivery_loses_nothing(sim):
    """The endpoint answers slowly; the gateway is killed (SIGKILL) while it delivers; started again on the same
    store, every event not acknowledged before is delivered (at least once: dedupe on the event id)."""
    receiver = Receiver(lambda n, body: ("stall", 0.05, 204))
    database = database_path()
    secret = secret_file()
    hooks = [webhook(receiver.url, secret)]
    gateway = start_gateway(sim, database, webhooks=hooks)
    try:
        originals = subscriptions(sim, gateway, 8, steps=2)
        wait_until(lambda: len(receiver.acknowledged()) >= 3, 10, lambda: "nothing delivered")
        gateway.proc.kill()
        gateway.proc.wait()
    finally:
        gateway.stop()
    expected = stored_events(database, originals)
    before = {e["eventId"] for e in receiver.events()}
    assert len(before) < len(expected), "everything was delivered before the kill: nothing to test"
    again = start_gateway(sim, database, webhooks=hooks)
    try:
        wait_until(lambda: {e["eventId"] for e in receiver.events()} >= {row[0] for row in expected}, 15,
                   lambda: f"after the restart {len(receiver.events())} of {len(expected)}")
        assert_in_order_per_subscription(receiver, stored_events(database, originals))
    finally:
        again.stop()
        receiver.stop()


def test_an_endpoint_that_is_down_dead_letters_and_replay_sends_the_same_bytes(sim):
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"  # nothing listens there yet
    database = database_path()
    gateway = start_gateway(sim, database, webhooks=[webhook(url, secret_file(), maxAge="2s")])
    try:
        originals = subscriptions(sim, gateway, 2, steps=1)
        # Each purchase: INITIAL_PURCHASE and ENTITLEMENT_GRANTED.
        wait_until(lambda: len(stored_events(database, originals)) >= 4, 10, lambda: "events never made")
        expected = stored_events(database, originals)
        wait_until(lambda: metric(gateway, "appstore_gateway_webhook_out_dead_letters", sink=url) == len(expected), 10,
                   lambda: f"dead letters: {metric(gateway, 'appstore_gateway_webhook_out_dead_letters', sink=url)}")
        assert metric(gateway, "appstore_gateway_webhook_out_delivered_total", sink=url) in (None, 0)
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            letters = dict(db.execute(
                "SELECT event_id, body FROM event_dead_letters WHERE sink = ? ORDER BY position", (url,)).fetchall())
        assert sorted(letters) == sorted(row[0] for row in expected)

        receiver = Receiver(port=port)
        try:
            # While the gateway runs on the same store.
            replay = subprocess.run([GATEWAY_BIN, "events", "replay", "--webhook", url, "--since", "1h",
                                     "--config", gateway.config_path], capture_output=True, text=True, timeout=60)
            assert replay.returncode == 0, replay.stdout + replay.stderr
            assert f"{len(expected)} delivered, 0 failed" in replay.stdout
            posts = receiver.acknowledged()
            assert {p["headers"]["appstore-gateway-event-id"]: p["body"] for p in posts} == letters
            assert all(signature_ok(p["headers"]["appstore-gateway-signature"], p["body"]) for p in posts)
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
                assert db.execute("SELECT count(*) FROM event_dead_letters").fetchone()[0] == 0
            # Nothing left: a second replay sends nothing.
            again = subprocess.run([GATEWAY_BIN, "events", "replay", "--webhook", url, "--config",
                                    gateway.config_path], capture_output=True, text=True, timeout=60)
            assert again.returncode == 0 and "0 delivered, 0 failed" in again.stdout
        finally:
            receiver.stop()
    finally:
        gateway.stop()


def test_the_relay_forwards_apples_bodies_unchanged_in_log_order(sim):
    receiver = Receiver(lambda n, body: 500 if n == 2 else 200)
    database = database_path()
    gateway = start_gateway(sim, database, forward=[{"url": receiver.url, "timeout": "1s", "maxBackoff": "200ms"}])
    try:
        sim.deliver(gateway.webhook, notificationType="DID_RENEW", count=4)
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            stored = db.execute("SELECT uuid, signed_payload FROM notifications ORDER BY position").fetchall()
        assert len(stored) >= 4
        wait_until(lambda: len(receiver.acknowledged()) >= len(stored), 10,
                   lambda: f"relayed {len(receiver.acknowledged())} of {len(stored)}")
        posts = receiver.acknowledged()
        assert [p["headers"]["appstore-gateway-notification-uuid"] for p in posts] == [uuid for uuid, _ in stored]
        for post, (_, jws) in zip(posts, stored):
            assert post["body"] == json.dumps({"signedPayload": jws}, separators=(",", ":")).encode()
            assert post["headers"]["content-type"] == "application/json"
            assert "appstore-gateway-signature" not in post["headers"]
        assert metric(gateway, "appstore_gateway_relay_out_delivered_total", sink=receiver.url) == len(stored)
    finally:
        gateway.stop()
        receiver.stop()


def test_a_webhook_without_a_readable_secret_refuses_to_start(sim, tmp_path):
    empty = tmp_path / "empty.secret"
    empty.write_text("\n \n")
    os.chmod(empty, 0o600)
    config = json.loads(json.dumps(sim.config))
    config["apps"] = config["apps"][:1]
    config["notifications"] = {"webhook": {"listen": "127.0.0.1:0"}, "store": {"sqlite": database_path()}}
    config["subscriptions"] = {"webhooks": [{"url": "https://team.example/hooks", "secretFile": str(empty)}]}
    path = tmp_path / "gateway.yaml"
    path.write_text(json.dumps(config))
    started = subprocess.run([GATEWAY_BIN, "serve", "--listen", "127.0.0.1:0", "--config", str(path)],
                             capture_output=True, text=True, timeout=30,
                             env={**os.environ, "APPSTORE_GATEWAY_ADMIN": "127.0.0.1:0"})
    assert started.returncode == 1
    assert "subscriptions.webhooks[0].secretFile" in started.stderr
