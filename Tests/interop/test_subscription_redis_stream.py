"""subscriptions.redisStream: every subscription event appended to a Redis stream (XADD of the team webhooks' JSON
with the event id as a field), each event once, in order per subscription, also across a SIGKILL of the gateway
and while Redis is down for a while."""
import json
import subprocess
import time

import grpc

from appstore.gateway.v1 import subscription_state_pb2 as pb, subscription_state_pb2_grpc
from test_subscription_events import run_lifecycle, sim  # noqa: F401  (the module's simulator fixture)
from test_webhook import Redis, WebhookGateway, database_path

KEY = "team:events"


def stream(redis):
    """The stream's entries: (eventId, decoded event JSON), in stream order."""
    out = subprocess.run(["redis-cli", "-p", str(redis.port), "--no-raw", "XRANGE", KEY, "-", "+"],
                         capture_output=True, text=True, timeout=30).stdout
    # redis-cli --no-raw prints nested arrays with quoted strings; ask for JSON per entry instead.
    entries = []
    raw = subprocess.run(["redis-cli", "-p", str(redis.port), "--raw", "XRANGE", KEY, "-", "+"],
                         capture_output=True, text=True, timeout=30).stdout.split("\n")
    i = 0
    while i < len(raw):
        line = raw[i]
        if line == "eventId" and i + 3 < len(raw) and raw[i + 2] == "event":
            entries.append((raw[i + 1], json.loads(raw[i + 3])))
            i += 4
        else:
            i += 1
    assert out is not None
    return entries


def all_events(gateway, count, timeout=30):
    channel = grpc.insecure_channel(gateway.address)
    stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
    events = []
    call = stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(from_beginning=True), timeout=timeout)
    try:
        for event in call:
            events.append(event)
            if len(events) >= count:
                break
    except grpc.RpcError:
        pass
    call.cancel()
    channel.close()
    return events


def gateway_with_stream(sim, redis, database):
    return WebhookGateway(sim, database, extra={
        "redis": {"url": f"redis://127.0.0.1:{redis.port}/0", "timeout": "500ms"},
        "subscriptions": {"redisStream": {"key": KEY, "maxLen": 100000, "maxBackoff": "500ms"}}})


def wait_stream(redis, count, timeout=30):
    deadline = time.time() + timeout
    while len(entries := stream(redis)) < count:
        assert time.time() < deadline, (len(entries), count)
        time.sleep(0.1)
    time.sleep(0.5)  # nothing more arrives
    return stream(redis)


def check(entries, events):
    ids = [event_id for event_id, _ in entries]
    assert len(ids) == len(set(ids)), "each event once"
    assert set(ids) == {e.event_id for e in events}
    for event_id, body in entries:
        assert body["eventId"] == event_id
    # In order per subscription.
    last = {}
    for _, body in entries:
        original, sequence = body["originalTransactionId"], int(body["sequence"])
        assert sequence == last.get(original, 0) + 1, (original, sequence, last.get(original))
        last[original] = sequence


def test_the_stream_holds_every_event_once_in_order_across_a_sigkill(sim):  # noqa: F811
    redis = Redis()
    database = database_path()
    gateway = gateway_with_stream(sim, redis, database)
    try:
        for name in ("renewals", "refund-reversed", "upgrade", "non-consumable"):
            run_lifecycle(sim, gateway, name)
        time.sleep(0.2)
        gateway.proc.kill()  # SIGKILL, whatever was appended and not yet recorded
        gateway.proc.wait()
    finally:
        gateway.stop()
    again = gateway_with_stream(sim, redis, database)
    try:
        for name in ("auto-renew-off-on", "billing-grace-recovered"):
            run_lifecycle(sim, again, name)
        events = all_events(again, 1000, timeout=3)
        assert len(events) >= 15
        entries = wait_stream(redis, len(events))
        check(entries, events)
        # The stream's bodies are the team webhooks' JSON: the whole subscription included.
        assert any("subscription" in body and body["subscription"].get("entitlements") for _, body in entries)
    finally:
        again.stop()
        redis.stop()


def test_events_made_while_redis_is_down_arrive_once_it_is_back(sim):  # noqa: F811
    redis = Redis()
    gateway = gateway_with_stream(sim, redis, database_path())
    try:
        run_lifecycle(sim, gateway, "renewals")
        first = len(wait_stream(redis, 3))
        port = redis.port
        redis.stop()
        for name in ("auto-renew-off-on", "refund-reversed"):
            run_lifecycle(sim, gateway, name)
        time.sleep(1.5)  # several failed appends, retried
        redis.port = port
        redis.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        events = all_events(gateway, 1000, timeout=3)
        # A fresh Redis lost what the first one held: the events after the outage arrive, each once.
        entries = wait_stream(redis, len(events) - first, timeout=30)
        ids = [event_id for event_id, _ in entries]
        assert len(ids) == len(set(ids))
        assert set(ids) == {e.event_id for e in events[first:]}
    finally:
        gateway.stop()
        redis.stop()


def test_dead_letters_of_the_stream_are_replayed_into_it(sim):  # noqa: F811
    """Redis down past `maxAge`: the events become dead letters; `events replay --webhook redis-stream:<key>`
    appends them once Redis is back, each once."""
    from conftest import GATEWAY_BIN

    redis = Redis()
    port = redis.port
    redis.stop()
    gateway = WebhookGateway(sim, database_path(), extra={
        "redis": {"url": f"redis://127.0.0.1:{port}/0", "timeout": "300ms"},
        "subscriptions": {"redisStream": {"key": KEY, "maxBackoff": "200ms", "maxAge": "1s"}}})
    try:
        run_lifecycle(sim, gateway, "renewals")
        events = all_events(gateway, 1000, timeout=3)
        deadline = time.time() + 20
        while "appstore_gateway_webhook_out_dead_letters" not in gateway.metrics() or not any(
                line.startswith("appstore_gateway_webhook_out_dead_letters{") and not line.endswith(" 0")
                for line in gateway.metrics().splitlines()):
            assert time.time() < deadline, "no dead letters"
            time.sleep(0.2)
        time.sleep(1.5)  # every event given up
        redis.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        replay = subprocess.run([GATEWAY_BIN, "events", "replay", "--webhook", f"redis-stream:{KEY}", "--config",
                                 gateway.config_path], capture_output=True, text=True, timeout=60)
        assert replay.returncode == 0, replay.stdout + replay.stderr
        entries = stream(redis)
        ids = [event_id for event_id, _ in entries]
        assert len(ids) == len(set(ids)) == len(events)
        assert set(ids) == {e.event_id for e in events}
    finally:
        gateway.stop()
        redis.stop()
