"""Metrics on the admin port, probes, and the JSON access log."""
import json
import os
import signal
import tempfile
import time
import urllib.error
import urllib.request

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2, verify_pb2
from conftest import ROOT, Gateway


def scrape(gw, path="/metrics"):
    with urllib.request.urlopen(gw.admin_url + path, timeout=5) as response:
        return response.status, response.read().decode()


def samples(text, name):
    return [line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " ")]


def test_metrics_cover_rpcs_apple_calls_and_verification_and_logs_are_json():
    state = tempfile.mkdtemp(prefix="gw-obs-")
    gw = Gateway(["--simulator", "--state-dir", state])
    try:
        index = json.load(open(os.path.join(state, "transactions.json")))
        customer = next(c for c in next(iter(index.values()))["Production"] if c["transactionId"])
        channel = grpc.insecure_channel(gw.address)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        history = stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"]), timeout=30,
                                  metadata=[("x-request-id", "test-request-42")])
        # VerifyJWS binds to the only configured app (fail-closed): verify one of that app's transactions.
        stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws=history.signed_transactions[0]), timeout=10)
        stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="garbage"), timeout=10)
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)

        status, text = scrape(gw)
        assert status == 200
        rpcs = "\n".join(samples(text, "grpc_server_handled_total"))
        for method in ("GetHistory", "VerifyJWS"):
            assert (f'grpc_type="unary",grpc_service="appstore.gateway.v1.AppStoreGateway",grpc_method="{method}",'
                    'grpc_code="OK"') in rpcs
        assert 'grpc_service="grpc.health.v1.Health",grpc_method="Check",grpc_code="OK"' in rpcs
        assert samples(text, "grpc_server_handling_seconds_count")
        assert samples(text, "grpc_server_started_total")
        sent = "\n".join(samples(text, "grpc_server_msg_sent_total"))
        assert 'grpc_method="GetHistory"} 1' in sent
        apple = "\n".join(samples(text, "appstore_gateway_apple_requests_total"))
        assert 'endpoint="getTransactionHistory",environment="production",http_status="200"' in apple
        assert samples(text, "appstore_gateway_jwt_mints_total")
        verdicts = "\n".join(samples(text, "appstore_gateway_verifications_total"))
        assert 'verdict="ok"' in verdicts and 'verdict="malformed"' in verdicts
        assert samples(text, "appstore_gateway_verification_chain_cache_hit_ratio")
        assert "# TYPE appstore_gateway_verification_chain_cache_hits_total counter" in text
        assert "# TYPE appstore_gateway_verification_chain_cache_misses_total counter" in text
        buckets = "\n".join(samples(text, "appstore_gateway_rate_limit_tokens"))
        assert 'app="example",endpoint="getTransactionHistory",environment="production"' in buckets
        assert "bundle_id=" not in text
        assert samples(text, "appstore_gateway_open_connections")[0].split()[-1] != "0"
        channel.close()

        assert scrape(gw, "/healthz")[0] == 200 and scrape(gw, "/readyz")[0] == 200
    finally:
        gw.stop()
    lines = [json.loads(line) for line in gw_log_lines(gw) if line.startswith("{")]
    rpc_lines = [l for l in lines if l.get("message") == "rpc"]
    history = next(l for l in rpc_lines if l["method"].endswith("/GetHistory"))
    assert history["status"] == "OK" and history["request_id"] == "test-request-42" and history["app"] == "example"
    assert isinstance(history["duration_ms"], float) and history["duration_ms"] > 0
    assert history["grpc_code"] == 0 and history["grpc_method"] == "GetHistory"
    assert not any(l["method"].startswith("/grpc.health") for l in rpc_lines)
    whole = "\n".join(gw_log_lines(gw))
    assert "PRIVATE KEY" not in whole and "Bearer" not in whole and "eyJ" not in whole


_logs = {}


def gw_log_lines(gw):
    if gw not in _logs:
        _logs[gw] = open(gw.log.name).read().splitlines() if os.path.exists(gw.log.name) else []
    return _logs[gw]


def test_readyz_goes_503_while_draining(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY": "1500ms"})
    assert scrape(gw, "/readyz")[0] == 200
    gw.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        scrape(gw, "/readyz")
        raise AssertionError("readyz should fail while draining")
    except urllib.error.HTTPError as error:
        assert error.code == 503
    assert scrape(gw, "/healthz")[0] == 200
    assert gw.proc.wait(timeout=10) == 0


def metric_value(text, name, labels=""):
    total = 0.0
    for line in samples(text, name):
        if labels in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_unknown_methods_share_one_label_and_in_flight_balances(gateway):
    before = scrape(gateway)[1]
    channel = grpc.insecure_channel(gateway.address)

    def call_unknown(numbers):
        for i in numbers:
            try:
                channel.unary_unary(f"/evil.Service{i}/Method{i}" + "x" * 200)(b"", timeout=5)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNIMPLEMENTED

    call_unknown(range(10))
    first = scrape(gateway)[1]  # the unknown series now exist
    call_unknown(range(10, 3000))
    channel.close()
    after = scrape(gateway)[1]
    # 2,990 more unknown paths add no series: only counter digits change (the raw path grew it by 54 MB).
    assert len(after) - len(first) < 200, len(after) - len(first)
    assert "evil.Service" not in after
    unknown = 'grpc_type="unknown",grpc_service="unknown",grpc_method="unknown",grpc_code="Unimplemented"'
    assert metric_value(after, "grpc_server_handled_total", unknown) - metric_value(
        before, "grpc_server_handled_total", unknown) == 3000
    assert metric_value(after, "appstore_gateway_rpcs_in_flight") == 0


def test_process_and_build_info_metrics(gateway):
    text = scrape(gateway)[1]
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_max_fds", "process_start_time_seconds"):
        assert metric_value(text, name) > 0, name
    assert abs(metric_value(text, "process_start_time_seconds") - time.time()) < 3600
    (info,) = samples(text, "appstore_gateway_build_info")
    assert 'version="' in info and info.endswith(" 1")

