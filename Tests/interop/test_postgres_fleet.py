"""Three gateways on one PostgreSQL (notifications.store.postgres): the notification log, the subscription state and
its events are the fleet's, whichever replica Apple or a caller reaches. Apple's notifications are delivered round
robin to the three webhooks while PostgreSQL crashes (immediate stop, no checkpoint) and comes back three times:
every notification answered 200 is stored once, every replica answers every subscription's final state as Apple's
Get All Subscription Statuses says it, and one consumer on one replica sees every event once, its sequences
gap-free and in order per subscription. An app-posted purchase on one replica is readable on another at once."""
import base64
import json
import os
import tempfile
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest

from appstore.gateway.v1 import subscription_state_pb2 as pb, subscription_state_pb2_grpc
from test_subscription_events import check_invariants
from test_subscription_state import SANDBOX, assert_agrees, control, offsets
from test_webhook import HAVE_POSTGRES, Postgres, Simulator, WebhookGateway

pytestmark = pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL is not installed")

# Lifecycles whose final state is settled at their last step (nothing due soon after it).
LIFECYCLES = ["renewals", "upgrade", "downgrade", "auto-renew-off-on", "refund-reversed", "billing-retry-recovered",
              "price-increase-accepted", "renewal-extension"]


@pytest.fixture(scope="module")
def fleet():
    sim = Simulator("--rate-limit-scale", "100")
    bundle = sim.config["apps"][0]["bundleId"]
    products = ["premium.monthly", "premium.yearly", "pro.monthly", "season.pass", "unlock.lifetime"]
    sim.config["apps"][0]["entitlements"] = {
        "premium": [f"{bundle}.{p}" for p in products], "pro": [f"{bundle}.pro.monthly"]}
    server = Postgres()
    # One resume-token key ring for the fleet, as deploy/ mounts one Secret in every pod.
    keys = os.path.join(tempfile.mkdtemp(prefix="gw-fleet-keys-"), "resume-token-keys")
    with open(keys, "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    os.chmod(keys, 0o600)
    gateways = []
    try:
        for _ in range(3):
            # Lifecycles run in the simulator's past: keep what they signed months ago.
            gateways.append(WebhookGateway(sim, postgres=server.url, store_extra={"retention": "3650d"},
                                           notifications_extra={"resumeTokenKeyFile": keys}))
        yield sim, server, gateways
    finally:
        for gateway in gateways:
            gateway.stop()
        server.close()
        sim.stop()


def post(url, payload, timeout=10):
    request = urllib.request.Request(url, data=json.dumps({"signedPayload": payload}).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


class ResumingConsumer:
    """WatchSubscriptionEvents from the beginning on one replica, resuming with its last token whenever the stream
    ends with an error (the store crashed under it)."""

    def __init__(self, gateway):
        self.channel = grpc.insecure_channel(gateway.address)
        self.stub = subscription_state_pb2_grpc.SubscriptionStateStub(self.channel)
        self.events, self.errors, self.token = [], [], None
        self.stopping = threading.Event()
        self.call = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            request = (pb.WatchSubscriptionEventsRequest(resume_token=self.token) if self.token
                       else pb.WatchSubscriptionEventsRequest(from_beginning=True))
            self.call = self.stub.WatchSubscriptionEvents(request)
            try:
                for event in self.call:
                    self.events.append(event)
                    self.token = event.resume_token
            except grpc.RpcError as error:
                if self.stopping.is_set():
                    return
                self.errors.append(error.code())
                time.sleep(0.2)

    def stop(self):
        self.stopping.set()
        if self.call is not None:
            self.call.cancel()
        self.thread.join(timeout=10)
        self.channel.close()


def scripted_notifications(sim, count):
    """Lifecycles run in the simulator's past (their last step just now), nothing delivered: their notifications
    in step order, and each subscription's final record as the simulator's statuses say it."""
    notifications, finals = [], {}
    spans = {name: offsets(sim, name) for name in LIFECYCLES}
    while len(notifications) < count:
        for name in LIFECYCLES:
            instants = spans[name]
            start = int(time.time() * 1000) - instants[-1] - 2000
            started = control(sim, "POST", "", {
                "lifecycle": name, "environment": "Sandbox", "start": start, "deliver": False})
            original = started["originalTransactionId"]
            for _ in range(started["remaining"]):
                step = control(sim, "POST", f"/{original}/step")
                notifications += [(n["notificationUUID"], n["signedPayload"]) for n in step["notifications"]]
                for record in step["subscriptions"]:
                    if record.get("signedRenewalInfo"):
                        finals[record["originalTransactionId"]] = record
            if len(notifications) >= count:
                break
    return notifications, finals


def test_three_replicas_survive_three_postgres_crashes(fleet):
    sim, server, gateways = fleet
    notifications, finals = scripted_notifications(sim, 300)
    consumer = ResumingConsumer(gateways[2])
    acknowledged, refused = set(), 0
    crash = None
    try:
        # Apple's side: each notification to the next webhook in turn, retried (on the next one) until a 200.
        # PostgreSQL crashes (no checkpoint) at three points of the delivery and comes back a second later, while
        # the deliveries go on.
        for index, (uuid, payload) in enumerate(notifications):
            if index in (len(notifications) // 5, len(notifications) // 2, len(notifications) * 4 // 5):
                if crash is not None:
                    crash.join(timeout=120)
                crash = threading.Thread(target=crash_once, args=(server,), daemon=True)
                crash.start()
                time.sleep(0.2)
            attempt = index
            while post(gateways[attempt % 3].webhook, payload) != 200:
                refused += 1
                attempt += 1
                time.sleep(0.05)
            acknowledged.add(uuid)
        crash.join(timeout=120)
        assert not crash.is_alive()
        assert refused > 0, "no delivery met PostgreSQL down"
        assert len(acknowledged) == len({uuid for uuid, _ in notifications})

        # Stored once each.
        rows = server.psql("SELECT uuid, count(*) FROM notifications GROUP BY uuid")
        stored = dict(line.split("|") for line in rows.splitlines())
        assert acknowledged <= set(stored), acknowledged - set(stored)
        assert all(count == "1" for count in stored.values())

        # Every replica answers every subscription's final state.
        for gateway in gateways:
            stub = subscription_state_pb2_grpc.SubscriptionStateStub(grpc.insecure_channel(gateway.address))
            for original, record in finals.items():
                deadline = time.time() + 30
                while True:
                    try:
                        reply = stub.GetSubscription(pb.GetSubscriptionRequest(
                            original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
                    except grpc.RpcError as error:
                        # Right after PostgreSQL's last return its connections may still be coming back.
                        assert error.code() == grpc.StatusCode.UNAVAILABLE and time.time() < deadline, error
                        time.sleep(0.1)
                        continue
                    if reply.signed_transaction_info == record["signedTransactionInfo"] or time.time() > deadline:
                        break
                    time.sleep(0.1)
                assert_agrees(reply, record, f"{gateway.webhook} {original}")

        # One consumer on one replica: every event once, gap-free and in order per subscription.
        def settled():
            seen = {e.original_transaction_id for e in consumer.events}
            return set(finals) <= seen
        deadline = time.time() + 60
        while not settled():
            assert time.time() < deadline, set(finals) - {e.original_transaction_id for e in consumer.events}
            time.sleep(0.2)
        time.sleep(2)
        check_invariants(consumer.events)
        total = int(server.psql("SELECT count(*) FROM subscription_events"))
        assert len(consumer.events) == total, (len(consumer.events), total)
    finally:
        consumer.stop()
        if crash is not None:
            crash.join(timeout=120)


def crash_once(server):
    server.stop(immediate=True)
    time.sleep(1.0)
    server.start()


def test_a_purchase_posted_to_one_replica_is_readable_on_another_at_once(fleet):
    sim, _, gateways = fleet
    writer = subscription_state_pb2_grpc.SubscriptionStateStub(grpc.insecure_channel(gateways[0].address))
    reader = subscription_state_pb2_grpc.SubscriptionStateStub(grpc.insecure_channel(gateways[1].address))
    latencies = []
    for _ in range(20):
        started = control(sim, "POST", "", {"lifecycle": "renewals", "environment": "Sandbox", "deliver": False})
        original = started["originalTransactionId"]
        record = control(sim, "POST", f"/{original}/step")["subscriptions"][0]
        applied = writer.ApplySignedTransaction(pb.ApplySignedTransactionRequest(
            signed_transaction_info=record["signedTransactionInfo"], signed_renewal_info=record["signedRenewalInfo"]),
            timeout=30).subscription
        began = time.monotonic()
        while True:
            reply = reader.GetSubscription(pb.GetSubscriptionRequest(
                original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
            if reply.version >= applied.version and reply.signed_transaction_info == record["signedTransactionInfo"]:
                break
            assert time.monotonic() - began < 5, "the other replica never saw the purchase"
            time.sleep(0.01)
        latencies.append(time.monotonic() - began)
        control(sim, "DELETE", f"/{original}")
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    print(f"purchase readable on another replica: p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms")
    assert p95 <= 1.0


def test_postgres_down_is_503_and_unavailable_with_retry_info_and_back_without_a_restart(fleet):
    """While PostgreSQL is down: the webhook answers 503 (Apple retries), state reads UNAVAILABLE with RetryInfo,
    and what needs no store (the health Check) still answers; once it is back, everything works again without a
    restart of the gateways."""
    from google.rpc import error_details_pb2, status_pb2
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    sim, server, gateways = fleet
    started = control(sim, "POST", "", {"lifecycle": "renewals", "environment": "Sandbox", "deliver": False})
    original = started["originalTransactionId"]
    step = control(sim, "POST", f"/{original}/step")
    (notification,) = step["notifications"]
    stub = subscription_state_pb2_grpc.SubscriptionStateStub(grpc.insecure_channel(gateways[1].address))
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(gateways[1].address))
    server.stop(immediate=True)
    try:
        assert post(gateways[0].webhook, notification["signedPayload"]) == 503
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetSubscription(pb.GetSubscriptionRequest(
                original_transaction_id=original, environment=SANDBOX), timeout=30)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        status = status_pb2.Status.FromString(dict(refused.value.trailing_metadata())["grpc-status-details-bin"])
        retry = error_details_pb2.RetryInfo()
        assert any(detail.Unpack(retry) for detail in status.details)
        assert "postgresql://" not in refused.value.details()
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.start()
    back = time.monotonic()
    while post(gateways[0].webhook, notification["signedPayload"]) != 200:
        assert time.monotonic() - back < 10, "the webhook never came back"
        time.sleep(0.05)
    print(f"webhook answering 200 again {time.monotonic() - back:.2f} s after PostgreSQL's return")
    deadline = time.time() + 10
    while True:
        try:
            reply = stub.GetSubscription(pb.GetSubscriptionRequest(
                original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
            if reply.signed_transaction_info == step["subscriptions"][0]["signedTransactionInfo"]:
                break
        except grpc.RpcError:
            pass
        assert time.time() < deadline, "the state never caught up"
        time.sleep(0.1)
    control(sim, "DELETE", f"/{original}")


def test_a_resume_token_from_one_replica_continues_on_another(fleet):
    """The event outbox is the fleet's and the replicas share one key ring: a consumer that read some events on
    one replica resumes on another right after the last one it saw, nothing repeated or skipped."""
    sim, _, gateways = fleet
    writer = subscription_state_pb2_grpc.SubscriptionStateStub(grpc.insecure_channel(gateways[0].address))
    for _ in range(6):  # at least 12 events whatever ran before (a purchase: INITIAL_PURCHASE, ENTITLEMENT_GRANTED)
        started = control(sim, "POST", "", {"lifecycle": "renewals", "environment": "Sandbox", "deliver": False})
        record = control(sim, "POST", f"/{started['originalTransactionId']}/step")["subscriptions"][0]
        writer.ApplySignedTransaction(pb.ApplySignedTransactionRequest(
            signed_transaction_info=record["signedTransactionInfo"], signed_renewal_info=record["signedRenewalInfo"]),
            timeout=30)
        control(sim, "DELETE", f"/{started['originalTransactionId']}")

    def read(gateway, count, **request):
        channel = grpc.insecure_channel(gateway.address)
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
        call = stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(**request), timeout=30)
        events = []
        for event in call:
            events.append(event)
            if len(events) == count:
                break
        call.cancel()
        channel.close()
        return events

    everything = read(gateways[0], 12, from_beginning=True)
    assert len(everything) == 12, "the fleet test made fewer than 12 events"
    first = read(gateways[1], 5, from_beginning=True)
    assert [e.event_id for e in first] == [e.event_id for e in everything[:5]]
    rest = read(gateways[2], 7, resume_token=first[-1].resume_token)
    assert [e.event_id for e in rest] == [e.event_id for e in everything[5:]]
