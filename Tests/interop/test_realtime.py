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
from cryptography import x509
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


def signed_realtime_request(sim, **fields):
    """A DecodedRealtimeRequestBody signed with the simulator's PKI as the App Store signs one (x5c chain, ES256):
    a new request identifier, signed now, for the first app in Sandbox, unless `fields` say otherwise."""
    pki = os.path.join(sim.directory, "pki")

    def der(name):
        certificate = x509.load_pem_x509_certificate(open(os.path.join(pki, name), "rb").read())
        return base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()

    payload = {"originalTransactionId": "2000000000000042", "appAppleId": sim.config["apps"][0]["appAppleId"],
               "productId": "com.example.monthly", "userLocale": "en-US", "requestIdentifier": str(uuid.uuid4()),
               "environment": "Sandbox", "signedDate": int(time.time() * 1000)}
    payload.update(fields)
    key = serialization.load_pem_private_key(open(os.path.join(pki, "leaf.key.pem"), "rb").read(), None)
    return jwt.encode(payload, key, algorithm="ES256",
                      headers={"x5c": [der("leaf.pem"), der("intermediate.pem"), der("root.pem")]})


def post_realtime(url, jws):
    return requests.post(url, json={"signedPayload": jws}, timeout=10)


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


def realtime_gateway(sim, prefix, realtime, apps=None):
    """A gateway of the test's own with the realtime URL at /apple/realtime (`url`), `realtime` its other keys."""
    notifications = {
        "webhook": {"listen": "127.0.0.1:0", "path": "/apple/notifications"},
        "store": {"sqlite": os.path.join(tempfile.mkdtemp(prefix=prefix), "n.db"), "reconcileInterval": "0"},
        "realtime": {"path": "/apple/realtime", "timeout": "300ms", **realtime},
    }
    extra = {"notifications": notifications}
    if apps is not None:
        extra["apps"] = apps
    gateway = WebhookGateway(sim, extra=extra)
    gateway.url = gateway.webhook.replace("/apple/notifications", "/apple/realtime")
    return gateway


def test_a_replayed_request_gets_the_first_answer_and_an_old_or_future_one_is_refused(sim):
    """A captured realtime request replayed gets the bytes its first answer had, never a fresh signature; one
    signed longer ago than notifications.realtime.maxRequestAge (60s by default), or ahead of the gateway's clock
    by more than the skew allowed, is refused. The app's default here is a V1 promotional offer, signed anew for
    every fresh request and bound to no customer, which the gateway warns of when it starts."""
    app = sim.config["apps"][0]
    gw = realtime_gateway(sim, "gw-replay-", {"defaults": [{
        "app": app["name"], "messageIdentifier": DEFAULT_MESSAGE, "productId": "com.example.monthly",
        "offerIdentifier": "WINBACK50", "signature": "v1"}]})
    try:
        captured = signed_realtime_request(sim)
        first = post_realtime(gw.url, captured)
        assert first.status_code == 200, first.text
        offer = first.json()["promotionalOffer"]["promotionalOfferSignatureV1"]
        assert offer["offerIdentifier"] == "WINBACK50"
        # Another request gets its own signature: the default is signed per request.
        other = post_realtime(gw.url, signed_realtime_request(sim))
        assert other.status_code == 200 and other.content != first.content
        for _ in range(3):
            again = post_realtime(gw.url, captured)
            assert (again.status_code, again.content) == (200, first.content)
        assert metric(gw, "appstore_gateway_realtime_requests_total", app=app["name"], outcome="repeated") == 3
        now = int(time.time() * 1000)
        for signed_date in (now - 199_000, now - 75_000):
            stale = post_realtime(gw.url, signed_realtime_request(sim, signedDate=signed_date))
            assert stale.status_code == 400, stale.text
        assert metric(gw, "appstore_gateway_realtime_rejected_total", reason="stale") == 2
        future = post_realtime(gw.url, signed_realtime_request(sim, signedDate=now + 120_000))
        assert future.status_code == 400, future.text
        assert metric(gw, "appstore_gateway_realtime_rejected_total", reason="future") == 1
        # A second of skew is tolerated, and so is a request 20 s old.
        for signed_date in (now + 1_000, now - 20_000):
            assert post_realtime(gw.url, signed_realtime_request(sim, signedDate=signed_date)).status_code == 200
        # The warning at start, once, naming the app.
        deadline = time.time() + 10
        while "V1 promotional offer" not in gw.read_log() and time.time() < deadline:
            time.sleep(0.05)
        warning = [line for line in gw.read_log().splitlines() if "V1 promotional offer" in line]
        assert len(warning) == 1 and app["name"] in warning[0], gw.read_log()
    finally:
        gw.stop()


def test_the_request_age_admitted_is_configured(sim):
    app = sim.config["apps"][0]
    gw = realtime_gateway(sim, "gw-age-", {"maxRequestAge": "30s", "defaults": [
        {"app": app["name"], "messageIdentifier": DEFAULT_MESSAGE}]})
    try:
        now = int(time.time() * 1000)
        assert post_realtime(gw.url, signed_realtime_request(sim, signedDate=now - 45_000)).status_code == 400
        assert post_realtime(gw.url, signed_realtime_request(sim, signedDate=now - 15_000)).status_code == 200
    finally:
        gw.stop()


def test_sandbox_requests_reach_a_production_app_and_production_ones_need_its_apple_id(sim):
    """Apple's performance test sends Sandbox requests, and must pass before the Production realtime URL can be
    set: an app configured `environment: production` answers them, its app Apple id checked in Production only
    (as Apple's libraries check it)."""
    config_apps = json.loads(json.dumps(sim.config["apps"][:1]))
    config_apps[0]["environment"] = "production"
    gw = realtime_gateway(sim, "gw-prod-", {"defaults": [
        {"app": config_apps[0]["name"], "messageIdentifier": DEFAULT_MESSAGE}]}, apps=config_apps)
    try:
        url = gw.url
        expected = {"message": {"messageIdentifier": DEFAULT_MESSAGE}}
        for fields in ({}, {"appAppleId": 0}, {"appAppleId": 42}):
            answer = post_realtime(url, signed_realtime_request(sim, **fields))
            assert answer.status_code == 200 and answer.json() == expected, (fields, answer.text)
        # The simulator's own Sandbox requests, as its performance test sends them.
        (result,) = send(sim, url)
        assert result["result"] == "SUCCESS" and json.loads(result["body"]) == expected, result
        production = post_realtime(url, signed_realtime_request(sim, environment="Production"))
        assert production.status_code == 200 and production.json() == expected, production.text
        for wrong in (0, 42):
            refused = post_realtime(url, signed_realtime_request(sim, environment="Production", appAppleId=wrong))
            assert refused.status_code == 403, refused.text
    finally:
        gw.stop()


def modify_subscription(**fields):
    from appstore.gateway.v1 import advanced_commerce_pb2
    change = advanced_commerce_pb2.AdvancedCommerceModifyChangeItem(
        current_sku="BASIC_MONTHLY", sku="PREMIUM_MONTHLY", description="Premium, every month",
        display_name="Premium", price=4990, reason="UPGRADE", effective="IMMEDIATELY")
    return advanced_commerce_pb2.AdvancedCommerceSubscriptionModify(change_items=[change], **fields)


def test_an_advanced_commerce_answer_is_signed_for_the_requests_subscription(sim, gw):
    """Apple's fourth answer kind: `advancedCommerceInfo` with the message and `advancedCommerceData`, the Base64 of
    `{"signatureInfo": {"token": JWS}}` where the JWS (audience advanced-commerce-api, the app's key) carries the
    SubscriptionModifyInAppRequest for the request's subscription. One naming another subscription, or with more
    than the one change Apple allows here, is invalid: the default is answered."""
    from appstore.gateway.v1 import advanced_commerce_pb2
    app = sim.config["apps"][0]
    reference = str(uuid.uuid4())
    choices = iter([
        realtime_pb2.RealtimeAdvancedCommerceInfo(message_identifier=MESSAGE, modify_subscription=modify_subscription(
            retain_billing_cycle=True,
            request_info=advanced_commerce_pb2.AdvancedCommerceRequestInfo(request_reference_id=reference))),
        realtime_pb2.RealtimeAdvancedCommerceInfo(
            message_identifier=MESSAGE, modify_subscription=modify_subscription(transaction_id="2000000000000077")),
        realtime_pb2.RealtimeAdvancedCommerceInfo(
            message_identifier=MESSAGE, modify_subscription=modify_subscription(transaction_id="999")),
        realtime_pb2.RealtimeAdvancedCommerceInfo(
            message_identifier=MESSAGE, modify_subscription=modify_subscription(remove_skus=["EXTRA"])),
    ])

    def choose(event):
        return realtime_pb2.RealtimeAnswer(request_identifier=event.request.request_identifier,
                                           advanced_commerce_info=next(choices))

    service = TeamService(gw, [app["name"]], choose)
    try:
        wait_for_streams(gw, 1)
        before = metric(gw, "appstore_gateway_realtime_requests_total", app=app["name"], outcome="invalid")
        signed, same, other, removing = [json.loads(r["body"]) for r in send(
            sim, gw.realtime, count=4, originalTransactionId="2000000000000077")]
    finally:
        service.close()
    requests_signed = []
    for body in (signed, same):
        assert list(body) == ["advancedCommerceInfo"], body
        info = body["advancedCommerceInfo"]
        assert info["messageIdentifier"] == MESSAGE
        data = json.loads(base64.b64decode(info["advancedCommerceData"], validate=True))
        assert list(data) == ["signatureInfo"] and list(data["signatureInfo"]) == ["token"]
        token = data["signatureInfo"]["token"]
        assert jwt.get_unverified_header(token)["kid"] == app["keyId"]
        claims = jwt.decode(token, app_public_key(sim), algorithms=["ES256"], audience="advanced-commerce-api")
        assert (claims["bid"], claims["iss"]) == (app["bundleId"], app["issuerId"])
        request = json.loads(base64.b64decode(claims["request"]))
        assert (request["operation"], request["version"]) == ("MODIFY_SUBSCRIPTION", "1")
        assert request["transactionId"] == "2000000000000077"
        assert [item["SKU"] for item in request["changeItems"]] == ["PREMIUM_MONTHLY"]
        assert "addItems" not in request and "removeItems" not in request
        requests_signed.append(request)
    assert requests_signed[0]["requestInfo"]["requestReferenceId"] == reference
    assert requests_signed[0]["retainBillingCycle"] is True
    # An empty reference id is a new UUID.
    assert uuid.UUID(requests_signed[1]["requestInfo"]["requestReferenceId"])
    for body in (other, removing):
        assert body == {"message": {"messageIdentifier": DEFAULT_MESSAGE}}, body
    assert metric(gw, "appstore_gateway_realtime_requests_total", app=app["name"], outcome="invalid") == before + 2


def test_a_promotional_offer_is_signed_for_the_requests_customer_only(sim, gw):
    """The StoreKit 2 offer signature names the request's originalTransactionId, as Apple requires: an answer
    naming another transaction is invalid and the app's default goes to Apple instead."""
    app = sim.config["apps"][0]
    choices = iter(["", "2000000000000088", "1"])

    def choose(event):
        return realtime_pb2.RealtimeAnswer(
            request_identifier=event.request.request_identifier,
            promotional_offer=realtime_pb2.RealtimePromotionalOffer(
                message_identifier=MESSAGE, product_id="com.example.monthly", offer_identifier="WINBACK50",
                transaction_id=next(choices)))

    service = TeamService(gw, [app["name"]], choose)
    try:
        wait_for_streams(gw, 1)
        own, named, other = [json.loads(r["body"]) for r in send(
            sim, gw.realtime, count=3, originalTransactionId="2000000000000088")]
    finally:
        service.close()
    for body in (own, named):
        token = body["promotionalOffer"]["promotionalOfferSignatureV2"]
        claims = jwt.decode(token, app_public_key(sim), algorithms=["ES256"], audience="promotional-offer")
        assert claims["transactionId"] == "2000000000000088"
    assert other == {"message": {"messageIdentifier": DEFAULT_MESSAGE}}
