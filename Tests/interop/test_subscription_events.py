"""Subscription events end to end (SubscriptionState.WatchSubscriptionEvents): the simulator drives scripted
lifecycles into the gateway's webhook; a grpcio consumer sees one event per change of each subscription's state,
numbered 1, 2, 3 … without gaps, in order, each carrying the state after it; a consumer resuming with its last
token, across a SIGKILL of the gateway, misses and repeats nothing; time alone (a period that ends) makes events."""
import threading
import time

import grpc
import pytest

from appstore.gateway.v1 import subscription_state_pb2 as pb, subscription_state_pb2_grpc
from test_subscription_state import SANDBOX, control, offsets
from test_webhook import Simulator, WebhookGateway, database_path

T = pb.SubscriptionEventType
FIRST = {T.Value("SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE"), T.Value("SUBSCRIPTION_EVENT_TYPE_NON_CONSUMABLE_PURCHASE"),
         T.Value("SUBSCRIPTION_EVENT_TYPE_NON_RENEWING_PURCHASE")}
GRANTED = T.Value("SUBSCRIPTION_EVENT_TYPE_ENTITLEMENT_GRANTED")
REVOKED = T.Value("SUBSCRIPTION_EVENT_TYPE_ENTITLEMENT_REVOKED")


@pytest.fixture(scope="module")
def sim():
    simulator = Simulator("--rate-limit-scale", "100")
    bundle = simulator.config["apps"][0]["bundleId"]
    products = ["premium.monthly", "premium.yearly", "pro.monthly", "season.pass", "unlock.lifetime"]
    simulator.config["apps"][0]["entitlements"] = {
        "premium": [f"{bundle}.{p}" for p in products], "pro": [f"{bundle}.pro.monthly"]}
    yield simulator
    simulator.stop()


class Consumer:
    """A WatchSubscriptionEvents consumer collecting events on a thread until `stop()` or `count` events."""

    def __init__(self, gateway, count=None, **request):
        self.channel = grpc.insecure_channel(gateway.address)
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(self.channel)
        self.call = stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(**request))
        self.events, self.error, self.count = [], None, count
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for event in self.call:
                self.events.append(event)
                if self.count is not None and len(self.events) >= self.count:
                    break
        except grpc.RpcError as error:
            self.error = error
        finally:
            self.done.set()

    def wait_for(self, predicate, timeout=30):
        deadline = time.time() + timeout
        while not predicate(self.events):
            assert time.time() < deadline, (len(self.events), self.error)
            assert not self.done.is_set() or predicate(self.events), self.error
            time.sleep(0.05)

    def stop(self):
        self.call.cancel()
        self.thread.join(timeout=10)
        self.channel.close()


def run_lifecycle(sim, gateway, name, steps=None, start=None):
    """Starts `name` (now, its later steps in the simulator's future, unless `start`) and delivers its steps;
    returns the original id and the notification UUIDs the gateway acknowledged."""
    body = {"lifecycle": name, "url": gateway.webhook, "environment": "Sandbox"}
    if start is not None:
        body["start"] = start
    started = control(sim, "POST", "", body)
    original, uuids = started["originalTransactionId"], []
    for _ in range(started["remaining"] if steps is None else steps):
        step = control(sim, "POST", f"/{original}/step")
        assert all(n["deliveryStatus"] == 200 for n in step["notifications"]), step
        uuids += [n["notificationUUID"] for n in step["notifications"] if "notificationUUID" in n]
    return original, uuids


def by_subscription(events):
    grouped = {}
    for event in events:
        grouped.setdefault(event.original_transaction_id, []).append(event)
    return grouped


def check_invariants(events):
    """What every consumer may rely on, whatever the lifecycle."""
    assert len({e.event_id for e in events}) == len(events), "event ids are unique"
    for original, mine in by_subscription(events).items():
        assert [e.sequence for e in mine] == list(range(1, len(mine) + 1)), (original, [e.sequence for e in mine])
        assert mine[0].type in FIRST, (original, mine[0])
        held, state = set(), None
        for index, event in enumerate(mine):
            assert event.app and event.environment == SANDBOX and event.cause and event.occurred_at.seconds > 0
            if event.type == GRANTED:
                assert event.entitlement and event.entitlement not in held
                held.add(event.entitlement)
            elif event.type == REVOKED:
                assert event.entitlement in held
                held.discard(event.entitlement)
            if event.HasField("subscription"):
                assert event.subscription.original_transaction_id == original
                state = set(event.subscription.entitlements)
            # One change's events carry the state after the whole change: its entitlement events come after it.
            following = mine[index + 1] if index + 1 < len(mine) else None
            if state is not None and (following is None or following.cause != event.cause
                                      or following.occurred_at != event.occurred_at):
                assert state == held, (original, event)


def test_every_lifecycle_makes_ordered_gap_free_events_that_end_in_the_state(sim):
    gateway = WebhookGateway(sim, database_path())
    consumer = Consumer(gateway)
    try:
        time.sleep(0.3)  # the stream starts from now: let it open before anything happens
        catalogue = control(sim, "GET", "")["lifecycles"]
        types = {}
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(consumer.channel)
        for item in catalogue:
            original, uuids = run_lifecycle(sim, gateway, item["name"])
            consumer.wait_for(lambda events: any(e.original_transaction_id == original for e in events))
            # The projection is asynchronous: the subscription's events are all there once none came for a while
            # (the state may also change without an event: a re-signed snapshot grows the version, not the facts).
            deadline = time.time() + 20
            while True:
                count = len([e for e in consumer.events if e.original_transaction_id == original])
                time.sleep(0.6)
                mine = [e for e in consumer.events if e.original_transaction_id == original]
                if len(mine) == count or time.time() > deadline:
                    break
            last = mine[-1]
            if last.HasField("subscription"):
                reply = stub.GetSubscription(pb.GetSubscriptionRequest(
                    original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
                assert reply.status == last.subscription.status, (item["name"], reply, last)
                assert list(reply.entitlements) == list(last.subscription.entitlements), item["name"]
            for event in mine:
                assert event.cause in uuids or event.cause in ("apple-read", "time"), (item["name"], event.cause)
            types[item["name"]] = [T.Name(e.type).replace("SUBSCRIPTION_EVENT_TYPE_", "") for e in mine]
        check_invariants(consumer.events)
        # Lifecycles whose meaning no timing can change.
        def has(name, *wanted):
            assert set(wanted) <= set(types[name]), (name, types[name])
        has("refund-reversed", "REFUND", "REFUND_REVERSED")
        has("auto-renew-off-on", "CANCELLATION", "UNCANCELLATION")
        has("upgrade", "PRODUCT_CHANGE")
        has("downgrade", "PRODUCT_CHANGE")
        has("renewals", "INITIAL_PURCHASE", "RENEWAL")
        has("price-increase-accepted", "PRICE_INCREASE")
        has("renewal-extension", "RENEWAL_EXTENDED")
        has("non-consumable", "NON_CONSUMABLE_PURCHASE", "REFUND")
        has("non-renewing-subscription", "NON_RENEWING_PURCHASE")
        has("billing-retry-recovered", "BILLING_RECOVERY")
        # The whole retained history from the beginning is the same sequence, in the same order.
        replay = Consumer(gateway, count=len(consumer.events), from_beginning=True)
        replay.wait_for(lambda events: len(events) >= len(consumer.events))
        assert [e.event_id for e in replay.events] == [e.event_id for e in consumer.events]
        replay.stop()
    finally:
        consumer.stop()
        gateway.stop()


def test_a_consumer_resuming_across_sigkill_misses_and_repeats_nothing(sim):
    database = database_path()
    gateway = WebhookGateway(sim, database)
    first = Consumer(gateway, from_beginning=True)
    try:
        for _ in range(6):
            run_lifecycle(sim, gateway, "renewals")
        first.wait_for(lambda events: len(events) >= 10)
        first.stop()
        seen = list(first.events)
        for _ in range(4):
            run_lifecycle(sim, gateway, "auto-renew-off-on")
        gateway.proc.kill()  # SIGKILL: no shutdown
        gateway.proc.wait()
    finally:
        gateway.stop()
    again = WebhookGateway(sim, database)
    try:
        for _ in range(3):
            run_lifecycle(sim, again, "refund-reversed")
        resumed = Consumer(again, resume_token=seen[-1].resume_token)
        everything = Consumer(again, from_beginning=True)
        everything.wait_for(lambda events: len(events) >= len(seen) + 20)
        time.sleep(1.0)  # whatever else the projection still makes
        total = len(everything.events)
        resumed.wait_for(lambda events: len(seen) + len(events) >= total)
        ids = [e.event_id for e in seen + resumed.events]
        assert ids == [e.event_id for e in everything.events], "a resumed consumer misses and repeats nothing"
        check_invariants(everything.events)
        resumed.stop()
        everything.stop()
    finally:
        again.stop()


def test_the_end_of_a_period_makes_a_time_event(sim):
    """Auto-renew off, then the period ends a few seconds from now: the gateway's timer makes the EXPIRATION and
    the entitlements' revocations itself, with cause "time", and nothing asks Apple (auto-renew was off)."""
    gateway = WebhookGateway(sim, database_path())
    consumer = Consumer(gateway)
    try:
        time.sleep(0.3)
        instants = offsets(sim, "voluntary-expiry")  # subscribe, auto-renew off, expiry
        start = int(time.time() * 1000) - instants[-1] + 4000
        original, _ = run_lifecycle(sim, gateway, "voluntary-expiry", steps=len(instants) - 1, start=start)
        consumer.wait_for(lambda events: any(
            e.original_transaction_id == original and T.Name(e.type).endswith("EXPIRATION") for e in events), timeout=20)
        mine = [e for e in consumer.events if e.original_transaction_id == original]
        expiration = [e for e in mine if T.Name(e.type).endswith("EXPIRATION")][0]
        assert expiration.cause == "time"
        assert expiration.subscription.entitled is False
        assert expiration.occurred_at.ToMilliseconds() >= start + instants[-1] - 50
        consumer.wait_for(lambda events: sum(
            1 for e in events if e.original_transaction_id == original and e.type == REVOKED) >= 1)
        check_invariants(mine)
    finally:
        consumer.stop()
        gateway.stop()


def test_bad_requests_are_invalid_argument(sim):
    gateway = WebhookGateway(sim, database_path())
    channel = grpc.insecure_channel(gateway.address)
    stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
    try:
        run_lifecycle(sim, gateway, "renewals")
        events = stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(from_beginning=True), timeout=5)
        token = next(iter(events)).resume_token
        events.cancel()

        def code(**request):
            with pytest.raises(grpc.RpcError) as error:
                next(iter(stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(**request), timeout=5)))
            return error.value.code()
        tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        assert code(resume_token=tampered) == grpc.StatusCode.INVALID_ARGUMENT
        assert code(resume_token="not a token") == grpc.StatusCode.INVALID_ARGUMENT
        assert code(resume_token="x" * 2000) == grpc.StatusCode.INVALID_ARGUMENT
        # A token is bound to the types asked for: the same token with other types is not this stream's.
        assert code(resume_token=token, types=[T.Value("SUBSCRIPTION_EVENT_TYPE_RENEWAL")]) == \
            grpc.StatusCode.INVALID_ARGUMENT
        assert code(types=[999]) == grpc.StatusCode.INVALID_ARGUMENT
        assert code(app="no-such-app") in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
        # Types filter: only what was asked for.
        only = stub.WatchSubscriptionEvents(pb.WatchSubscriptionEventsRequest(
            from_beginning=True, types=[T.Value("SUBSCRIPTION_EVENT_TYPE_RENEWAL")]), timeout=5)
        first = next(iter(only))
        assert first.type == T.Value("SUBSCRIPTION_EVENT_TYPE_RENEWAL")
        only.cancel()
    finally:
        channel.close()
        gateway.stop()
