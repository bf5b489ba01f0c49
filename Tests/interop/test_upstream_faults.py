"""Apple's bad days end to end: the simulator injects a fault on every call, the gateway answers GetHistory
with the mapped status before the caller's deadline: no hang, no crash, the process serves on."""
import json
import os
import re
import subprocess
import tempfile
import time

import grpc
import pytest
import yaml

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2
from conftest import GATEWAY_BIN, Gateway

STATE = tempfile.mkdtemp(prefix="gw-faults-")


def start_simulator(*fault_args):
    proc = subprocess.Popen(
        [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", STATE, "--seed", "7",
         "--customers", "4", *fault_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    match = re.search(r"listening on (https://\S+)", line)
    assert match, line
    return proc, match.group(1)


def transaction_id():
    index = json.load(open(os.path.join(STATE, "transactions.json")))
    return next(c["transactionId"] for c in next(iter(index.values()))["Production"] if c["transactionId"])


def call_through_gateway(config_overrides=None, deadline=8.0):
    """One GetHistory through a gateway using the simulator's gateway.yaml (+ overrides); returns
    (status code, details, seconds taken)."""
    config = yaml.safe_load(open(os.path.join(STATE, "gateway.yaml")))
    config["apps"][0]["environment"] = "production"
    for key, value in (config_overrides or {}).items():
        section, name = key.split(".")
        config.setdefault(section, {})[name] = value
    path = os.path.join(STATE, "faulty.yaml")
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", path], env={"APPSTORE_GATEWAY_RETRIES_INITIAL_BACKOFF": "10ms"})
    try:
        channel = grpc.insecure_channel(gw.address)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        started = time.monotonic()
        try:
            stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=transaction_id()), timeout=deadline)
            code, details = grpc.StatusCode.OK, ""
        except grpc.RpcError as error:
            code, details = error.code(), error.details()
        elapsed = time.monotonic() - started
        assert gw.proc.poll() is None, "the gateway died"
        channel.close()
        return code, details, elapsed
    finally:
        gw.stop()


@pytest.mark.parametrize("fault,expected", [
    ("error=5000001", grpc.StatusCode.UNAVAILABLE),           # retryable: retried, then UNAVAILABLE
    ("error=5000000", grpc.StatusCode.UNAVAILABLE),           # GeneralInternal: "try again later", retried
    ("error=4040002", grpc.StatusCode.UNAVAILABLE),           # AccountNotFoundRetryable
    ("error=4290000", grpc.StatusCode.RESOURCE_EXHAUSTED),    # a 429 storm
    ("error=4000006", grpc.StatusCode.INVALID_ARGUMENT),
    ("html502", grpc.StatusCode.UNAVAILABLE),                 # a proxy's HTML page: 5xx without an Apple body
    ("reset", grpc.StatusCode.UNAVAILABLE),                   # connection/stream reset
    ("truncated", grpc.StatusCode.DATA_LOSS),                 # JSON cut in half
])
def test_each_fault_maps_to_its_status_before_the_deadline(fault, expected):
    proc, _ = start_simulator("--fault", fault)
    try:
        code, details, elapsed = call_through_gateway()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert code == expected, f"{fault}: {code} {details}"
    assert details
    assert elapsed < 8.0


def test_slow_body_ends_at_the_callers_deadline():
    proc, _ = start_simulator("--fault", "slow=20x500ms")
    try:
        code, _, elapsed = call_through_gateway(deadline=1.5)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed < 3.0


def test_tls_failure_is_unavailable():
    """The gateway does not trust the upstream's certificate (no caFile): a TLS failure, not a hang."""
    proc, _ = start_simulator()
    try:
        code, details, elapsed = call_through_gateway({"apple.caFile": ""})
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert code == grpc.StatusCode.UNAVAILABLE, details
    assert elapsed < 8.0


def test_dns_failure_is_unavailable():
    proc, _ = start_simulator()
    proc.terminate()
    proc.wait(timeout=10)
    code, details, elapsed = call_through_gateway({"apple.productionURL": "https://apple.invalid"})
    assert code == grpc.StatusCode.UNAVAILABLE, details
    assert elapsed < 8.0
