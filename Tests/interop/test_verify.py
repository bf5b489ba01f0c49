"""VerifyJWS over gRPC: genuine Apple-signed samples, binding to configured apps, and failing verdicts."""
import glob
import json
import os
import base64
import subprocess

import grpc
import pytest

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, verify_pb2
from conftest import Gateway, ROOT, throwaway_key

FIXTURES = os.path.join(ROOT, "Tests", "SignedDataTests", "Fixtures")


def payload_of(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.fixture(scope="module")
def gateway_with_apps(tmp_path_factory):
    """A gateway that knows the samples' apps (VerifyJWS never signs, but keys are checked at start-up). It opts
    into `allowUnboundVerification`, so a call without `app` checks signature and chain only (the samples come
    from several apps); test_hostile_services.py covers the fail-closed default."""
    directory = tmp_path_factory.mktemp("verify")
    key = throwaway_key(directory)
    config = directory / "gateway.yaml"
    config.write_text(f"""
apps:
  - name: loki
    bundleId: com.loki-project.loki-messenger
    issuerId: 00000000-0000-0000-0000-000000000000
    keyId: ABCDEFGHIJ
    privateKeyFile: {key}
    environment: sandbox
  - name: taller
    bundleId: com.nineton.taller
    appAppleId: 6450284872
    issuerId: 00000000-0000-0000-0000-000000000000
    keyId: ABCDEFGHIJ
    privateKeyFile: {key}
    environment: production
verification:
  rootCertificates: ["{ROOT}/certs/AppleRootCA-G3.cer"]
  allowUnboundVerification: true
""")
    gw = Gateway(["--config", str(config)])
    yield gw
    gw.stop()


@pytest.fixture
def stub(gateway_with_apps):
    channel = grpc.insecure_channel(gateway_with_apps.address)
    yield gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(FIXTURES, "*.jws"))), ids=os.path.basename)
def test_genuine_samples_verify_ok(stub, path):
    jws = open(path).read().strip()
    response = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws), timeout=10)
    assert response.status == verify_pb2.VERIFICATION_STATUS_OK, response.message
    kind = os.path.basename(path).split("-")[0]
    expected = {"transaction": "transaction", "renewal": "renewal_info", "notification": "notification"}[kind]
    assert response.WhichOneof("payload") == expected
    decoded = getattr(response, expected)
    assert json.loads(decoded.raw_json) == payload_of(jws)
    assert response.signed_date.ToMilliseconds() == payload_of(jws)["signedDate"]


def test_transaction_fields_are_typed(stub):
    jws = open(os.path.join(FIXTURES, "transaction-Sandbox-1.jws")).read().strip()
    response = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, kind=verify_pb2.JWS_KIND_TRANSACTION), timeout=10)
    t = response.transaction
    assert t.transaction_id == "2000001024998954"
    assert t.original_transaction_id == "2000001024993299"
    assert t.bundle_id == "com.loki-project.loki-messenger"
    assert t.purchase_date.ToMilliseconds() == 1759302552000
    assert t.price_milliunits == 1990 and t.currency == "AUD"
    assert t.environment == common_pb2.ENVIRONMENT_SANDBOX
    assert t.type == common_pb2.PRODUCT_TYPE_AUTO_RENEWABLE


def test_binding_to_a_configured_app(stub):
    jws = open(os.path.join(FIXTURES, "transaction-Sandbox-1.jws")).read().strip()
    ok = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="loki", environment=common_pb2.ENVIRONMENT_SANDBOX), timeout=10)
    assert ok.status == verify_pb2.VERIFICATION_STATUS_OK
    wrong_app = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="taller"), timeout=10)
    assert wrong_app.status == verify_pb2.VERIFICATION_STATUS_INVALID_APP_IDENTIFIER
    assert "com.loki-project.loki-messenger" in wrong_app.message
    wrong_env = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, environment=common_pb2.ENVIRONMENT_PRODUCTION), timeout=10)
    assert wrong_env.status == verify_pb2.VERIFICATION_STATUS_INVALID_ENVIRONMENT
    assert not wrong_env.HasField("transaction")


def test_production_notification_binds_app_apple_id(stub):
    jws = open(os.path.join(FIXTURES, "notification-Production-1.jws")).read().strip()
    ok = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="com.nineton.taller"), timeout=10)
    assert ok.status == verify_pb2.VERIFICATION_STATUS_OK, ok.message
    assert ok.notification.notification_type_raw == "TEST"


def test_wrong_kind_and_failures_are_verdicts_not_errors(stub):
    jws = open(os.path.join(FIXTURES, "renewal-Sandbox-1.jws")).read().strip()
    wrong = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, kind=verify_pb2.JWS_KIND_TRANSACTION), timeout=10)
    assert wrong.status == verify_pb2.VERIFICATION_STATUS_WRONG_KIND
    header, payload, signature = jws.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    bad = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=".".join([header, payload, flipped])), timeout=10)
    assert bad.status == verify_pb2.VERIFICATION_STATUS_INVALID_SIGNATURE
    garbage = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="not a jws"), timeout=10)
    assert garbage.status == verify_pb2.VERIFICATION_STATUS_MALFORMED and garbage.message


def test_unknown_app_is_not_found(stub):
    jws = open(os.path.join(FIXTURES, "transaction-Sandbox-1.jws")).read().strip()
    with pytest.raises(grpc.RpcError) as info:
        stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="nope"), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert "nope" in info.value.details()
    # Rich details: google.rpc.Status with ErrorInfo.
    from google.rpc import status_pb2, error_details_pb2
    details = dict(info.value.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    info_detail = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info_detail)
    assert info_detail.reason == "UNKNOWN_APP" and info_detail.domain == "appstore.gateway"
