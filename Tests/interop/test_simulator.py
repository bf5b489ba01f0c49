"""The App Store simulator against Apple's own Python library (app-store-server-library) as the oracle:
its API client pages histories over HTTPS (HTTP/1.1) and its SignedDataVerifier accepts the simulator's JWS
given only the simulator's root; the gateway's VerifyJWS agrees."""
import json
import os
import re
import subprocess
import tempfile
import time

import grpc
import pytest
import yaml
from appstoreserverlibrary.api_client import AppStoreServerAPIClient, APIException, GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

from conftest import GATEWAY_BIN, ROOT, Gateway

# Apple's own JSON samples, copied into the repository (origin in the folder's ORIGIN.md).
SAMPLES = os.path.join(ROOT, "Tests", "SimulatorTests", "Fixtures")


class Simulator:
    def __init__(self, directory):
        self.proc = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", directory, "--seed", "42",
             "--customers", "12"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"listening on (https://\S+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self.url = match.group(1)
        self.directory = directory
        self.config = yaml.safe_load(open(os.path.join(directory, "gateway.yaml")))
        self.app = self.config["apps"][0]
        self.index = json.load(open(os.path.join(directory, "transactions.json")))

    def client(self, environment):
        key = open(self.app["privateKeyFile"], "rb").read()
        client = AppStoreServerAPIClient(key, self.app["keyId"], self.app["issuerId"], self.app["bundleId"], environment)
        # The library has no base-URL option; point it at the simulator like a test double would.
        client._base_url = self.url + ("/sandbox" if environment == Environment.SANDBOX else "")
        return client

    def verifier(self, environment):
        roots = [open(os.path.join(self.directory, "pki", "root.cer"), "rb").read()]
        return SignedDataVerifier(roots, False, environment, self.app["bundleId"], self.app["appAppleId"])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def simulator():
    directory = tempfile.mkdtemp(prefix="simulator-")
    os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(directory, "tls", "ca.pem")
    sim = Simulator(directory)
    yield sim
    sim.stop()
    os.environ.pop("REQUESTS_CA_BUNDLE", None)


def customers(sim, environment="Production"):
    return sim.index[sim.app["bundleId"]][environment]


def test_apple_client_pages_a_whole_history_and_apple_verifier_accepts_every_transaction(simulator):
    client = simulator.client(Environment.PRODUCTION)
    verifier = simulator.verifier(Environment.PRODUCTION)
    customer = max(customers(simulator), key=lambda c: c["transactions"])
    assert customer["transactions"] > 20, "pick a customer with several pages"
    revision, seen, pages = None, [], 0
    request = TransactionHistoryRequest(sort=Order.ASCENDING)
    while True:
        response = client.get_transaction_history(customer["transactionId"], revision, request, GetTransactionHistoryVersion.V2)
        pages += 1
        for jws in response.signedTransactions:
            decoded = verifier.verify_and_decode_signed_transaction(jws)
            seen.append(decoded.transactionId)
        assert response.bundleId == simulator.app["bundleId"]
        if not response.hasMore:
            break
        revision = response.revision
    assert pages >= 2
    assert len(seen) == len(set(seen)) == customer["transactions"]


def test_apple_client_pages_notification_history(simulator):
    client = simulator.client(Environment.PRODUCTION)
    verifier = simulator.verifier(Environment.PRODUCTION)
    now = int(time.time() * 1000)
    request = NotificationHistoryRequest(startDate=now - 179 * 86_400_000, endDate=now)
    token, count, pages = None, 0, 0
    while True:
        response = client.get_notification_history(token, request)
        pages += 1
        for item in response.notificationHistory:
            verifier.verify_and_decode_notification(item.signedPayload)
            assert item.sendAttempts
            count += 1
        if not response.hasMore:
            break
        token = response.paginationToken
    assert count > 0 and pages >= 1


def test_apple_errors_reach_apple_client_typed(simulator):
    client = simulator.client(Environment.PRODUCTION)
    with pytest.raises(APIException) as info:
        client.get_transaction_history("999999999999", None, TransactionHistoryRequest())
    assert info.value.http_status_code == 404 and info.value.raw_api_error == 4040010
    sandbox_id = customers(simulator, "Sandbox")[0]["transactionId"]
    with pytest.raises(APIException) as info:
        client.get_transaction_history(sandbox_id, None, TransactionHistoryRequest())
    assert info.value.raw_api_error == 4040010  # a sandbox id is unknown to production, as at Apple
    sandbox = simulator.client(Environment.SANDBOX)
    assert sandbox.get_transaction_history(sandbox_id, None, TransactionHistoryRequest()).signedTransactions


def test_wrong_key_is_401(simulator):
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives import serialization

    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    client = AppStoreServerAPIClient(other, simulator.app["keyId"], simulator.app["issuerId"], simulator.app["bundleId"],
                                     Environment.PRODUCTION)
    client._base_url = simulator.url
    with pytest.raises(APIException) as info:
        client.get_transaction_history(customers(simulator)[0]["transactionId"], None, TransactionHistoryRequest())
    assert info.value.http_status_code == 401


def test_apple_verifier_rejects_simulator_data_under_apple_root(simulator):
    client = simulator.client(Environment.PRODUCTION)
    jws = client.get_transaction_history(customers(simulator)[0]["transactionId"], None,
                                         TransactionHistoryRequest()).signedTransactions[0]
    apple_root = open(os.path.join(ROOT, "certs", "AppleRootCA-G3.cer"), "rb").read()
    verifier = SignedDataVerifier([apple_root], False, Environment.PRODUCTION, simulator.app["bundleId"],
                                  simulator.app["appAppleId"])
    with pytest.raises(VerificationException):
        verifier.verify_and_decode_signed_transaction(jws)


def test_json_bodies_have_apples_shape(simulator):
    """Raw response bodies carry exactly the keys of Apple's own samples."""
    import requests

    client = simulator.client(Environment.PRODUCTION)
    headers = {"Authorization": "Bearer " + client._generate_token(), "Accept": "application/json"}
    history = requests.get(f"{simulator.url}/inApps/v2/history/{customers(simulator)[0]['transactionId']}",
                           headers=headers, timeout=10).json()
    sample = json.load(open(os.path.join(SAMPLES, "transactionHistoryResponse.json")))
    assert set(history) == set(sample)
    error = requests.get(f"{simulator.url}/inApps/v2/history/999999999999", headers=headers, timeout=10)
    assert error.status_code == 404
    assert set(error.json()) == set(json.load(open(os.path.join(SAMPLES, "transactionIdNotFoundError.json"))))
    missing = requests.get(f"{simulator.url}/inApps/v9/nothing", headers=headers, timeout=10)
    assert missing.status_code == 404 and missing.content == b""


def test_gateway_verifies_simulator_jws(simulator):
    """The gateway configured by the simulator's gateway.yaml verifies what the simulator signs."""
    from appstore.gateway.v1 import gateway_pb2_grpc, verify_pb2

    gw = Gateway(["--config", os.path.join(simulator.directory, "gateway.yaml")])
    try:
        client = simulator.client(Environment.PRODUCTION)
        jws = client.get_transaction_history(customers(simulator)[0]["transactionId"], None,
                                             TransactionHistoryRequest()).signedTransactions[0]
        channel = grpc.insecure_channel(gw.address)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        answer = stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, app="example"), timeout=10)
        assert answer.status == verify_pb2.VERIFICATION_STATUS_OK, answer.message
        assert answer.transaction.bundle_id == simulator.app["bundleId"]
        channel.close()
    finally:
        gw.stop()
