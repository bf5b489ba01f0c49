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
