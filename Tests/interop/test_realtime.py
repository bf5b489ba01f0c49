"""The hosted Retention Messaging realtime URL end to end: the simulator posts signed realtime requests to the
gateway's `notifications.realtime.path` as the App Store does (and as its performance test does); a team's service
keeps ServeRealtimeRequests open with grpcio and chooses the retention message; the gateway answers Apple within its
budget with that choice (a promotional offer signed with the app's key), or the app's configured default when no
stream is connected or the one connected is too slow."""
import base64
import json
import os
import queue
import re
import tempfile
import threading
import time
import uuid

import grpc
import jwt
import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from appstore.gateway.v1 import gateway_pb2_grpc, realtime_pb2
from test_webhook import Simulator, WebhookGateway

MESSAGE = "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
DEFAULT_MESSAGE = "d4e5f6a7-8901-2345-d4e5-f6a789012345"


@pytest.fixture(scope="module")
def sim():
    simulator = Simulator()
    yield simulator
    simulator.stop()


@pytest.fixture(scope="module")
def gw(sim):
    app = sim.config["apps"][0]["name"]
    notifications = {
        "webhook": {"listen": "127.0.0.1:0", "path": "/apple/notifications"},
        "store": {"sqlite": os.path.join(tempfile.mkdtemp(prefix="gw-realtime-"), "n.db"), "reconcileInterval": "0"},
        "realtime": {"path": "/apple/realtime", "timeout": "300ms", "maxPendingPerStream": 4,
                     "defaults": [{"app": app, "messageIdentifier": DEFAULT_MESSAGE}]},
    }
    gateway = WebhookGateway(sim, extra={"notifications": notifications})
    gateway.realtime = gateway.webhook.replace("/apple/notifications", "/apple/realtime")
    yield gateway
    gateway.stop()


def send(sim, url, count=1, concurrency=1, threshold=500, **body):
    """POST /simulator/realtime: the simulator's signed realtime requests to `url`, each answer timed."""
    answer = requests.post(sim.url + "/simulator/realtime", verify=sim.ca, timeout=60, json=dict(
        url=url, count=count, concurrency=concurrency, responseTimeThreshold=threshold, **body))
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def metric(gw, name, **labels):
    text = gw.metrics()
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if match and match.group(1) == name:
            have = ",".join(sorted(match.group(2).split(",")))
            if all(f'{k}="{v}"' in have.split(",") for k, v in labels.items()):
                total += float(match.group(3))
        elif line.startswith(name + " ") and not labels:
            total += float(line.split()[1])
    return total


class TeamService:
    """A team's service: keeps ServeRealtimeRequests open and answers each request with `choose(event)` after
    `delay` seconds."""

    def __init__(self, gw, apps, choose, delay=0.0, metadata=None):
        self.requests = queue.Queue()
        self.requests.put(realtime_pb2.ServeRealtimeRequestsRequest(serve=realtime_pb2.RealtimeServe(apps=apps)))
        self.channel = grpc.insecure_channel(gw.address)
        self.call = gateway_pb2_grpc.AppStoreGatewayStub(self.channel).ServeRealtimeRequests(
            self._outgoing(), metadata=metadata)
        self.choose, self.delay, self.seen, self.error = choose, delay, [], None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _outgoing(self):
        while True:
            item = self.requests.get()
            if item is None:
                return
            yield item

    def _serve(self):
        try:
            for event in self.call:
                self.seen.append(event)
                if self.delay:
                    time.sleep(self.delay)
                self.requests.put(realtime_pb2.ServeRealtimeRequestsRequest(answer=self.choose(event)))
        except grpc.RpcError as error:
            self.error = error

    def close(self):
        self.requests.put(None)
        self.call.cancel()
        self.thread.join(timeout=10)
        self.channel.close()


def wait_for_streams(gw, count, timeout=10):
    deadline = time.time() + timeout
    while metric(gw, "appstore_gateway_realtime_streams") != count:
        assert time.time() < deadline, f"the gateway never had {count} realtime streams"
        time.sleep(0.05)


def app_public_key(sim):
    key = serialization.load_pem_private_key(open(sim.config["apps"][0]["privateKeyFile"], "rb").read(), None)
    return key.public_key()


def message_answer(event):
    return realtime_pb2.RealtimeAnswer(request_identifier=event.request.request_identifier,
                                       message=realtime_pb2.RealtimeMessage(message_identifier=MESSAGE))


def test_without_a_stream_the_apps_default_is_answered_at_once(sim, gw):
    app = sim.config["apps"][0]["name"]
    before = metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="defaulted")
    (result,) = send(sim, gw.realtime)
    assert result["status"] == 200 and result["result"] == "SUCCESS", result
    assert json.loads(result["body"]) == {"message": {"messageIdentifier": DEFAULT_MESSAGE}}
    assert metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="defaulted") == before + 1


def test_a_connected_service_chooses_the_message_within_the_budget(sim, gw):
    app = sim.config["apps"][0]
    service = TeamService(gw, [app["name"]], message_answer)
    try:
        wait_for_streams(gw, 1)
        before = metric(gw, "appstore_gateway_realtime_requests_total", app=app["name"], outcome="answered")
        results = send(sim, gw.realtime, count=6, concurrency=3, productId="com.example.monthly",
                       originalTransactionId="2000000000000042")
        for result in results:
            assert result["status"] == 200 and result["result"] == "SUCCESS", result
            assert json.loads(result["body"]) == {"message": {"messageIdentifier": MESSAGE}}
        # The service saw Apple's request, verified and decoded, with its app and budget.
        assert len(service.seen) == 6
        event = service.seen[0]
        assert event.app == app["name"] and 0 < event.budget_millis <= 300
        assert event.request.app_apple_id == app["appAppleId"] and event.request.product_id == "com.example.monthly"
        assert event.request.original_transaction_id == "2000000000000042"
        assert {e.request.request_identifier for e in service.seen} == {r["requestIdentifier"] for r in results}
        assert metric(gw, "appstore_gateway_realtime_requests_total", app=app["name"], outcome="answered") == before + 6
        assert metric(gw, "appstore_gateway_realtime_duration_seconds_count", app=app["name"], outcome="answered") >= 6
    finally:
        service.close()
    wait_for_streams(gw, 0)


def test_alternate_product_and_signed_promotional_offers_reach_apple(sim, gw):
    app = sim.config["apps"][0]
    token = str(uuid.uuid4())
    choices = iter([
        realtime_pb2.RealtimeAnswer(alternate_product=realtime_pb2.RealtimeAlternateProduct(
            message_identifier=MESSAGE, product_id="com.example.yearly", billing_plan_type="MONTHLY")),
        realtime_pb2.RealtimeAnswer(promotional_offer=realtime_pb2.RealtimePromotionalOffer(
            message_identifier=MESSAGE, product_id="com.example.monthly", offer_identifier="WINBACK50")),
        realtime_pb2.RealtimeAnswer(promotional_offer=realtime_pb2.RealtimePromotionalOffer(
            message_identifier=MESSAGE, product_id="com.example.monthly", offer_identifier="WINBACK50",
            signature=realtime_pb2.REALTIME_OFFER_SIGNATURE_V1, app_account_token=token)),
        realtime_pb2.RealtimeAnswer(),
    ])

    def choose(event):
        answer = next(choices)
        answer.request_identifier = event.request.request_identifier
        return answer

    service = TeamService(gw, [app["bundleId"]], choose)
    try:
        wait_for_streams(gw, 1)
        product, v2, v1, nothing = [json.loads(r["body"]) for r in send(
            sim, gw.realtime, count=4, originalTransactionId="2000000000000077")]
    finally:
        service.close()
    assert product == {"alternateProduct": {"messageIdentifier": MESSAGE, "productId": "com.example.yearly",
                                            "billingPlanType": "MONTHLY"}}
    # V2: a StoreKit 2 promotional offer JWS, signed with the app's key, for the request's customer.
    offer = v2["promotionalOffer"]
    assert offer["messageIdentifier"] == MESSAGE and "promotionalOfferSignatureV1" not in offer
    token_v2 = offer["promotionalOfferSignatureV2"]
    assert jwt.get_unverified_header(token_v2)["kid"] == app["keyId"]
    claims = jwt.decode(token_v2, app_public_key(sim), algorithms=["ES256"], audience="promotional-offer")
    assert (claims["bid"], claims["iss"]) == (app["bundleId"], app["issuerId"])
    assert (claims["productId"], claims["offerIdentifier"], claims["transactionId"]) == (
        "com.example.monthly", "WINBACK50", "2000000000000077")
    # V1: the StoreKit 1 signature over Apple's fields, verified with the key's public half.
    signature = v1["promotionalOffer"]["promotionalOfferSignatureV1"]
    assert signature["keyId"] == app["keyId"] and signature["appAccountToken"] == token
    payload = "\u2063".join([app["bundleId"], app["keyId"], "com.example.monthly", "WINBACK50", token,
                             signature["nonce"], str(signature["timestamp"])])
    app_public_key(sim).verify(base64.b64decode(signature["encodedSignature"]), payload.encode(),
                               ec.ECDSA(hashes.SHA256()))
    assert nothing == {}


def test_a_slow_service_is_late_and_apple_gets_the_default_in_time(sim, gw):
    app = sim.config["apps"][0]["name"]
    service = TeamService(gw, [app], message_answer, delay=1.0)
    try:
        wait_for_streams(gw, 1)
        before = metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="late")
        (result,) = send(sim, gw.realtime, threshold=500)
        assert result["status"] == 200 and result["result"] == "SUCCESS", result
        assert json.loads(result["body"]) == {"message": {"messageIdentifier": DEFAULT_MESSAGE}}
        assert result["latencyMillis"] < 500
        assert metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="late") == before + 1
    finally:
        service.close()


def test_an_invalid_answer_gets_the_default_and_a_stream_must_start_with_serve(sim, gw):
    app = sim.config["apps"][0]["name"]

    def invalid(event):
        return realtime_pb2.RealtimeAnswer(request_identifier=event.request.request_identifier,
                                           message=realtime_pb2.RealtimeMessage(message_identifier="not-a-uuid"))

    service = TeamService(gw, [app], invalid)
    try:
        wait_for_streams(gw, 1)
        (result,) = send(sim, gw.realtime)
        assert json.loads(result["body"]) == {"message": {"messageIdentifier": DEFAULT_MESSAGE}}
        assert metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="invalid") >= 1
    finally:
        service.close()
    channel = grpc.insecure_channel(gw.address)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    with pytest.raises(grpc.RpcError) as refused:
        list(stub.ServeRealtimeRequests(iter([realtime_pb2.ServeRealtimeRequestsRequest(
            answer=realtime_pb2.RealtimeAnswer(request_identifier="x"))]), timeout=10))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as unknown:
        list(stub.ServeRealtimeRequests(iter([realtime_pb2.ServeRealtimeRequestsRequest(
            serve=realtime_pb2.RealtimeServe(apps=["no-such-app"]))]), timeout=10))
    assert unknown.value.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
    channel.close()


def test_forged_and_garbage_realtime_requests_are_refused(sim, gw):
    def post(body):
        return requests.post(gw.realtime, data=body, headers={"content-type": "application/json"}, timeout=10)

    assert post(b"not json").status_code == 400
    assert post(json.dumps({"signedPayload": "a.b.c"}).encode()).status_code == 400
    # A genuine notification is not a realtime request.
    (notification,) = sim.deliver(url="http://127.0.0.1:9/unused", deliver=False)
    assert post(json.dumps({"signedPayload": notification["signedPayload"]}).encode()).status_code == 400
    assert requests.get(gw.realtime, timeout=10).status_code in (404, 405)
    assert metric(gw, "appstore_gateway_realtime_rejected_total") >= 3


def configure_realtime_url_at_the_simulator(sim, url):
    """Configure Realtime URL (sandbox) for the simulator's first app, through Apple's Python client."""
    from appstoreserverlibrary.api_client import AppStoreServerAPIClient
    from appstoreserverlibrary.models.Environment import Environment
    from appstoreserverlibrary.models.RealtimeUrlRequest import RealtimeUrlRequest
    app = sim.config["apps"][0]
    client = AppStoreServerAPIClient(open(app["privateKeyFile"], "rb").read(), app["keyId"], app["issuerId"],
                                     app["bundleId"], Environment.SANDBOX)
    client._base_url = sim.url + "/sandbox"
    previous = os.environ.get("REQUESTS_CA_BUNDLE")
    os.environ["REQUESTS_CA_BUNDLE"] = sim.ca
    try:
        client.configure_realtime_url(RealtimeUrlRequest(realtimeURL=url))
    finally:
        if previous is None:
            del os.environ["REQUESTS_CA_BUNDLE"]
        else:
            os.environ["REQUESTS_CA_BUNDLE"] = previous


def sandbox_original_transaction_id(sim):
    """The original transaction id of a sandbox purchase of the first app (customer 0 never shares a family's)."""
    index = json.load(open(os.path.join(sim.directory, "transactions.json")))
    customer = index[sim.config["apps"][0]["bundleId"]]["Sandbox"][0]
    return (customer["activeSubscriptions"] or [{"originalTransactionId": customer["transactionId"]}])[0][
        "originalTransactionId"]


def test_a_performance_test_reaches_the_team_through_the_hosted_url_and_passes():
    """Apple's performance test as the simulator runs it: the realtime URL configured through the gateway's
    RetentionMessaging service is the gateway's own hosted path, so every signed request of the test reaches the
    team's ServeRealtimeRequests stream, and its answers come back within the test's threshold."""
    from appstore.gateway.v1 import common_pb2, retention_pb2, retention_pb2_grpc

    sim = Simulator("--rate-limit-scale", "1000")
    app = sim.config["apps"][0]["name"]
    limits = {"sandboxFactor": 1, "maxWait": "5s"}
    for endpoint in ("configureRealtimeUrl", "initiatePerformanceTest", "getPerformanceTestResults"):
        limits[endpoint] = {"perSecond": 100, "burst": 100}
    notifications = {
        "webhook": {"listen": "127.0.0.1:0", "path": "/apple/notifications"},
        "store": {"sqlite": os.path.join(tempfile.mkdtemp(prefix="gw-perf-"), "n.db"), "reconcileInterval": "0"},
        "realtime": {"path": "/apple/realtime", "timeout": "300ms",
                     "defaults": [{"app": app, "messageIdentifier": DEFAULT_MESSAGE}]},
    }
    gw = WebhookGateway(sim, extra={"notifications": notifications, "rateLimits": limits})
    team = None
    try:
        team = TeamService(gw, [app], message_answer)
        wait_for_streams(gw, 1)
        sandbox = common_pb2.ENVIRONMENT_SANDBOX
        realtime_url = gw.webhook.replace("/apple/notifications", "/apple/realtime")
        # The hosted path here is cleartext on loopback: the gateway (like Apple) configures only https:// URLs,
        # the simulator also takes http:// to this machine, so Apple's client configures it there directly.
        configure_realtime_url_at_the_simulator(sim, realtime_url)
        original = sandbox_original_transaction_id(sim)
        with grpc.insecure_channel(gw.address) as channel:
            stub = retention_pb2_grpc.RetentionMessagingStub(channel)
            started = stub.InitiatePerformanceTest(retention_pb2.InitiatePerformanceTestRequest(
                app=app, environment=sandbox, original_transaction_id=original), timeout=30)
            total = started.config.total_requests
            result = None
            for _ in range(120):
                result = stub.GetPerformanceTestResults(retention_pb2.GetPerformanceTestResultsRequest(
                    app=app, environment=sandbox, request_id=started.request_id), timeout=30)
                if result.result != retention_pb2.PERFORMANCE_TEST_STATUS_PENDING:
                    break
                time.sleep(0.25)
        assert result.result == retention_pb2.PERFORMANCE_TEST_STATUS_PASS, result
        assert result.target == realtime_url
        assert total > 0 and len(team.seen) == total
        assert {event.request.original_transaction_id for event in team.seen} == {original}
        assert metric(gw, "appstore_gateway_realtime_requests_total", app=app, outcome="answered") == total
    finally:
        if team is not None:
            team.close()
        gw.stop()
        sim.stop()
