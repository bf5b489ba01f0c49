"""GetHistory's verification and timing, black-box: a page seen again costs no ECDSA (the verified-signature
cache's metric), concurrent identical calls make one upstream call, and each call's access-log line says where
its time went (handler_us, upstream_us, verify_us)."""
import json
import tempfile
import time
import urllib.request

import grpc
import pytest

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2
from conftest import Gateway


def metric(gw, name):
    with urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.fixture(scope="module")
def simulated():
    state = tempfile.mkdtemp(prefix="gw-sim-")
    gw = Gateway(["--simulator", "--state-dir", state], env={"APPSTORE_GATEWAY_LOGGING_LEVEL": "debug"})
    index = json.load(open(f"{state}/transactions.json"))
    customers = [c for c in next(iter(index.values()))["Production"] if c["transactionId"]]
    channel = grpc.insecure_channel(gw.address)
    yield gw, gateway_pb2_grpc.AppStoreGatewayStub(channel), max(customers, key=lambda c: c["transactions"])
    channel.close()
    gw.stop()


def history_lines(gw):
    lines = []
    for line in gw.read_log().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("grpc_method") == "GetHistory":
                lines.append(entry)
    return lines


def test_a_page_seen_again_is_answered_without_ecdsa(simulated):
    gw, stub, customer = simulated
    request = history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"])
    first = stub.GetHistory(request, timeout=30)
    assert len(first.signed_transactions) == 20
    hits = metric(gw, "appstore_gateway_verification_signature_cache_hits_total") or 0
    second = stub.GetHistory(request, timeout=30)
    assert list(second.signed_transactions) == list(first.signed_transactions)
    assert [t.transaction_id for t in second.transactions] == [t.transaction_id for t in first.transactions]
    after = metric(gw, "appstore_gateway_verification_signature_cache_hits_total")
    assert after - hits >= 20


def test_the_log_line_splits_the_calls_time(simulated):
    gw, stub, customer = simulated
    stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"], sort=1), timeout=30)
    deadline = time.time() + 5
    while time.time() < deadline and not any(e.get("status") == "OK" and "verify_us" in e for e in history_lines(gw)):
        time.sleep(0.05)
    entry = [e for e in history_lines(gw) if e.get("status") == "OK" and "verify_us" in e][-1]
    handler, upstream, verify = int(entry["handler_us"]), int(entry["upstream_us"]), int(entry["verify_us"])
    assert upstream > 0 and verify > 0
    assert upstream + verify <= handler <= float(entry["duration_ms"]) * 1000 + 1


def test_identical_concurrent_calls_make_one_upstream_call(simulated):
    gw, stub, customer = simulated
    request = history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"], sort=2)
    before = gw.read_log().count("Apple answered")
    futures = [stub.GetHistory.future(request, timeout=30) for _ in range(16)]
    answers = [future.result() for future in futures]
    assert all(list(a.signed_transactions) == list(answers[0].signed_transactions) for a in answers)
    time.sleep(0.2)
    calls = gw.read_log().count("Apple answered") - before
    # Calls that arrive after the shared one ended make their own: few, never one each.
    assert 1 <= calls < 16


def labelled_metric(gw, series):
    with urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_apple_calls_are_driven_by_the_loop_the_call_runs_on(simulated):
    """A GetHistory's request to Apple is sent, awaited and read by its connection's event loop (libcurl's
    sockets in the loop's epoll set), not handed over to the upstream client's loop."""
    gw, stub, customer = simulated
    on_loop = 'appstore_gateway_upstream_transfers_total{driver="caller_loop"}'
    on_thread = 'appstore_gateway_upstream_transfers_total{driver="client_thread"}'
    before = labelled_metric(gw, on_loop), labelled_metric(gw, on_thread)
    for _ in range(5):
        page = stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"]), timeout=30)
        assert len(page.signed_transactions) == 20
    after = labelled_metric(gw, on_loop), labelled_metric(gw, on_thread)
    assert after[0] - before[0] >= 5
    assert after[1] == before[1]
    assert labelled_metric(gw, "appstore_gateway_upstream_connections_opened_total") >= 1
