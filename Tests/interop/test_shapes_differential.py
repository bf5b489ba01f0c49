"""Every payload shape the simulator generates (each notification type and subtype, summaries, external purchase
tokens, appData with signed app transactions, consumption reasons, commitment plans, Advanced Commerce info,
price increases, win-back offers, ONE_TIME offers), decoded by Apple's Python library and by the gateway
(StreamNotifications, GetHistory, VerifyJWS), compared field by field: every key Apple's models hold must be in
the gateway's answer with the same value."""
import base64
import enum
import json
import os
import tempfile
import time
import uuid

import attr
import grpc
import pytest
from appstoreserverlibrary.api_client import GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.TransactionHistoryRequest import TransactionHistoryRequest
from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2, notification_pb2, verify_pb2
from conftest import Gateway
from test_simulator import Simulator
from test_notifications import NotificationSimulator


class ShapesSimulator(Simulator):
    """test_simulator's simulator (its client and verifier), with rate limits raised for paging everything."""

    def __init__(self, directory):
        started = NotificationSimulator(directory, "--rate-limit-scale", "100")
        self.proc, self.url, self.directory = started.proc, started.url, directory
        self.config, self.app = started.config, started.app
        self.index = json.load(open(os.path.join(directory, "transactions.json")))

# Apple's numeric enums: proto number = Apple's number + offset (common.proto).
NUMERIC_OFFSETS = {"revocationReason": 1, "offerType": 0, "autoRenewStatus": 1, "expirationIntent": 0,
                   "priceIncreaseStatus": 1, "status": 0, "commitmentAutoRenewStatus": 1}
# The first and last milliseconds a google.protobuf.Timestamp holds (0001-01-01 to 9999-12-31).
FIRST_TIMESTAMP_MS, LAST_TIMESTAMP_MS = -62_135_596_800_000, 253_402_300_799_999
# Apple keys the gateway names differently.
RENAMES = {"notificationUUID": "notification_uuid", "SKU": "sku", "dependentSKUs": "dependent_skus"}


def snake(name):
    return RENAMES.get(name) or "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def payload_of(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def compare(apple, message, path, seen):
    """Walks every non-None key of Apple's decoded model `apple` (attr.asdict) against `message`."""
    fields = {f.name: f for f in message.DESCRIPTOR.fields}
    for key, value in apple.items():
        if value is None or isinstance(value, enum.Enum):
            continue  # enums are compared through their raw values
        where = f"{path}.{key}"
        seen.add(where.split("[")[0] if "[" not in where else where.split("[")[0])
        if key.startswith("raw") and key[3:4].isupper():
            base = key[3].lower() + key[4:]
            if snake(base) + "_raw" in fields:
                assert getattr(message, snake(base) + "_raw") == value, where
            elif base in NUMERIC_OFFSETS and isinstance(value, int):
                assert getattr(message, snake(base)) == value + NUMERIC_OFFSETS[base], where
            else:  # Advanced Commerce enums are kept as Apple's strings
                assert getattr(message, snake(base)) == value, where
            continue
        name = snake(key)
        if name + "_milliunits" in fields:
            name += "_milliunits"
        if isinstance(value, bool):
            name = name + "_value" if name + "_value" in fields else name
            field = getattr(message, name)
            assert (field.value if isinstance(field, Message) else field) == value, where
            continue
        assert name in fields, f"{where}: the gateway has no field {name}"
        field = getattr(message, name)
        if isinstance(field, timestamp_pb2.Timestamp):
            # Apple's exact milliseconds in `<field>_millis`; the Timestamp clamped to what one can hold.
            assert message.HasField(name), where
            assert field.ToMilliseconds() == min(max(value, FIRST_TIMESTAMP_MS), LAST_TIMESTAMP_MS), where
            if name + "_millis" in fields:
                assert getattr(message, name + "_millis") == value, f"{where}: {name}_millis"
        elif isinstance(value, dict):
            assert message.HasField(name), where
            compare(value, field, where, seen)
        elif isinstance(value, list):
            assert len(field) == len(value), where
            for index, (item, mine) in enumerate(zip(value, field)):
                if isinstance(item, dict):
                    compare(item, mine, f"{where}[{index}]", seen)
                else:
                    assert mine == item, f"{where}[{index}]"
        elif isinstance(value, uuid.UUID):
            assert field == str(value), where
        else:
            assert field == value, f"{where}: {field!r} != {value!r}"


def asdict(model):
    return attr.asdict(model, recurse=True)


@pytest.fixture(scope="module")
def setup():
    directory = tempfile.mkdtemp(prefix="gw-shapes-")
    os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(directory, "tls", "ca.pem")
    simulator = ShapesSimulator(directory)
    gateway = Gateway(["--config", os.path.join(directory, "gateway.yaml")])
    channel = grpc.insecure_channel(gateway.address)
    yield simulator, gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()
    gateway.stop()
    simulator.stop()
    os.environ.pop("REQUESTS_CA_BUNDLE", None)


def apple_notifications(simulator, environment, start_ms, end_ms):
    client = simulator.client(environment)
    body = NotificationHistoryRequest(startDate=start_ms, endDate=end_ms)
    token, items = None, []
    while True:
        page = client.get_notification_history(token, body)
        items += page.notificationHistory
        if not page.hasMore:
            return items
        token = page.paginationToken


def check_notification(simulator, environment, signed, notification, seen):
    verifier = simulator.verifier(environment)
    apple = asdict(verifier.verify_and_decode_notification(signed))
    compare(apple, notification, "notification", seen)
    data = apple.get("data") or {}
    if data.get("signedTransactionInfo"):
        compare(asdict(verifier.verify_and_decode_signed_transaction(data["signedTransactionInfo"])),
                notification.data.transaction, "transaction", seen)
    if data.get("signedRenewalInfo"):
        compare(asdict(verifier.verify_and_decode_renewal_info(data["signedRenewalInfo"])),
                notification.data.renewal_info, "renewal", seen)
    app_data = apple.get("appData") or {}
    if app_data.get("signedAppTransactionInfo"):
        compare(asdict(verifier.verify_and_decode_app_transaction(app_data["signedAppTransactionInfo"])),
                notification.app_data.app_transaction, "appTransaction", seen)


@pytest.mark.parametrize("environment", [Environment.PRODUCTION, Environment.SANDBOX], ids=["production", "sandbox"])
def test_every_notification_shape_matches_apples_library(setup, environment):
    simulator, stub = setup
    end = int(time.time() * 1000) + 3_600_000
    start = end - (29 if environment == Environment.SANDBOX else 179) * 86_400_000
    items = apple_notifications(simulator, environment, start, end)
    request = notification_pb2.StreamNotificationsRequest(
        environment=common_pb2.ENVIRONMENT_SANDBOX if environment == Environment.SANDBOX else common_pb2.ENVIRONMENT_PRODUCTION)
    request.start_date.FromMilliseconds(start)
    request.end_date.FromMilliseconds(end)
    events = list(stub.StreamNotifications(request, timeout=120))
    assert [payload_of(e.signed_payload)["notificationUUID"] for e in events] == \
        [payload_of(i.signedPayload)["notificationUUID"] for i in items]
    seen, shapes = set(), set()
    for event in events:
        assert event.status == verify_pb2.VERIFICATION_STATUS_OK, event.message
        check_notification(simulator, environment, event.signed_payload, event.notification, seen)
        shapes.add((event.notification.notification_type_raw, event.notification.subtype_raw))
    # Every notification type and subtype of Apple's enums was generated and compared.
    from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
    from appstoreserverlibrary.models.Subtype import Subtype
    assert {t.value for t in NotificationTypeV2} <= {t for t, _ in shapes}
    assert {s.value for s in Subtype} <= {s for _, s in shapes}
    for key in ["notification.summary.succeededCount", "notification.externalPurchaseToken.externalPurchaseId",
                "notification.appData.signedAppTransactionInfo", "appTransaction.rawOriginalPlatform",
                "notification.data.rawConsumptionRequestReason", "transaction.commitmentInfo",
                "transaction.advancedCommerceInfo", "transaction.rawBillingPlanType", "transaction.rawOfferDiscountType",
                "renewal.eligibleWinBackOfferIds", "renewal.rawPriceIncreaseStatus", "renewal.commitmentInfo",
                "renewal.advancedCommerceInfo", "renewal.offerPeriod", "renewal.rawRenewalBillingPlanType"]:
        assert key in seen, f"no {key} was compared"


def test_history_and_verifyjws_match_apples_library(setup):
    simulator, stub = setup
    customer = next(c for c in simulator.index[simulator.app["bundleId"]]["Production"] if c["transactionId"])
    client = simulator.client(Environment.PRODUCTION)
    verifier = simulator.verifier(Environment.PRODUCTION)
    apple, revision = [], None
    while True:
        page = client.get_transaction_history(
            customer["transactionId"], revision, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2)
        apple += page.signedTransactions
        if not page.hasMore:
            break
        revision = page.revision
    mine = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True), timeout=60)
    assert len(mine.transactions) == len(apple)
    seen = set()
    by_id = {t.transaction_id: t for t in mine.transactions}
    for jws in apple:
        decoded = asdict(verifier.verify_and_decode_signed_transaction(jws))
        compare(decoded, by_id[decoded["transactionId"]], "transaction", seen)
    one_time = [asdict(verifier.verify_and_decode_signed_transaction(j)) for j in apple]
    assert any(t.get("rawOfferDiscountType") == "ONE_TIME" for t in one_time)
    assert any(t.get("advancedCommerceInfo") for t in one_time)
    # VerifyJWS on every one of them decodes the same.
    for jws in apple:
        answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="example"), timeout=10)
        assert answer.status == verify_pb2.VERIFICATION_STATUS_OK, answer.message
        compare(asdict(verifier.verify_and_decode_signed_transaction(jws)), answer.transaction, "transaction", seen)


def test_reading_twice_returns_the_same_bytes(setup):
    """Each record is signed once: the same history and notification history read back byte for byte."""
    simulator, _ = setup
    customer = next(c for c in simulator.index[simulator.app["bundleId"]]["Production"] if c["transactionId"])
    client = simulator.client(Environment.PRODUCTION)
    reads = [client.get_transaction_history(customer["transactionId"], None, TransactionHistoryRequest(),
                                            GetTransactionHistoryVersion.V2).signedTransactions for _ in range(2)]
    assert reads[0] and reads[0] == reads[1]
    end = int(time.time() * 1000)
    notifications = [[i.signedPayload for i in apple_notifications(simulator, Environment.PRODUCTION, end - 10 * 86_400_000, end)]
                     for _ in range(2)]
    assert notifications[0] and notifications[0] == notifications[1]
