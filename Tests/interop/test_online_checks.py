"""Online checks end to end (`verification.onlineChecks`): the simulator's PKI is online (its certificates name
its own OCSP responder), the gateway asks that responder over libcurl, and answers OK for a good leaf,
UNTRUSTED_CHAIN for a revoked one, and RETRYABLE_FAILURE when the responder cannot be reached."""
import json
import os
import re
import subprocess
import tempfile

import grpc
import pytest
import yaml

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2, transaction_info_pb2, verify_pb2
from conftest import GATEWAY_BIN, Gateway


class Simulator:
    def __init__(self, *args, state=None):
        self.state = state or tempfile.mkdtemp(prefix="gw-online-")
        self.proc = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", self.state, "--seed", "11",
             "--customers", "3", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        assert re.search(r"listening on https://", line), line

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def transaction_id(self):
        index = json.load(open(os.path.join(self.state, "transactions.json")))
        return next(c["transactionId"] for c in next(iter(index.values()))["Production"] if c["transactionId"])

    def gateway(self, online):
        config = yaml.safe_load(open(os.path.join(self.state, "gateway.yaml")))
        config["verification"]["onlineChecks"] = online
        config["verification"]["ocspTimeout"] = "2s"
        path = os.path.join(self.state, f"gateway-online-{online}.yaml")
        yaml.safe_dump(config, open(path, "w"))
        return Gateway(["--config", path])


def stub_of(gateway):
    return gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gateway.address))


def history(stub, transaction_id):
    return stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=transaction_id, environment=common_pb2.ENVIRONMENT_PRODUCTION), timeout=30)


def verify(stub, jws):
    return stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=jws, environment=common_pb2.ENVIRONMENT_PRODUCTION), timeout=30)


def test_good_leaf_verifies_online_and_a_dead_responder_is_retryable():
    simulator = Simulator()
    online = simulator.gateway(online=True)
    try:
        stub = stub_of(online)
        page = history(stub, simulator.transaction_id())  # every transaction checked by OCSP on the way
        assert page.transactions
        jws = page.signed_transactions[0]
        answer = verify(stub, jws)
        assert answer.status == verify_pb2.VERIFICATION_STATUS_OK, answer.message
        assert answer.transaction.transaction_id == page.transactions[0].transaction_id

        simulator.stop()  # the responder is gone
        # The gateway that asked before keeps the answers until their nextUpdate.
        assert verify(stub, jws).status == verify_pb2.VERIFICATION_STATUS_OK
        fresh = simulator.gateway(online=True)
        try:
            refused = verify(stub_of(fresh), jws)
            assert refused.status == verify_pb2.VERIFICATION_STATUS_RETRYABLE_FAILURE, refused.message
            assert "OCSP" in refused.message and not refused.HasField("transaction")
            offline = simulator.gateway(online=False)
            try:
                # Online checks off: no responder needed, the chain is checked at signedDate as before.
                assert verify(stub_of(offline), jws).status == verify_pb2.VERIFICATION_STATUS_OK
            finally:
                offline.stop()
        finally:
            fresh.stop()
    finally:
        online.stop()
        if simulator.proc.poll() is None:
            simulator.stop()


def test_revoked_leaf_is_untrusted_online():
    simulator = Simulator("--fault", "revoked-signer")
    offline = simulator.gateway(online=False)
    online = simulator.gateway(online=True)
    try:
        page = history(stub_of(offline), simulator.transaction_id())  # offline: the chain itself is valid
        jws = page.signed_transactions[0]
        answer = verify(stub_of(online), jws)
        assert answer.status == verify_pb2.VERIFICATION_STATUS_UNTRUSTED_CHAIN, answer.message
        assert "revoked" in answer.message and not answer.HasField("transaction")
        with pytest.raises(grpc.RpcError) as error:
            history(stub_of(online), simulator.transaction_id())
        assert error.value.code() == grpc.StatusCode.DATA_LOSS
        assert "revoked" in error.value.details()
    finally:
        online.stop()
        offline.stop()
        simulator.stop()


def test_the_other_api_rpcs_fetch_revocation_statuses_too():
    """GetTransactionInfo (one of the RPCs over the rest of Apple's API) on a fresh online gateway: the statuses
    its answer needs are fetched, not reported missing; with a revoked signer the answer is DATA_LOSS."""
    for fault, expected in ((None, grpc.StatusCode.OK), ("revoked-signer", grpc.StatusCode.DATA_LOSS)):
        simulator = Simulator(*(["--fault", fault] if fault else []))
        online = simulator.gateway(online=True)
        try:
            request = transaction_info_pb2.GetTransactionInfoRequest(
                transaction_id=simulator.transaction_id(), environment=common_pb2.ENVIRONMENT_PRODUCTION)
            if expected == grpc.StatusCode.OK:
                answer = stub_of(online).GetTransactionInfo(request, timeout=30)
                assert answer.transaction.transaction_id == simulator.transaction_id()
            else:
                with pytest.raises(grpc.RpcError) as error:
                    stub_of(online).GetTransactionInfo(request, timeout=30)
                assert error.value.code() == expected and "revoked" in error.value.details()
        finally:
            online.stop()
            simulator.stop()
