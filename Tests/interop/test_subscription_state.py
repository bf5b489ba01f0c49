"""The gateway's own subscription state end to end (SubscriptionState service): the simulator drives every scripted
lifecycle, delivering Apple's signed notifications to the gateway's webhook; after every step, the gateway's
GetSubscription agrees with what the simulator's Get All Subscription Statuses says for the same instant (status,
expiry, product, auto-renew), with no Apple call for what a notification already said."""
import csv
import datetime
import io
import json
import os
import sqlite3
import subprocess
import time
import urllib.request

import grpc
import pytest
import requests
import yaml

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2, subscription_state_pb2, subscription_state_pb2_grpc
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


def status_in_view(database, original):
    """Apple's status of one subscription in the analysts' view (read-only); None while it has no row."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        row = db.execute("SELECT status FROM subscription_state WHERE original_transaction_id = ?", (original,)).fetchone()
        return row[0] if row else None


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


def test_a_subscription_a_caller_read_through_get_history_is_answered_from_the_state(setup):
    """GetHistory verifies the subscription's transactions for its caller; the gateway keeps them as an Apple read, so
    GetSubscription for a subscription the state never saw answers from the state: the state asks Apple nothing."""
    sim, _, _, _ = setup
    bundle = sim.config["apps"][0]["bundleId"]
    index = json.load(open(os.path.join(sim.directory, "transactions.json")))[bundle]
    candidates = [(environment, active["originalTransactionId"])
                  for environment in ("Sandbox", "Production") for customer in index[environment]
                  for active in customer["activeSubscriptions"]]
    database = database_path()
    gateway = WebhookGateway(sim, database)  # a fresh one: its counters start at 0
    channel = grpc.insecure_channel(gateway.address)
    try:
        history_stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        for name, original in candidates:
            environment = {"Sandbox": SANDBOX, "Production": common_pb2.ENVIRONMENT_PRODUCTION}[name]
            history = history_stub.GetHistory(history_pb2.GetHistoryRequest(
                transaction_id=original, environment=environment, all_pages=True), timeout=30)
            assert not history.has_more
            periods = [t for t in history.transactions if t.original_transaction_id == original]
            current = max(periods, key=lambda t: t.purchase_date.ToMilliseconds())
            # One whose current period runs for another hour: GetSubscription needs no confirmation from Apple.
            if current.expires_date.ToMilliseconds() > time.time() * 1000 + 3_600_000 and not current.HasField("revocation_date"):
                break
        else:
            pytest.fail("no subscription of the simulator's data is active for another hour")
        # Applied after the answer, never on the caller's path: wait until the analysts' view has it active (a long
        # history is committed in parts).
        deadline = time.time() + 10
        while status_in_view(database, original) != 1:
            assert time.time() < deadline, "GetHistory's transactions never reached the state"
            time.sleep(0.02)
        stub = subscription_state_pb2_grpc.SubscriptionStateStub(channel)
        reply = stub.GetSubscription(subscription_state_pb2.GetSubscriptionRequest(
            original_transaction_id=original, environment=environment), timeout=30).subscription
        assert reply.source == subscription_state_pb2.SUBSCRIPTION_SOURCE_APPLE_READ
        assert reply.original_transaction_id == original and reply.entitled and not reply.stale
        assert reply.transaction.transaction_id == current.transaction_id
        assert reply.signed_transaction_info in history.signed_transactions
        assert metric(gateway, "appstore_gateway_state_apple_reads_total") == 0
        assert metric(gateway, "appstore_gateway_state_pass_through_dropped_total") == 0
    finally:
        channel.close()
        gateway.stop()


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


EXPORT_COLUMNS = [
    "kind", "app", "bundle_id", "environment", "original_transaction_id", "transaction_id",
    "subscription_group_identifier", "product_id", "status", "status_name", "entitled", "entitlements",
    "expires_date", "grace_period_expires_date", "auto_renew", "auto_renew_product_id", "in_billing_retry",
    "revocation_date", "ownership_type", "app_account_token", "stale", "version", "updated_at", "source"]


def rfc3339_ms(text):
    """Milliseconds of the export's `2026-01-02T03:04:05.678Z`; None for an empty field."""
    if not text:
        return None
    moment = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return round(moment.timestamp() * 1000)


def export(config_path, *args):
    """`appstore-gateway state export --format csv` to the standard output, parsed by Python's csv module."""
    done = subprocess.run([GATEWAY_BIN, "state", "export", "--config", config_path, "--format", "csv", *args],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    rows = list(csv.reader(io.StringIO(done.stdout.decode("utf-8"), newline="")))
    return rows, done.stderr.decode()


def test_state_export_writes_what_get_subscription_answers(setup, tmp_path):
    """`appstore-gateway state export --format csv`: after notifications of an active, an expired and a refunded
    subscription and of a kept and a refunded non-consumable were ingested, the real binary's CSV (parsed by Python's
    csv module) has one row each, agreeing with GetSubscription (and GetCustomer for the purchases) for the same ids."""
    sim, gateway, stub, _ = setup
    app_name = sim.config["apps"][0]["name"]
    originals = {}
    for name, steps in [("renewals", 1), ("voluntary-expiry", None), ("refund-current-period", None),
                        ("non-consumable", 1), ("non-consumable", None)]:
        instants = offsets(sim, name)
        steps = steps or len(instants)
        start = int(time.time() * 1000) - instants[steps - 1] - 1000
        started = control(sim, "POST", "", {
            "lifecycle": name, "url": gateway.webhook, "environment": "Sandbox", "start": start})
        original = started["originalTransactionId"]
        for _ in range(steps):
            step = control(sim, "POST", f"/{original}/step")
            assert all(n["deliveryStatus"] == 200 for n in step["notifications"]), step
        # A one-time purchase is no subscription: its step reports none.
        originals[f"{name}/{steps}"] = (original, step["subscriptions"][0] if step["subscriptions"] else None)
    subscriptions = {}
    for key in ["renewals/1", "voluntary-expiry/3", "refund-current-period/3"]:
        original, record = originals[key]
        subscriptions[original] = subscription(stub, original, record["signedTransactionInfo"])
    assert [subscriptions[originals[key][0]].status for key in ["renewals/1", "voluntary-expiry/3",
            "refund-current-period/3"]] == [1, 2, 5]
    purchases = {originals["non-consumable/1"][0]: True, originals["non-consumable/2"][0]: False}
    deadline = time.time() + 10
    while True:
        customers = {original: stub.GetCustomer(subscription_state_pb2.GetCustomerRequest(
            original_transaction_id=original, environment=SANDBOX), timeout=30) for original in purchases}
        kept = {original: [p.revocation_date.ToMilliseconds() for p in customer.purchases if p.HasField(
            "revocation_date")] for original, customer in customers.items() if customer.purchases}
        if len(kept) == 2 and all(bool(kept[original]) != active for original, active in purchases.items()):
            break
        assert time.time() < deadline, kept
        time.sleep(0.05)

    rows, report = export(gateway.config_path)
    assert rows[0] == EXPORT_COLUMNS
    assert all(len(row) == len(EXPORT_COLUMNS) for row in rows)
    by_id = {row[4]: dict(zip(EXPORT_COLUMNS, row)) for row in rows[1:]}
    assert "subscription(s)" in report and "purchase(s)" in report
    for original, reply in subscriptions.items():
        row = by_id[original]
        assert row["kind"] == "subscription" and row["app"] == app_name, row
        assert row["environment"] == "Sandbox" and row["bundle_id"] == reply.transaction.bundle_id, row
        assert int(row["status"]) == reply.status, (row, reply)
        assert row["entitled"] == ("true" if reply.entitled else "false"), row
        assert row["entitlements"] == ";".join(reply.entitlements), row
        assert row["product_id"] == reply.product_id and row["transaction_id"] == reply.transaction.transaction_id
        assert rfc3339_ms(row["expires_date"]) == reply.expires_date.ToMilliseconds(), row
        assert rfc3339_ms(row["revocation_date"]) == (
            reply.revocation_date.ToMilliseconds() if reply.HasField("revocation_date") else None), row
        assert row["auto_renew"] == ("true" if reply.auto_renew else "false"), row
        assert row["auto_renew_product_id"] == reply.auto_renew_product_id, row
        assert row["stale"] == "false" and int(row["version"]) == reply.version, row
        assert rfc3339_ms(row["updated_at"]) == reply.updated_at.ToMilliseconds(), row
        assert row["source"] == "notification", row
    assert by_id[originals["renewals/1"][0]]["entitlements"] == "premium"
    for original, active in purchases.items():
        row = by_id[original]
        assert row["kind"] == "purchase" and row["status"] == "" and row["version"] == "", row
        assert row["product_id"].endswith(".unlock.lifetime"), row
        assert row["entitled"] == ("true" if active else "false"), row
        assert row["entitlements"] == ("premium" if active else ""), row
        assert (row["revocation_date"] == "") == active, row
        granted = [e.name for e in customers[original].entitlements if e.active]
        assert row["entitlements"] == ";".join(granted), (row, granted)

    # A file: the same rows; one app and environment; only csv; a configuration that keeps no state.
    path = tmp_path / "state.csv"
    written, _ = export(gateway.config_path, "--app", app_name, "--environment", "Sandbox", "--output", str(path))
    assert written == [] and path.stat().st_mode & 0o777 == 0o600
    with open(path, newline="", encoding="utf-8") as file:
        from_file = list(csv.reader(file))
    assert from_file[0] == EXPORT_COLUMNS
    assert {row[4] for row in from_file[1:]} >= set(subscriptions) | set(purchases)
    production, _ = export(gateway.config_path, "--environment", "Production")
    assert production == [EXPORT_COLUMNS]
    refused = subprocess.run([GATEWAY_BIN, "state", "export", "--config", gateway.config_path, "--format", "json"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "json" in refused.stderr and "csv" in refused.stderr, refused.stderr
    unknown = subprocess.run([GATEWAY_BIN, "state", "export", "--config", gateway.config_path, "--format", "csv",
                              "--app", "no.such.app"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 1 and "no.such.app" in unknown.stderr and unknown.stdout == "", unknown.stderr
    stateless = tmp_path / "stateless.yaml"
    stateless.write_text(yaml.safe_dump({key: value for key, value in sim.config.items() if key != "notifications"}))
    none = subprocess.run([GATEWAY_BIN, "state", "export", "--config", str(stateless), "--format", "csv"],
                          capture_output=True, text=True, timeout=60)
    assert none.returncode == 1 and "keeps no subscription state" in none.stderr, none.stderr
