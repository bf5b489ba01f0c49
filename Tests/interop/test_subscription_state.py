"""The gateway's own subscription state end to end (SubscriptionState service): the simulator drives every scripted
lifecycle, delivering Apple's signed notifications to the gateway's webhook; after every step, the gateway's
GetSubscription agrees with what the simulator's Get All Subscription Statuses says for the same instant (status,
expiry, product, auto-renew), with no Apple call for what a notification already said."""
import json
import sqlite3
import subprocess
import time
import urllib.request

import grpc
import pytest
import requests

from appstore.gateway.v1 import common_pb2, subscription_state_pb2, subscription_state_pb2_grpc
from conftest import GATEWAY_BIN
from test_webhook import Simulator, WebhookGateway, database_path

SANDBOX = common_pb2.ENVIRONMENT_SANDBOX


@pytest.fixture(scope="module")
def setup():
    sim = Simulator("--rate-limit-scale", "100")
    catalogue = requests.get(sim.url + "/simulator/lifecycles", verify=sim.ca, timeout=30).json()["lifecycles"]
    config = json.loads(json.dumps(sim.config))
    # Lifecycle products are named after the bundle id: every product unlocks "premium", the pro ones "pro" too.
    bundle = config["apps"][0]["bundleId"]
    products = ["premium.monthly", "premium.yearly", "pro.monthly", "season.pass", "unlock.lifetime"]
    config["apps"][0]["entitlements"] = {
        "premium": [f"{bundle}.{p}" for p in products], "pro": [f"{bundle}.pro.monthly"]}
    sim.config = config
    gateway = WebhookGateway(sim, database_path())
    channel = grpc.insecure_channel(gateway.address)
    yield sim, gateway, subscription_state_pb2_grpc.SubscriptionStateStub(channel), catalogue
    channel.close()
    gateway.stop()
    sim.stop()


def control(sim, method, path, body=None):
    answer = requests.request(method, sim.url + "/simulator/lifecycles" + path, json=body, verify=sim.ca, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def metric(gateway, name, **labels):
    text = urllib.request.urlopen(gateway.admin_url + "/metrics", timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def offsets(sim, name):
    """The instants of a lifecycle's steps relative to its start (a dry run: nothing delivered)."""
    started = control(sim, "POST", "", {"lifecycle": name, "environment": "Sandbox", "deliver": False})
    original, start = started["originalTransactionId"], started["now"]
    instants = []
    for _ in range(started["remaining"]):
        instants.append(control(sim, "POST", f"/{original}/step")["now"] - start)
    control(sim, "DELETE", f"/{original}")
    return instants


def subscription(stub, original, expected_jws=None, timeout=10):
    """GetSubscription, polled until it holds the transaction the step signed (the projection is asynchronous)."""
    deadline = time.time() + timeout
    while True:
        reply = stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(
            original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
        if expected_jws is None or reply.signed_transaction_info == expected_jws or time.time() > deadline:
            return reply
        time.sleep(0.05)


def projected(database):
    """The original transaction ids in the analysts' view of the state (read-only)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return {row[0] for row in db.execute("SELECT original_transaction_id FROM subscription_state")}


def assert_agrees(reply, record, where):
    assert reply.status == record["status"], (where, reply.status, record)
    assert reply.product_id == record["productId"], where
    assert reply.expires_date.ToMilliseconds() == record["expiresDate"], where
    assert reply.auto_renew_product_id == record["autoRenewProductId"], where
    if "autoRenewStatus" in record:
        assert reply.auto_renew == (record["autoRenewStatus"] == 1), where
    assert reply.entitled == (record["status"] in (1, 4)), where
    assert ("premium" in reply.entitlements) == reply.entitled, where


def test_every_lifecycle_agrees_with_apple_after_every_step(setup):
    """For each lifecycle and each step k: a fresh instance starts so that step k happens now, steps 1..k are
    delivered to the webhook, and GetSubscription (read at the gateway's now) must say what the simulator's Get
    All Subscription Statuses says at step k's instant, for every record the step reports."""
    sim, gateway, stub, catalogue = setup
    checked = 0
    for item in catalogue:
        name = item["name"]
        instants = offsets(sim, name)
        for k in range(1, len(instants) + 1):
            start = int(time.time() * 1000) - instants[k - 1] - 1000
            started = control(sim, "POST", "", {
                "lifecycle": name, "url": gateway.webhook, "environment": "Sandbox", "start": start})
            original = started["originalTransactionId"]
            step = None
            for _ in range(k):
                step = control(sim, "POST", f"/{original}/step")
                assert all(n["deliveryStatus"] == 200 for n in step["notifications"]), step
            for record in step["subscriptions"]:
                if not record.get("signedRenewalInfo"):
                    continue  # a one-time purchase: GetCustomer's purchases (below)
                reply = subscription(stub, record["originalTransactionId"], record["signedTransactionInfo"])
                assert_agrees(reply, record, f"{name} step {k}/{len(instants)} {record['originalTransactionId']}")
                checked += 1
            control(sim, "DELETE", f"/{original}")
    assert checked >= 50


def test_a_notification_is_answered_without_asking_apple(setup):
    sim, gateway, stub, _ = setup
    reads = metric(gateway, "appstore_gateway_state_apple_reads_total")
    changes = metric(gateway, "appstore_gateway_state_changes_total", source="notification")
    started = control(sim, "POST", "", {"lifecycle": "renewals", "url": gateway.webhook, "environment": "Sandbox"})
    original = started["originalTransactionId"]
    step = control(sim, "POST", f"/{original}/step")
    deadline = time.time() + 10
    while metric(gateway, "appstore_gateway_state_changes_total", source="notification") <= changes:
        assert time.time() < deadline, "the notification never reached the state"
        time.sleep(0.02)
    reply = subscription(stub, original)
    assert reply.source == subscription_state_pb2.SUBSCRIPTION_SOURCE_NOTIFICATION
    assert reply.signed_transaction_info == step["subscriptions"][0]["signedTransactionInfo"]
    assert reply.version >= 1 and reply.entitled and not reply.stale
    assert metric(gateway, "appstore_gateway_state_apple_reads_total") == reads
    control(sim, "DELETE", f"/{original}")


def test_an_unknown_subscription_is_read_from_apple_once_and_then_kept(setup):
    sim, gateway, stub, _ = setup
    started = control(sim, "POST", "", {"lifecycle": "renewals", "environment": "Sandbox", "deliver": False})
    original = started["originalTransactionId"]
    control(sim, "POST", f"/{original}/step")
    reads = metric(gateway, "appstore_gateway_state_apple_reads_total")
    first = subscription(stub, original)
    assert first.source == subscription_state_pb2.SUBSCRIPTION_SOURCE_APPLE_READ and first.entitled
    again = subscription(stub, original)
    assert again.version == first.version
    assert metric(gateway, "appstore_gateway_state_apple_reads_total") == reads + 1
    control(sim, "DELETE", f"/{original}")


def test_bad_input_names_the_field_and_an_unknown_id_is_not_found(setup):
    _, _, stub, _ = setup
    for bad in ["", "12a4", "1" * 21]:
        with pytest.raises(grpc.RpcError) as error:
            stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(original_transaction_id=bad), timeout=10)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "original_transaction_id" in error.value.details()
    with pytest.raises(grpc.RpcError) as error:
        stub.GetCustomer(subscription_state_pb2.GetCustomerRequest(app_account_token="not-a-uuid"), timeout=10)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "app_account_token" in error.value.details()
    with pytest.raises(grpc.RpcError) as error:
        stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(
            original_transaction_id="1999999999999999", environment=SANDBOX), timeout=30)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as error:
        stub.ApplySignedTransaction(subscription_state_pb2.ApplySignedTransactionRequest(
            signed_transaction_info="e30.e30.e30"), timeout=10)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "signed_transaction_info" in error.value.details()


def test_an_app_posted_purchase_is_readable_at_once(setup):
    """ApplySignedTransaction: the JWS StoreKit gave the app is verified, applied and answered (read-your-writes),
    and a forged one changes nothing."""
    sim, gateway, stub, _ = setup
    started = control(sim, "POST", "", {"lifecycle": "renewals", "environment": "Sandbox", "deliver": False})
    original = started["originalTransactionId"]
    step = control(sim, "POST", f"/{original}/step")
    record = step["subscriptions"][0]
    applied = stub.ApplySignedTransaction(subscription_state_pb2.ApplySignedTransactionRequest(
        signed_transaction_info=record["signedTransactionInfo"], signed_renewal_info=record["signedRenewalInfo"]),
        timeout=30).subscription
    assert applied.source == subscription_state_pb2.SUBSCRIPTION_SOURCE_APP_POSTED
    assert applied.original_transaction_id == original and applied.entitled
    header, body, signature = record["signedTransactionInfo"].split(".")
    forged = ".".join([header, body, signature[:-4] + ("AAAA" if signature[-4:] != "AAAA" else "BBBB")])
    with pytest.raises(grpc.RpcError) as error:
        stub.ApplySignedTransaction(subscription_state_pb2.ApplySignedTransactionRequest(
            signed_transaction_info=forged), timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert subscription(stub, original).version == applied.version
    customer = stub.GetCustomer(subscription_state_pb2.GetCustomerRequest(
        original_transaction_id=original, environment=SANDBOX), timeout=30)
    assert [s.original_transaction_id for s in customer.subscriptions] == [original]
    premium = [e for e in customer.entitlements if e.name == "premium"]
    assert premium and premium[0].active and original in premium[0].original_transaction_ids
    control(sim, "DELETE", f"/{original}")


def test_a_sigkill_during_ingestion_loses_nothing_acknowledged(setup):
    """Notifications are acknowledged once stored in the log; the state is projected from the log. A gateway killed
    with SIGKILL while subscriptions arrive comes back with every acknowledged one in its state, from the log alone
    (no Apple read)."""
    sim, _, _, _ = setup
    database = database_path()
    gateway = WebhookGateway(sim, database)
    acknowledged = []
    try:
        for _ in range(40):
            started = control(sim, "POST", "", {"lifecycle": "renewals", "url": gateway.webhook, "environment": "Sandbox"})
            original = started["originalTransactionId"]
            step = requests.post(f"{sim.url}/simulator/lifecycles/{original}/step", verify=sim.ca, timeout=60)
            if step.status_code == 200 and all(n["deliveryStatus"] == 200 for n in step.json()["notifications"]):
                acknowledged.append((original, step.json()["subscriptions"][0]["signedTransactionInfo"]))
            if len(acknowledged) == 25:
                gateway.proc.kill()  # SIGKILL: no shutdown, whatever the projection had done so far
                gateway.proc.wait()
                break
    finally:
        gateway.stop()
    assert len(acknowledged) == 25
    again = WebhookGateway(sim, database)
    try:
        channel = grpc.insecure_channel(again.address)
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
        # The projection resumes from the position it saved: wait until the analysts' view lists them all.
        wanted = {original for original, _ in acknowledged}
        deadline = time.time() + 20
        while not wanted <= projected(database):
            assert time.time() < deadline, wanted - projected(database)
            time.sleep(0.05)
        for original, jws in acknowledged:
            reply = stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(
                original_transaction_id=original, environment=SANDBOX), timeout=30).subscription
            assert reply.signed_transaction_info == jws
        assert metric(again, "appstore_gateway_state_apple_reads_total") == 0
        channel.close()
    finally:
        again.stop()


def test_state_rebuild_projects_the_log_again(setup):
    """`appstore-gateway state rebuild` deletes the state and projects the webhook's log into it again."""
    sim, _, _, _ = setup
    database = database_path()
    gateway = WebhookGateway(sim, database)
    originals = []
    try:
        for _ in range(3):
            started = control(sim, "POST", "", {"lifecycle": "renewals", "url": gateway.webhook, "environment": "Sandbox"})
            control(sim, "POST", f"/{started['originalTransactionId']}/step")
            originals.append(started["originalTransactionId"])
        deadline = time.time() + 20
        while not set(originals) <= projected(database):
            assert time.time() < deadline
            time.sleep(0.05)
    finally:
        gateway.stop()
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM subscription_records WHERE original_transaction_id = ?", (originals[0],))
    assert originals[0] not in projected(database)
    rebuilt = subprocess.run([GATEWAY_BIN, "state", "rebuild", "--config", gateway.config_path],
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "state rebuilt: 3 subscription(s)" in rebuilt.stdout
    assert set(originals) <= projected(database)
