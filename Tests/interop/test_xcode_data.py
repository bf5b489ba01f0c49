"""Xcode and LocalTesting data (signed by Xcode, not Apple): accepted, decoded and reported
UNVERIFIED_BY_DESIGN only for an app configured `environment: xcode`; every other app refuses it."""
import base64
import json
import os
import subprocess

import grpc
import pytest

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2, verify_pb2
from conftest import Gateway, throwaway_key


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def xcode_jws(payload):
    """A JWS shaped as Xcode's StoreKit testing signs them: one self-made certificate, a signature nobody can
    check against Apple."""
    header = {"alg": "ES256", "x5c": [base64.b64encode(b"xcode-local-certificate").decode()], "kid": "Apple_Xcode_Key"}
    return ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), b64url(os.urandom(64))])


TRANSACTION = {
    "transactionId": "0", "originalTransactionId": "0", "bundleId": "com.example.xcode", "productId": "coins",
    "purchaseDate": 1_700_000_000_000, "originalPurchaseDate": 1_700_000_000_000, "quantity": 1,
    "type": "Consumable", "inAppOwnershipType": "PURCHASED", "signedDate": 1_700_000_000_500,
    "environment": "Xcode", "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441",
    "price": 990, "currency": "USD",
}


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("xcode")
    key = throwaway_key(directory)
    config = directory / "gateway.yaml"
    # The Xcode app needs no App Store Connect key: Apple is never called for it.
    config.write_text(f"""
apps:
  - name: xcode-app
    bundleId: com.example.xcode
    environment: xcode
  - name: sandbox-app
    bundleId: com.example.xcode.sandbox
    issuerId: 00000000-0000-0000-0000-000000000000
    keyId: ABCDEFGHIJ
    privateKeyFile: {key}
    environment: sandbox
""")
    gw = Gateway(["--config", str(config)])
    channel = grpc.insecure_channel(gw.address)
    yield gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()
    gw.stop()


def test_xcode_data_is_decoded_unverified_for_the_xcode_app(stub):
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=xcode_jws(TRANSACTION), app="xcode-app"), timeout=10)
    assert answer.status == verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN, answer.message
    assert "Xcode" in answer.message
    assert answer.environment == common_pb2.ENVIRONMENT_XCODE
    assert answer.transaction.product_id == "coins" and answer.transaction.environment_raw == "Xcode"
    local = dict(TRANSACTION, environment="LocalTesting")
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=xcode_jws(local), app="xcode-app"), timeout=10)
    assert answer.status == verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN
    assert answer.environment == common_pb2.ENVIRONMENT_LOCAL_TESTING


def test_xcode_data_is_still_bound_to_the_xcode_app(stub):
    other = dict(TRANSACTION, bundleId="com.example.other")
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=xcode_jws(other), app="xcode-app"), timeout=10)
    assert answer.status == verify_pb2.VERIFICATION_STATUS_INVALID_APP_IDENTIFIER
    assert not answer.HasField("transaction")
    sandbox = dict(TRANSACTION, environment="Sandbox")  # claims Sandbox: only Apple's signature could prove that
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=xcode_jws(sandbox), app="xcode-app"), timeout=10)
    assert answer.status != verify_pb2.VERIFICATION_STATUS_OK
    assert answer.status != verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN


def test_other_apps_refuse_xcode_data(stub):
    payload = dict(TRANSACTION, bundleId="com.example.xcode.sandbox")
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=xcode_jws(payload), app="sandbox-app"), timeout=10)
    assert answer.status not in (verify_pb2.VERIFICATION_STATUS_OK, verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN)
    assert not answer.HasField("transaction")
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(
        jws=xcode_jws(payload), app="sandbox-app", environment=common_pb2.ENVIRONMENT_XCODE), timeout=10)
    assert answer.status not in (verify_pb2.VERIFICATION_STATUS_OK, verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN)


def test_apple_is_never_called_for_the_xcode_app(stub):
    with pytest.raises(grpc.RpcError) as error:
        stub.GetHistory(history_pb2.GetHistoryRequest(app="xcode-app", transaction_id="1"), timeout=10)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "xcode" in error.value.details().lower()


# Apple's own Xcode samples (Tests/SignedDataTests/Fixtures/xcode, from Apple's Swift library), with the values
# Apple's libraries' tests assert for them.
APPLE_SAMPLES = os.path.join(os.path.dirname(__file__), "..", "SignedDataTests", "Fixtures", "xcode")
APPLE_XCODE_BUNDLE_ID = "com.example.naturelab.backyardbirds.example"


@pytest.fixture(scope="module")
def samples_stub(tmp_path_factory):
    config = tmp_path_factory.mktemp("xcode-samples") / "gateway.yaml"
    config.write_text(f"""
apps:
  - name: backyard-birds
    bundleId: {APPLE_XCODE_BUNDLE_ID}
    environment: xcode
""")
    gw = Gateway(["--config", str(config)])
    channel = grpc.insecure_channel(gw.address)
    yield gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()
    gw.stop()


def apple_sample(name):
    return open(os.path.join(APPLE_SAMPLES, name)).read().strip()


def apple_xcode_verifier():
    from appstoreserverlibrary.models.Environment import Environment
    from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier
    # Apple's verifier checks no chain for Xcode data, so it needs no root.
    return SignedDataVerifier([], False, Environment.XCODE, APPLE_XCODE_BUNDLE_ID)


def verify_sample(stub, name):
    answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=apple_sample(name), app="backyard-birds"), timeout=10)
    assert answer.status == verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN, answer.message
    assert answer.environment == common_pb2.ENVIRONMENT_XCODE
    return answer


def test_apple_xcode_transaction(samples_stub):
    from test_shapes_differential import asdict, compare
    answer = verify_sample(samples_stub, "xcode-signed-transaction")
    t = answer.transaction
    assert (t.original_transaction_id, t.transaction_id, t.web_order_line_item_id) == ("0", "0", "0")
    assert (t.bundle_id, t.product_id) == (APPLE_XCODE_BUNDLE_ID, "pass.premium")
    assert t.subscription_group_identifier == "6F3A93AB"
    # Xcode writes 1697679936049.7297 and signedDate 1697679936056.485: Apple's libraries read whole milliseconds.
    assert t.purchase_date_millis == t.original_purchase_date_millis == 1697679936049
    assert t.purchase_date.ToMilliseconds() == t.original_purchase_date.ToMilliseconds() == 1697679936049
    assert t.expires_date_millis == t.expires_date.ToMilliseconds() == 1700358336049
    assert t.quantity == 1
    assert (t.type, t.type_raw) == (common_pb2.PRODUCT_TYPE_AUTO_RENEWABLE, "Auto-Renewable Subscription")
    assert t.app_account_token == ""
    assert (t.in_app_ownership_type, t.in_app_ownership_type_raw) == (common_pb2.IN_APP_OWNERSHIP_TYPE_PURCHASED,
                                                                      "PURCHASED")
    assert t.signed_date_millis == t.signed_date.ToMilliseconds() == 1697679936056
    assert answer.signed_date.ToMilliseconds() == 1697679936056
    assert t.revocation_reason == common_pb2.REVOCATION_REASON_UNSPECIFIED and not t.HasField("revocation_date")
    assert t.HasField("is_upgraded_value") and not t.is_upgraded_value.value
    assert t.offer_type == common_pb2.OFFER_TYPE_INTRODUCTORY_OFFER and t.offer_identifier == ""
    assert (t.environment, t.environment_raw) == (common_pb2.ENVIRONMENT_XCODE, "Xcode")
    assert (t.storefront, t.storefront_id) == ("USA", "143441")
    assert (t.transaction_reason, t.transaction_reason_raw) == (common_pb2.TRANSACTION_REASON_PURCHASE, "PURCHASE")
    # And every value Apple's Python library decodes from the same bytes.
    apple = apple_xcode_verifier().verify_and_decode_signed_transaction(apple_sample("xcode-signed-transaction"))
    assert apple.signedDate == 1697679936056
    compare(asdict(apple), t, "transaction", set())


def test_apple_xcode_renewal_info(samples_stub):
    from test_shapes_differential import asdict, compare
    answer = verify_sample(samples_stub, "xcode-signed-renewal-info")
    r = answer.renewal_info
    assert r.expiration_intent == common_pb2.EXPIRATION_INTENT_UNSPECIFIED
    assert r.original_transaction_id == "0"
    assert r.auto_renew_product_id == r.product_id == "pass.premium"
    assert r.auto_renew_status == common_pb2.AUTO_RENEW_STATUS_ON
    assert not r.HasField("is_in_billing_retry_period_value")
    assert r.price_increase_status == common_pb2.PRICE_INCREASE_STATUS_UNSPECIFIED
    assert not r.HasField("grace_period_expires_date") and r.grace_period_expires_date_millis == 0
    assert r.offer_type == common_pb2.OFFER_TYPE_UNSPECIFIED and r.offer_identifier == ""
    assert r.signed_date_millis == r.signed_date.ToMilliseconds() == 1697679936711
    assert (r.environment, r.environment_raw) == (common_pb2.ENVIRONMENT_XCODE, "Xcode")
    assert r.recent_subscription_start_date_millis == r.recent_subscription_start_date.ToMilliseconds() == 1697679936049
    assert r.renewal_date_millis == r.renewal_date.ToMilliseconds() == 1700358336049
    apple = apple_xcode_verifier().verify_and_decode_renewal_info(apple_sample("xcode-signed-renewal-info"))
    compare(asdict(apple), r, "renewal", set())


def test_apple_xcode_app_transaction(samples_stub):
    from test_shapes_differential import asdict, compare
    answer = verify_sample(samples_stub, "xcode-signed-app-transaction")
    a = answer.app_transaction
    assert a.app_apple_id == 0 and a.version_external_identifier == 0
    assert a.bundle_id == APPLE_XCODE_BUNDLE_ID
    assert a.application_version == a.original_application_version == "1"
    # Two days before year 1: the Timestamp holds its first instant, the exact value is beside it.
    assert a.original_purchase_date_millis == -62135769600000
    assert a.HasField("original_purchase_date") and a.original_purchase_date.seconds == -62135596800
    assert a.original_purchase_date.nanos == 0
    assert a.receipt_creation_date_millis == answer.signed_date.ToMilliseconds() == 1697680122257
    assert a.device_verification == "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf"
    assert a.device_verification_nonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92"
    assert not a.HasField("preorder_date")
    assert (a.receipt_type, a.receipt_type_raw) == (common_pb2.ENVIRONMENT_XCODE, "Xcode")
    apple = apple_xcode_verifier().verify_and_decode_app_transaction(apple_sample("xcode-signed-app-transaction"))
    assert apple.originalPurchaseDate == -62135769600000
    compare(asdict(apple), a, "app transaction", set())


def test_apple_xcode_samples_are_refused_for_other_apps(stub):
    for name in ("xcode-signed-transaction", "xcode-signed-renewal-info", "xcode-signed-app-transaction"):
        answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=apple_sample(name), app="sandbox-app"), timeout=10)
        assert answer.status not in (verify_pb2.VERIFICATION_STATUS_OK,
                                     verify_pb2.VERIFICATION_STATUS_UNVERIFIED_BY_DESIGN), name
        assert answer.WhichOneof("payload") is None
