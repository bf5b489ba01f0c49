"""W3C trace context through the gateway to "Apple" (the simulator records the headers it receives),
trace ids in the logs, and x-request-id echoed."""
import json
import time
import os
import re
import ssl
import tempfile
import urllib.request

import grpc
import pytest

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2
from conftest import Gateway

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def traced():
    state = tempfile.mkdtemp(prefix="gw-trace-")
    gw = Gateway(["--simulator", "--state-dir", state])
    simulator_url = None
    while simulator_url is None:
        line = gw.proc.stdout.readline()
        assert line, "the simulator guide was not printed"
        match = re.search(r"simulator at (https://\S+?) ", line)
        simulator_url = match.group(1) if match else None
    index = json.load(open(os.path.join(state, "transactions.json")))
    customer = next(c for c in next(iter(index.values()))["Production"] if c["transactionId"])
    yield gw, state, simulator_url, customer["transactionId"]
    gw.stop()


def recorded_requests(state, simulator_url):
    context = ssl.create_default_context(cafile=os.path.join(state, "tls", "ca.pem"))
    with urllib.request.urlopen(simulator_url + "/simulator/requests", context=context, timeout=5) as response:
        return json.loads(response.read())


def get_history(gw, transaction_id, metadata):
    with grpc.insecure_channel(gw.address) as channel:
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        # A filter nobody else uses, so the call is not coalesced with another test's.
        request = history_pb2.GetHistoryRequest(transaction_id=transaction_id, product_ids=[f"p{len(metadata)}"])
        _, call = stub.GetHistory.with_call(request, timeout=30, metadata=metadata)
        return dict(call.initial_metadata())


def log_lines(gw):
    return [json.loads(line) for line in gw.read_log().splitlines() if line.startswith("{")]


def access_line(gw, request_id, timeout=5):
    """The access-log line of the call with `request_id`: the gateway writes its log off the event loops,
    so the line may land a moment after the answer."""
    deadline = time.monotonic() + timeout
    while True:
        found = [l for l in log_lines(gw) if l.get("message") == "rpc" and l.get("request_id") == request_id]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.02)


def test_traceparent_reaches_apple_as_a_child_span_and_the_logs(traced):
    gw, state, simulator_url, transaction_id = traced
    headers = get_history(gw, transaction_id, [
        ("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01"), ("tracestate", "vendor=opaque"),
        ("x-request-id", "req-trace-1")])
    assert headers["x-request-id"] == "req-trace-1"

    to_apple = [r for r in recorded_requests(state, simulator_url) if TRACE_ID in r["headers"].get("traceparent", "")]
    assert to_apple and all("/history/" in r["path"] for r in to_apple)
    for request in to_apple:
        version, trace_id, span_id, flags = request["headers"]["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
        assert span_id != CALLER_SPAN and re.fullmatch(r"[0-9a-f]{16}", span_id)
        assert request["headers"]["tracestate"] == "vendor=opaque"

    access = access_line(gw, "req-trace-1")
    assert access["trace_id"] == TRACE_ID
    assert re.fullmatch(r"[0-9a-f]{16}", access["span_id"]) and access["span_id"] != CALLER_SPAN


@pytest.mark.parametrize("traceparent", [
    "garbage", f"00-{TRACE_ID}-{CALLER_SPAN}", f"ff-{TRACE_ID}-{CALLER_SPAN}-01",
    f"00-{'0' * 32}-{CALLER_SPAN}-01", f"00-{TRACE_ID.upper()}-{CALLER_SPAN}-01", "x" * 2000])
def test_malformed_traceparent_starts_a_new_trace(traced, traceparent):
    gw, state, simulator_url, transaction_id = traced
    before = len(recorded_requests(state, simulator_url))
    headers = get_history(gw, transaction_id, [("traceparent", traceparent), ("tracestate", "vendor=dropped")])
    generated = headers["x-request-id"]
    assert generated and len(generated) < 64
    new = recorded_requests(state, simulator_url)[before:]
    assert new
    for request in new:
        _, trace_id, _, _ = request["headers"]["traceparent"].split("-")
        assert trace_id != TRACE_ID and trace_id != "0" * 32
        assert "tracestate" not in request["headers"]
    access = access_line(gw, generated)
    assert access["status"] == "OK"
    assert trace_id == access["trace_id"]


def test_handler_log_lines_carry_the_trace_and_numbers(tmp_path):
    """An Apple outage makes the Apple client log retries inside the call: those lines have the call's trace."""
    import yaml
    from test_upstream_faults import STATE, start_simulator, transaction_id

    proc, _ = start_simulator("--fault", "error=5000001")
    try:
        config = yaml.safe_load(open(os.path.join(STATE, "gateway.yaml")))
        config["apps"][0]["environment"] = "production"
        path = tmp_path / "gateway.yaml"
        path.write_text(yaml.safe_dump(config))
        gw = Gateway(["--config", str(path)], env={"APPSTORE_GATEWAY_RETRIES_INITIAL_BACKOFF": "10ms"})
        try:
            with grpc.insecure_channel(gw.address) as channel:
                stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
                with pytest.raises(grpc.RpcError):
                    stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=transaction_id()), timeout=8,
                                    metadata=[("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01")])
        finally:
            gw.stop()
        lines = log_lines(gw)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    retries = [l for l in lines if l.get("message") == "retrying Apple call"]
    assert retries, [l.get("message") for l in lines]
    (access,) = [l for l in lines if l.get("message") == "rpc"]
    for line in retries + [access]:
        assert line["trace_id"] == TRACE_ID and line["span_id"] == access["span_id"], line
    assert all(isinstance(l["attempt"], int) and isinstance(l["delay_ms"], int) for l in retries)
