"""The Retention Messaging API end to end: Apple's Python client (app-store-server-library 3.x) and the gateway
(grpcio → RetentionMessaging → the simulator) agree on every endpoint — what one uploads or configures, the other
lists or reads — and Apple's error codes reach both, typed."""
import http.server
import os
import re
import struct
import subprocess
import tempfile
import threading
import time
import uuid
import zlib

import grpc
import pytest
import yaml
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient
from appstoreserverlibrary.models.BulletPoint import BulletPoint
from appstoreserverlibrary.models.DefaultConfigurationRequest import DefaultConfigurationRequest
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.HeaderPosition import HeaderPosition
from appstoreserverlibrary.models.ImageSize import ImageSize
from appstoreserverlibrary.models.ImageState import ImageState
from appstoreserverlibrary.models.MessageState import MessageState
from appstoreserverlibrary.models.PerformanceTestRequest import PerformanceTestRequest
from appstoreserverlibrary.models.PerformanceTestStatus import PerformanceTestStatus
from appstoreserverlibrary.models.RealtimeUrlRequest import RealtimeUrlRequest
from appstoreserverlibrary.models.UploadMessageImage import UploadMessageImage
from appstoreserverlibrary.models.UploadMessageRequestBody import UploadMessageRequestBody
from google.rpc import error_details_pb2, status_pb2

from appstore.gateway.v1 import common_pb2, retention_pb2, retention_pb2_grpc
from conftest import GATEWAY_BIN, Gateway

SANDBOX = common_pb2.ENVIRONMENT_SANDBOX
PRODUCTION = common_pb2.ENVIRONMENT_PRODUCTION
ENDPOINTS = ["uploadImage", "deleteImage", "getImageList", "uploadMessage", "deleteMessage", "getMessageList",
             "configureDefaultMessage", "deleteDefaultMessage", "getDefaultMessage", "configureRealtimeUrl",
             "deleteRealtimeUrl", "getRealtimeUrl", "initiatePerformanceTest", "getPerformanceTestResults"]


def png(width, height, color_type=2):
    """A real PNG (zlib image data, CRCs) of one colour; colour type 2 is RGB, 6 is RGBA (transparent)."""
    channels = {2: 3, 6: 4}[color_type]
    raw = (b"\x00" + b"\x40" * (width * channels)) * height

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


class RetentionWorld:
    """A simulator (rate limits scaled up) and a gateway configured by its gateway.yaml, plus Apple's client."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="retention-simulator-")
        os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(self.directory, "tls", "ca.pem")
        self.sim = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", self.directory, "--seed", "7",
             "--customers", "4", "--rate-limit-scale", "1000"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.sim.stdout.readline()
        match = re.search(r"listening on (https://\S+)", line)
        if not match:
            self.sim.kill()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self.url = match.group(1)
        config = yaml.safe_load(open(os.path.join(self.directory, "gateway.yaml")))
        self.app = config["apps"][0]
        limits = {"sandboxFactor": 1, "maxWait": "5s"}
        for endpoint in ENDPOINTS:
            limits[endpoint] = {"perSecond": 100, "burst": 100}
        config["rateLimits"] = limits
        path = os.path.join(self.directory, "gateway-retention.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.gateway = Gateway(["--config", path])
        self.channel = grpc.insecure_channel(self.gateway.address)
        self.stub = retention_pb2_grpc.RetentionMessagingStub(self.channel)

    def client(self, environment):
        key = open(self.app["privateKeyFile"], "rb").read()
        client = AppStoreServerAPIClient(key, self.app["keyId"], self.app["issuerId"], self.app["bundleId"], environment)
        client._base_url = self.url + ("/sandbox" if environment == Environment.SANDBOX else "")
        return client

    def stop(self):
        self.channel.close()
        self.gateway.stop()
        self.sim.terminate()
        self.sim.wait(timeout=10)
        os.environ.pop("REQUESTS_CA_BUNDLE", None)


@pytest.fixture(scope="module")
def world():
    w = RetentionWorld()
    yield w
    w.stop()


def error_info(error):
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    for detail in status.details:
        if detail.Unpack(info):
            return info
    raise AssertionError("no ErrorInfo in the status details")


def grpc_error(call):
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value


def apple_error(call):
    with pytest.raises(APIException) as raised:
        call()
    return raised.value


def test_images_uploaded_by_either_are_listed_by_the_other(world):
    apple = world.client(Environment.PRODUCTION)
    full, bullet = uuid.uuid4(), uuid.uuid4()
    apple.upload_image(full, png(3840, 160))
    listed = world.stub.GetImageList(retention_pb2.GetImageListRequest(app="example"), timeout=30)
    assert listed.environment == PRODUCTION
    ours = {i.image_identifier: i for i in listed.images}
    assert ours[str(full)].state == retention_pb2.RETENTION_REVIEW_STATE_APPROVED
    assert ours[str(full)].size == retention_pb2.RETENTION_IMAGE_SIZE_FULL_SIZE

    world.stub.UploadImage(retention_pb2.UploadImageRequest(
        app="example", image_identifier=str(bullet).upper(), image=png(64, 64),
        image_size=retention_pb2.RETENTION_IMAGE_SIZE_BULLET_POINT), timeout=30)
    theirs = {i.imageIdentifier: i for i in apple.get_image_list().imageIdentifiers}
    assert theirs[bullet].imageState == ImageState.APPROVED and theirs[bullet].imageSize == ImageSize.BULLET_POINT

    # What was uploaded is in the simulator's state directory.
    stored = os.path.join(world.directory, "retention", world.app["bundleId"], "production", "images", f"{bullet}.png")
    assert open(stored, "rb").read() == png(64, 64)

    # The same identifier twice: Apple's ImageAlreadyExists for both.
    assert apple_error(lambda: apple.upload_image(bullet, png(64, 64), ImageSize.BULLET_POINT)).raw_api_error == 4090000
    error = grpc_error(lambda: world.stub.UploadImage(retention_pb2.UploadImageRequest(
        app="example", image_identifier=str(full), image=png(3840, 160)), timeout=30))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS and error_info(error).reason == "IMAGE_ALREADY_EXISTS"


def test_images_are_checked_before_they_reach_apple(world):
    import requests
    before = len(requests.get(world.url + "/simulator/writes", timeout=10).json()["writes"])
    for image, size in [(png(3840, 160, color_type=6), 0), (png(1920, 1080), 0), (b"GIF89a" + b"\0" * 64, 0)]:
        error = grpc_error(lambda: world.stub.UploadImage(retention_pb2.UploadImageRequest(
            app="example", image_identifier=str(uuid.uuid4()), image=image, image_size=size), timeout=30))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "image" in error.details()
    error = grpc_error(lambda: world.stub.DeleteImage(
        retention_pb2.DeleteImageRequest(app="example", image_identifier="not-a-uuid"), timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "image_identifier" in error.details()
    assert len(requests.get(world.url + "/simulator/writes", timeout=10).json()["writes"]) == before
    # Apple's own answer to a transparent image, for comparison: InvalidImage.
    apple = world.client(Environment.PRODUCTION)
    assert apple_error(lambda: apple.upload_image(uuid.uuid4(), png(3840, 160, 6))).raw_api_error == 4000161


def test_messages_defaults_and_deletions_agree(world):
    apple = world.client(Environment.PRODUCTION)
    full, bullet = uuid.uuid4(), uuid.uuid4()
    apple.upload_image(full, png(3840, 200))
    apple.upload_image(bullet, png(48, 48), ImageSize.BULLET_POINT)
    first, second = uuid.uuid4(), uuid.uuid4()
    apple.upload_message(first, UploadMessageRequestBody(
        header="Before you go", body="Take 50% off your next 3 months.",
        image=UploadMessageImage(imageIdentifier=full, altText="A gift"), headerPosition=HeaderPosition.ABOVE_IMAGE,
        bulletPoints=[BulletPoint(text="Offline listening", imageIdentifier=bullet, altText="Check")]))
    world.stub.UploadMessage(retention_pb2.UploadMessageRequest(
        app="example", message_identifier=str(second), header="Stay a little longer", body="Your playlists miss you.",
        bullet_points=[retention_pb2.RetentionBulletPoint(text="No ads", image_identifier=str(bullet), alt_text="x")]),
        timeout=30)
    ours = {m.message_identifier: m for m in world.stub.GetMessageList(
        retention_pb2.GetMessageListRequest(app="example"), timeout=30).messages}
    assert ours[str(first)].state == retention_pb2.RETENTION_REVIEW_STATE_APPROVED
    assert ours[str(first)].state_raw == "APPROVED"
    theirs = {m.messageIdentifier: m for m in apple.get_message_list().messageIdentifiers}
    assert theirs[second].messageState == MessageState.APPROVED

    # Defaults: configured by one, read by the other, both ways.
    apple.configure_default_message("com.example.monthly", "en-US", DefaultConfigurationRequest(messageIdentifier=first))
    got = world.stub.GetDefaultMessage(retention_pb2.GetDefaultMessageRequest(
        app="example", product_id="com.example.monthly", locale="en-US"), timeout=30)
    assert got.message_identifier == str(first)
    world.stub.ConfigureDefaultMessage(retention_pb2.ConfigureDefaultMessageRequest(
        app="example", product_id="com.example.monthly", locale="de-DE", message_identifier=str(second)), timeout=30)
    assert apple.get_default_message("com.example.monthly", "de-DE").messageIdentifier == second
    world.stub.DeleteDefaultMessage(retention_pb2.DeleteDefaultMessageRequest(
        app="example", product_id="com.example.monthly", locale="en-US"), timeout=30)
    assert apple_error(lambda: apple.get_default_message("com.example.monthly", "en-US")).raw_api_error == 4040020
    apple.delete_default_message("com.example.monthly", "de-DE")
    error = grpc_error(lambda: world.stub.GetDefaultMessage(retention_pb2.GetDefaultMessageRequest(
        app="example", product_id="com.example.monthly", locale="de-DE"), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error_info(error).reason == "DEFAULT_MESSAGE_NOT_FOUND"
    assert error_info(error).metadata["apple_error_code"] == "4040020"

    # An image a message uses cannot go; once the messages are deleted (by either) it can.
    error = grpc_error(lambda: world.stub.DeleteImage(
        retention_pb2.DeleteImageRequest(app="example", image_identifier=str(bullet)), timeout=30))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and error_info(error).reason == "IMAGE_IN_USE"
    world.stub.DeleteMessage(retention_pb2.DeleteMessageRequest(app="example", message_identifier=str(first)),
                             timeout=30)
    apple.delete_message(second)
    assert {first, second}.isdisjoint(m.messageIdentifier for m in apple.get_message_list().messageIdentifiers)
    apple.delete_image(bullet)
    world.stub.DeleteImage(retention_pb2.DeleteImageRequest(app="example", image_identifier=str(full)), timeout=30)
    left = {i.image_identifier for i in world.stub.GetImageList(
        retention_pb2.GetImageListRequest(app="example"), timeout=30).images}
    assert str(full) not in left and str(bullet) not in left
    error = grpc_error(lambda: world.stub.DeleteMessage(
        retention_pb2.DeleteMessageRequest(app="example", message_identifier=str(first)), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error_info(error).reason == "MESSAGE_NOT_FOUND"


def test_message_limits_are_refused_by_the_gateway_as_apples_client_refuses_them(world):
    too_long = "h" * 67
    error = grpc_error(lambda: world.stub.UploadMessage(retention_pb2.UploadMessageRequest(
        app="example", message_identifier=str(uuid.uuid4()), header=too_long, body="b"), timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "header" in error.details()
    with pytest.raises(ValueError):
        UploadMessageRequestBody(header=too_long, body="b")


class RealtimeEndpoint:
    """A developer's realtime URL that answers every request at once with 200 and an empty choice (Apple's own
    default message), for the performance tests the simulator runs against it."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/realtime"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def realtime_endpoint():
    endpoint = RealtimeEndpoint()
    yield endpoint
    endpoint.close()


def sandbox_original_transaction_id(world):
    """The original transaction id of a sandbox purchase (customer 0 is never a Family Sharing member)."""
    import json
    index = json.load(open(os.path.join(world.directory, "transactions.json")))
    customer = index[world.app["bundleId"]]["Sandbox"][0]
    return (customer["activeSubscriptions"] or [{"originalTransactionId": customer["transactionId"]}])[0][
        "originalTransactionId"]


def test_realtime_url_and_performance_tests_agree(world, realtime_endpoint):
    apple = world.client(Environment.SANDBOX)
    # The second URL answers: the simulator's performance tests send it signed realtime requests, as Apple's do.
    # It is cleartext on this machine, which only the simulator takes (Apple and the gateway take https:// only),
    # so Apple's client configures it.
    first, second, third = "https://realtime.example/one", realtime_endpoint.url, "https://realtime.example/production"
    world.stub.ConfigureRealtimeUrl(retention_pb2.ConfigureRealtimeUrlRequest(
        app="example", environment=SANDBOX, realtime_url=first), timeout=30)
    assert apple.get_realtime_url().realtimeURL == first
    apple.configure_realtime_url(RealtimeUrlRequest(realtimeURL=second))
    got = world.stub.GetRealtimeUrl(retention_pb2.GetRealtimeUrlRequest(app="example", environment=SANDBOX),
                                    timeout=30)
    assert got.realtime_url == second and got.environment == SANDBOX

    # Production takes a URL only once a performance test passed.
    error = grpc_error(lambda: world.stub.ConfigureRealtimeUrl(retention_pb2.ConfigureRealtimeUrlRequest(
        app="example", environment=PRODUCTION, realtime_url=third), timeout=30))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and error_info(error).reason == "FORBIDDEN_NO_PASSING_TEST"

    original = sandbox_original_transaction_id(world)
    started = world.stub.InitiatePerformanceTest(retention_pb2.InitiatePerformanceTestRequest(
        app="example", environment=SANDBOX, original_transaction_id=original), timeout=30)
    assert started.config.total_requests > 0 and started.request_id
    theirs = None
    for _ in range(100):
        theirs = apple.get_performance_test_results(started.request_id)
        if theirs.result != PerformanceTestStatus.PENDING:
            break
        time.sleep(0.1)
    ours = world.stub.GetPerformanceTestResults(retention_pb2.GetPerformanceTestResultsRequest(
        app="example", environment=SANDBOX, request_id=started.request_id), timeout=30)
    assert theirs.result == PerformanceTestStatus.PASS and ours.result == retention_pb2.PERFORMANCE_TEST_STATUS_PASS
    assert ours.target == theirs.target == second
    assert ours.success_rate == theirs.successRate and ours.num_pending == theirs.numPending
    assert ours.config.total_requests == theirs.config.totalRequests == started.config.total_requests
    assert ours.response_times.p90_millis == theirs.responseTimes.p90
    assert {f.result_raw: f.count for f in ours.failures} == {k: v for k, v in (theirs.rawFailures or {}).items()}

    # Apple's client starts the next test; the gateway reads it.
    again = apple.initiate_performance_test(PerformanceTestRequest(originalTransactionId=original))
    for _ in range(100):
        ours = world.stub.GetPerformanceTestResults(retention_pb2.GetPerformanceTestResultsRequest(
            app="example", environment=SANDBOX, request_id=again.requestId), timeout=30)
        if ours.result != retention_pb2.PERFORMANCE_TEST_STATUS_PENDING:
            break
        time.sleep(0.1)
    assert ours.result == retention_pb2.PERFORMANCE_TEST_STATUS_PASS

    # Production takes its own URL, as Apple recommends, though only the sandbox URL was tested.
    world.stub.ConfigureRealtimeUrl(retention_pb2.ConfigureRealtimeUrlRequest(
        app="example", environment=PRODUCTION, realtime_url=third), timeout=30)
    assert world.client(Environment.PRODUCTION).get_realtime_url().realtimeURL == third

    apple.delete_realtime_url()
    error = grpc_error(lambda: world.stub.GetRealtimeUrl(
        retention_pb2.GetRealtimeUrlRequest(app="example", environment=SANDBOX), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error_info(error).reason == "REALTIME_URL_NOT_FOUND"
    world.stub.ConfigureRealtimeUrl(retention_pb2.ConfigureRealtimeUrlRequest(
        app="example", environment=SANDBOX, realtime_url=first), timeout=30)
    world.stub.DeleteRealtimeUrl(retention_pb2.DeleteRealtimeUrlRequest(app="example", environment=SANDBOX),
                                 timeout=30)
    assert apple_error(lambda: apple.get_realtime_url()).raw_api_error == 4040021

    error = grpc_error(lambda: world.stub.GetPerformanceTestResults(retention_pb2.GetPerformanceTestResultsRequest(
        app="example", environment=SANDBOX, request_id=str(uuid.uuid4())), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error_info(error).reason == "PERFORMANCE_TEST_RUN_NOT_FOUND"


def test_a_realtime_url_must_be_https_for_the_gateway_and_the_simulator(world):
    """Apple's `realtimeURL` must begin with https:// (BadRequestRealtimeUrl otherwise): the gateway refuses any
    other before Apple is called, and the simulator answers Apple's 4000215 (but for http:// to this machine)."""
    import requests
    before = len(requests.get(world.url + "/simulator/writes", timeout=10).json()["writes"])
    for url in ["http://realtime.example/rt", "http://127.0.0.1:9/rt", "https://realtime.example/" + "a" * 240]:
        error = grpc_error(lambda: world.stub.ConfigureRealtimeUrl(retention_pb2.ConfigureRealtimeUrlRequest(
            app="example", environment=SANDBOX, realtime_url=url), timeout=30))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "realtime_url" in error.details(), url
    assert len(requests.get(world.url + "/simulator/writes", timeout=10).json()["writes"]) == before
    apple = world.client(Environment.SANDBOX)
    error = apple_error(lambda: apple.configure_realtime_url(RealtimeUrlRequest(realtimeURL="http://realtime.example/rt")))
    assert error.raw_api_error == 4000215


def test_a_performance_test_needs_the_original_transaction_id_of_a_sandbox_purchase(world):
    """Initiate Performance Test answers Apple's transaction-id errors; the gateway passes them on typed."""
    import json
    index = json.load(open(os.path.join(world.directory, "transactions.json")))
    customer = index[world.app["bundleId"]]["Sandbox"][0]
    apple = world.client(Environment.SANDBOX)
    apple.configure_realtime_url(RealtimeUrlRequest(realtimeURL="https://realtime.example/sandbox"))
    for transaction_id, code, reason in [
            ("1", 4000006, "INVALID_TRANSACTION_ID"),
            (customer["appTransactionId"], 4000048, "APP_TRANSACTION_ID_NOT_SUPPORTED")]:
        error = grpc_error(lambda: world.stub.InitiatePerformanceTest(retention_pb2.InitiatePerformanceTestRequest(
            app="example", environment=SANDBOX, original_transaction_id=transaction_id), timeout=30))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, transaction_id
        assert error_info(error).reason == reason and error_info(error).metadata["apple_error_code"] == str(code)
        assert apple_error(lambda: apple.initiate_performance_test(
            PerformanceTestRequest(originalTransactionId=transaction_id))).raw_api_error == code
    apple.delete_realtime_url()


def test_locales_are_apples_codes_spelled_exactly(world):
    """Apple's locales are the App Store's short codes, case-sensitive: the gateway refuses any other before Apple
    is called, naming the field, and the simulator answers Apple's InvalidLocale."""
    for locale in ["en_US", "en-us", "EN-US", "en", "zh-hans"]:
        error = grpc_error(lambda: world.stub.GetDefaultMessage(retention_pb2.GetDefaultMessageRequest(
            app="example", product_id="com.example.monthly", locale=locale), timeout=30))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "locale" in error.details(), locale
    apple = world.client(Environment.PRODUCTION)
    assert apple_error(lambda: apple.get_default_message("com.example.monthly", "en_US")).raw_api_error == 4000164
    error = grpc_error(lambda: world.stub.GetDefaultMessage(retention_pb2.GetDefaultMessageRequest(
        app="example", product_id="com.example.monthly", locale="zh-Hans"), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_the_service_is_listed_by_reflection_and_guarded_per_app(world):
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
    stub = reflection_pb2_grpc.ServerReflectionStub(world.channel)
    answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=30)
    names = {s.name for answer in answers for s in answer.list_services_response.service}
    assert "appstore.gateway.v1.RetentionMessaging" in names
    error = grpc_error(lambda: world.stub.GetImageList(retention_pb2.GetImageListRequest(app="nope"), timeout=30))
    assert error.code() == grpc.StatusCode.NOT_FOUND and error_info(error).reason == "UNKNOWN_APP"
