"""Scripted subscription lifecycles end to end: the simulator drives a subscription step by step on its own clock,
delivers Apple's signed notifications for each step to the gateway's webhook (stored in order), and the gateway's
GetAllSubscriptionStatuses, asked through the simulator as Apple, agrees with the step at the same instant."""
import base64
import json

import grpc
import pytest
import requests

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, subscriptions_pb2
from test_webhook import Simulator, WebhookGateway, database_path, stored_uuids

SANDBOX = common_pb2.ENVIRONMENT_SANDBOX


def payload(jws):
    body = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


@pytest.fixture(scope="module")
def setup():
    sim = Simulator("--rate-limit-scale", "100")  # every step asks for statuses: no 429 from the sandbox budget
    database = database_path()
    gateway = WebhookGateway(sim, database)
    channel = grpc.insecure_channel(gateway.address)
    yield sim, gateway, database, gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()
    gateway.stop()
    sim.stop()


def control(sim, method, path, body=None):
    return requests.request(method, sim.url + "/simulator/lifecycles" + path, json=body, verify=sim.ca, timeout=60)


# (lifecycle, per step: notification types in sending order, the purchaser's status after it)
LIFECYCLES = [
    ("billing-grace-expired", [(["SUBSCRIBED"], 1), (["DID_FAIL_TO_RENEW"], 4), (["GRACE_PERIOD_EXPIRED"], 3),
                               (["EXPIRED"], 2)]),
    ("family-sharing", [(["SUBSCRIBED"], 1), (["SUBSCRIBED"], 1), (["DID_RENEW", "DID_RENEW"], 1), (["REVOKE"], 1)]),
]


@pytest.mark.parametrize("name,expected", LIFECYCLES, ids=[name for name, _ in LIFECYCLES])
def test_a_lifecycle_reaches_the_webhook_in_order_and_statuses_agree(setup, name, expected):
    sim, gateway, database, stub = setup
    listed = control(sim, "GET", "").json()
    assert name in [item["name"] for item in listed["lifecycles"]]
    started = control(sim, "POST", "", {"lifecycle": name, "url": gateway.webhook, "environment": "Sandbox"})
    assert started.status_code == 200, started.text
    original = started.json()["originalTransactionId"]
    assert started.json()["remaining"] == len(expected)
    before = stored_uuids(database)
    sent = []
    previous_instant = 0
    for types, status in expected:
        answer = control(sim, "POST", f"/{original}/step")
        assert answer.status_code == 200, answer.text
        step = answer.json()
        assert step["status"] == status
        assert step["now"] >= previous_instant
        previous_instant = step["now"]
        assert [n["notificationType"] for n in step["notifications"]] == types
        for notification in step["notifications"]:
            assert notification["deliveryStatus"] == 200
            decoded = payload(notification["signedPayload"])
            assert decoded["signedDate"] == step["now"] and decoded["notificationType"] in types
            assert payload(decoded["data"]["signedTransactionInfo"])["signedDate"] == step["now"]
        sent += [n["notificationUUID"] for n in step["notifications"]]
        # The webhook stored them durably, in the order they were sent, before the step answered.
        assert stored_uuids(database)[len(before):] == sent

        # Get All Subscription Statuses through the gateway answers for the step's instant: the same status and
        # the very signed transaction and renewal info the step reports for each record.
        for record in step["subscriptions"]:
            reply = stub.GetAllSubscriptionStatuses(subscriptions_pb2.GetAllSubscriptionStatusesRequest(
                transaction_id=record["originalTransactionId"], environment=SANDBOX), timeout=30)
            (last,) = [t for group in reply.data for t in group.last_transactions]
            assert last.original_transaction_id == record["originalTransactionId"]
            assert last.status_raw == record["status"]
            assert last.signed_transaction_info == record["signedTransactionInfo"]
            assert last.signed_renewal_info == record["signedRenewalInfo"]
            assert last.transaction.product_id == record["productId"]
            assert last.transaction.expires_date.ToMilliseconds() == record["expiresDate"]
            assert last.renewal_info.auto_renew_product_id == record["autoRenewProductId"]
        assert step["subscriptions"][0]["status"] == status

    done = control(sim, "POST", f"/{original}/step")
    assert done.status_code == 409 and "errorMessage" in done.json()
    assert control(sim, "DELETE", f"/{original}").status_code == 200
    assert control(sim, "GET", f"/{original}").status_code == 404
    with pytest.raises(grpc.RpcError) as unknown:
        stub.GetAllSubscriptionStatuses(subscriptions_pb2.GetAllSubscriptionStatusesRequest(
            transaction_id=original, environment=SANDBOX), timeout=30)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
