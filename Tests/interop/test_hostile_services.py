"""Hostile service-level inputs (issue 12) against the real binary, the built-in simulator and grpcio: each
single request must leave the process alive and SERVING, get a proper answer, stay bounded in memory, and send
nothing to Apple when it is refused. Plus the fail-closed VerifyJWS contract (issue 19)."""
import base64
import concurrent.futures
import json
import os
import re
import subprocess
import tempfile
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2, notification_pb2, verify_pb2
from google.rpc import error_details_pb2, status_pb2
from conftest import Gateway, ROOT, throwaway_key
from procstat import rss_bytes

FIXTURES = os.path.join(ROOT, "Tests", "SignedDataTests", "Fixtures")
# RSS a single refused request may add (allocator slack, the decoded message itself): the 1 MB request of a
# million product_types used to add ~97 MiB.
RSS_BOUND_BYTES = 24 * 1024 * 1024


def fixture_jws(name):
    return open(os.path.join(FIXTURES, name)).read().strip()


GENUINE_HEADER = fixture_jws("notification-Production-1.jws").split(".")[0]


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(payload_text):
    """A JWS with Apple's genuine header (real x5c chain), `payload_text` as payload, and a zero signature."""
    return f"{GENUINE_HEADER}.{b64(payload_text.encode())}.{'A' * 86}"


def apple_requests(gw):
    """Apple attempts so far, from the gateway's own upstream metrics."""
    text = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
    return sum(float(v) for v in re.findall(r"^appstore_gateway_apple_requests_total\{[^}]*\} (\S+)$", text, re.M))


def assert_serving(gw):
    assert gw.proc.poll() is None, "the gateway process died"
    with grpc.insecure_channel(gw.address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def violations(error):
    """The google.rpc.BadRequest field violations of a failed call, as {field: description}."""
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
    found = {}
    for detail in status_pb2.Status.FromString(details).details:
        if detail.type_url.endswith("google.rpc.BadRequest"):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            found.update({v.field: v.description for v in bad.field_violations})
    return found


@pytest.fixture(scope="module")
def state_dir():
    return tempfile.mkdtemp(prefix="gw-hostile-")


@pytest.fixture(scope="module")
def simulated(state_dir):
    gw = Gateway(["--simulator", "--state-dir", state_dir])
    channel = grpc.insecure_channel(gw.address)
    yield gw, gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()
    gw.stop()


HUGE = "9223372036854775807"
NUMERIC_FIELDS = ["purchaseDate", "originalPurchaseDate", "expiresDate", "quantity", "revocationReason", "revocationDate",
                  "offerType", "price", "revocationPercentage"]
HOSTILE_PAYLOADS = {
    "signed-date-int64-max": '{"transactionId":"1","signedDate":%s}' % HUGE,
    "signed-date-int64-min": '{"transactionId":"1","signedDate":-9223372036854775808}',
    "signed-date-negative": '{"transactionId":"1","signedDate":-1}',
    "signed-date-float-huge": '{"transactionId":"1","signedDate":1e300}',
    "signed-date-inf": '{"transactionId":"1","signedDate":1e309}',
    "signed-date-past-int64": '{"transactionId":"1","signedDate":99999999999999999999999}',
    "signed-date-fraction": '{"transactionId":"1","signedDate":1.5}',
    "signed-date-year-10000": '{"transactionId":"1","signedDate":253402300800000}',
    "every-number-huge": '{"transactionId":"1","signedDate":1700000000000,%s}' % ",".join(
        '"%s":%s' % (f, HUGE) for f in NUMERIC_FIELDS),
    "every-number-float": '{"transactionId":"1","signedDate":1700000000000,%s}' % ",".join(
        '"%s":-1e308' % f for f in NUMERIC_FIELDS),
    "app-transaction-dates-huge": '{"receiptType":"Production","appAppleId":%s,"receiptCreationDate":%s}' % (HUGE, HUGE),
    "notification-numbers-huge": '{"notificationType":"TEST","signedDate":%s,"data":{"appAppleId":%s}}' % (HUGE, HUGE),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_PAYLOADS))
def test_hostile_payload_numbers_get_a_verdict(simulated, name):
    gw, stub = simulated
    response = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=forged(HOSTILE_PAYLOADS[name])), timeout=10)
    assert response.status not in (verify_pb2.VERIFICATION_STATUS_OK, verify_pb2.VERIFICATION_STATUS_UNSPECIFIED)
    assert response.message
    if name == "signed-date-fraction":
        # A fraction of a millisecond is read as Apple's libraries read it (truncated, as Xcode's own data needs):
        # the verdict then comes from the chain, checked at that time.
        assert response.status != verify_pb2.VERIFICATION_STATUS_MALFORMED, response.message
    elif name.startswith("signed-date") or name.endswith("dates-huge"):
        assert response.status == verify_pb2.VERIFICATION_STATUS_MALFORMED, response.message
    assert_serving(gw)


def test_a_million_product_types_is_refused_before_any_work(simulated):
    gw, stub = simulated
    assert_serving(gw)
    before_rss, before_apple = rss_bytes(gw.proc.pid), apple_requests(gw)
    for count in (1_000_000, 101):
        with pytest.raises(grpc.RpcError) as info:
            stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1", product_types=[1] * count), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert list(violations(info.value)) == ["product_types"]
    for field in ("product_ids", "subscription_group_identifiers"):
        with pytest.raises(grpc.RpcError) as info:
            stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1", **{field: ["x"] * 101}), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and field in violations(info.value)
    growth = rss_bytes(gw.proc.pid) - before_rss
    assert growth < RSS_BOUND_BYTES, f"RSS grew by {growth} bytes"
    assert apple_requests(gw) == before_apple
    assert_serving(gw)


@pytest.mark.parametrize("tid", [".", "..", "%2e%2e", "1/..", "12345678901234567890123"])
def test_dot_segments_and_non_digit_ids_never_reach_apple(simulated, tid):
    gw, stub = simulated
    before = apple_requests(gw)
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=tid), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "transaction_id" in violations(info.value)
    stream = stub.StreamNotifications(notification_pb2.StreamNotificationsRequest(transaction_id=tid), timeout=10)
    with pytest.raises(grpc.RpcError) as info:
        list(stream)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "transaction_id" in violations(info.value)
    assert apple_requests(gw) == before
    assert_serving(gw)


def test_oversized_strings_are_refused_with_their_field(simulated):
    gw, stub = simulated
    with pytest.raises(grpc.RpcError) as info:
        stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="a.b.c", app="x" * 100_000), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "app" in violations(info.value)
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1", revision="r" * 100_000), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "revision" in violations(info.value)
    assert_serving(gw)


def test_a_flood_of_cold_bad_chains_does_not_stall_health_checks(fresh_gateway):
    """Apple's real chain with signed dates outside its validity: every distinct date needs a full X.509
    validation (a cache miss) and fails. They run on the bounded pool; health checks on the same loop (one
    thread) keep answering within their normal deadline, and the flood gets verdicts or RESOURCE_EXHAUSTED."""
    gw = fresh_gateway("--simulator", env={"APPSTORE_GATEWAY_THREADS": "1"})
    channel = grpc.insecure_channel(gw.address)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    flood = [stub.VerifyJWS.future(verify_pb2.VerifyJWSRequest(
        jws=forged('{"transactionId":"1","signedDate":%d}' % (315532800000 + i))), timeout=60) for i in range(400)]
    checks = [health.Check.future(health_pb2.HealthCheckRequest(), timeout=5) for _ in range(50)]
    for check in checks:
        assert check.result().status == health_pb2.HealthCheckResponse.SERVING
    outcomes = set()
    for call in flood:
        try:
            outcomes.add(verify_pb2.VerificationStatus.Name(call.result().status))
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
            outcomes.add("RESOURCE_EXHAUSTED")
    assert outcomes <= {"VERIFICATION_STATUS_UNTRUSTED_CHAIN", "RESOURCE_EXHAUSTED"}, outcomes
    # The same bad chain at the same instant again: refused from the negative cache.
    again = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(
        jws=forged('{"transactionId":"1","signedDate":315532800000}')), timeout=10)
    assert again.status == verify_pb2.VERIFICATION_STATUS_UNTRUSTED_CHAIN
    channel.close()
    assert_serving(gw)


def test_all_pages_stops_under_the_byte_cap_and_continues(simulated, state_dir, fresh_gateway):
    _, full_stub = simulated
    index = json.load(open(os.path.join(state_dir, "transactions.json")))
    customers = [c for env in next(iter(index.values())).values() for c in env if c["transactionId"]]
    customer = max(customers, key=lambda c: c["transactions"])
    everything = full_stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True), timeout=60)
    assert not everything.has_more and everything.pages_fetched >= 2, "the biggest customer needs several pages"
    capped = fresh_gateway("--simulator", "--state-dir", state_dir,
                           env={"APPSTORE_GATEWAY_HISTORY_MAX_RESPONSE_BYTES": "30000"})
    with grpc.insecure_channel(capped.address) as channel:
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        ids, revision, calls = [], "", 0
        while True:
            page = stub.GetHistory(history_pb2.GetHistoryRequest(
                transaction_id=customer["transactionId"], all_pages=True, revision=revision), timeout=60)
            calls += 1
            assert page.ByteSize() <= 30000 or page.pages_fetched == 1
            ids += [t.transaction_id for t in page.transactions]
            if not page.has_more:
                break
            assert page.revision and page.revision != revision
            revision = page.revision
        assert calls >= 2
        assert sorted(set(ids)) == sorted(t.transaction_id for t in everything.transactions)




def start_with(fresh_gateway, tmp_path, apps, verification=""):
    key = throwaway_key(tmp_path)
    text = "apps:\n"
    for app in apps:
        text += f"""  - name: {app['name']}
    bundleId: {app['bundleId']}
    issuerId: 00000000-0000-0000-0000-000000000000
    keyId: ABCDEFGHIJ
    privateKeyFile: {key}
    environment: {app['environment']}
"""
        if "appAppleId" in app:
            text += f"    appAppleId: {app['appAppleId']}\n"
    text += f'verification:\n  rootCertificates: ["{ROOT}/certs/AppleRootCA-G3.cer"]\n{verification}'
    config = tmp_path / "gateway.yaml"
    config.write_text(text)
    gw = fresh_gateway("--config", str(config))
    return gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))


LOKI = {"name": "loki", "bundleId": "com.loki-project.loki-messenger"}
TALLER = {"name": "taller", "bundleId": "com.nineton.taller"}
SANDBOX_TRANSACTION = "transaction-Sandbox-1.jws"
PRODUCTION_NOTIFICATION = "notification-Production-1.jws"


def verify(stub, name, **fields):
    return stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=fixture_jws(name), **fields), timeout=10)


def test_empty_app_binds_the_only_configured_app(fresh_gateway, tmp_path):
    stub = start_with(fresh_gateway, tmp_path, [dict(LOKI, environment="sandbox")])
    ok = verify(stub, SANDBOX_TRANSACTION)
    assert ok.status == verify_pb2.VERIFICATION_STATUS_OK, ok.message
    assert ok.environment == common_pb2.ENVIRONMENT_SANDBOX
    other = verify(stub, PRODUCTION_NOTIFICATION)
    assert other.status in (verify_pb2.VERIFICATION_STATUS_INVALID_APP_IDENTIFIER,
                            verify_pb2.VERIFICATION_STATUS_INVALID_ENVIRONMENT), other.message


def test_empty_app_with_two_apps_is_invalid_argument(fresh_gateway, tmp_path):
    stub = start_with(fresh_gateway, tmp_path, [dict(LOKI, environment="sandbox"),
                                                dict(TALLER, environment="production", appAppleId=6450284872)])
    with pytest.raises(grpc.RpcError) as info:
        verify(stub, SANDBOX_TRANSACTION)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "app" in violations(info.value)


def test_allow_unbound_verification_restores_unbound_checks(fresh_gateway, tmp_path):
    stub = start_with(fresh_gateway, tmp_path, [dict(LOKI, environment="sandbox"),
                                                dict(TALLER, environment="production", appAppleId=6450284872)],
                      "  allowUnboundVerification: true\n")
    for name in (SANDBOX_TRANSACTION, PRODUCTION_NOTIFICATION):
        response = verify(stub, name)
        assert response.status == verify_pb2.VERIFICATION_STATUS_OK, response.message


@pytest.mark.parametrize("policy,expected", [
    ("production", verify_pb2.VERIFICATION_STATUS_INVALID_ENVIRONMENT),
    ("sandbox", verify_pb2.VERIFICATION_STATUS_OK),
    ("auto", verify_pb2.VERIFICATION_STATUS_OK),
])
def test_unspecified_environment_follows_the_app_policy(fresh_gateway, tmp_path, policy, expected):
    stub = start_with(fresh_gateway, tmp_path, [dict(LOKI, environment=policy, appAppleId=1)])
    response = verify(stub, SANDBOX_TRANSACTION, app="loki")
    assert response.status == expected, response.message
    assert response.environment == common_pb2.ENVIRONMENT_SANDBOX


def test_sandbox_policy_refuses_production_data(fresh_gateway, tmp_path):
    stub = start_with(fresh_gateway, tmp_path, [dict(TALLER, environment="sandbox", appAppleId=6450284872)])
    response = verify(stub, PRODUCTION_NOTIFICATION)
    assert response.status == verify_pb2.VERIFICATION_STATUS_INVALID_ENVIRONMENT, response.message
    assert response.environment == common_pb2.ENVIRONMENT_PRODUCTION


def test_app_apple_id_is_checked_for_production_data(fresh_gateway, tmp_path):
    stub = start_with(fresh_gateway, tmp_path, [dict(TALLER, environment="production", appAppleId=1)])
    response = verify(stub, PRODUCTION_NOTIFICATION)
    assert response.status == verify_pb2.VERIFICATION_STATUS_INVALID_APP_IDENTIFIER, response.message
    assert "appAppleId" in response.message
    right = start_with(fresh_gateway, tmp_path, [dict(TALLER, environment="production", appAppleId=6450284872)])
    assert verify(right, PRODUCTION_NOTIFICATION).status == verify_pb2.VERIFICATION_STATUS_OK
