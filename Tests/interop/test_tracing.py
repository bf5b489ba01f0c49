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
    gw, state, simulator_url, transaction_id = simulator_gateway(None)
    yield gw, state, simulator_url, transaction_id
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


def test_a_request_id_is_made_up_only_for_a_call_that_is_logged(traced):
    """A generated x-request-id is how a caller finds its call's access-log line (the test above): a health check
    is not logged, so it gets none, while a caller's own id is echoed on every call."""
    gw = traced[0]
    with grpc.insecure_channel(gw.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        _, call = health.Check.with_call(health_pb2.HealthCheckRequest(), timeout=5)
        assert "x-request-id" not in dict(call.initial_metadata())
        _, call = health.Check.with_call(
            health_pb2.HealthCheckRequest(), timeout=5, metadata=[("x-request-id", "probe-7")])
        assert dict(call.initial_metadata())["x-request-id"] == "probe-7"
    assert not [l for l in log_lines(gw) if l.get("message") == "rpc" and "Health" in l.get("method", "")]


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


# MARK: OpenTelemetry spans at a real OTLP/HTTP receiver

import http.server
import shutil
import socket
import threading

from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


class OTLPReceiver:
    """An OTLP/HTTP trace receiver: decodes every POST to /v1/traces with opentelemetry-proto."""

    def __init__(self):
        self.requests = []  # (headers, ExportTraceServiceRequest)
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.lock:
                    receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, self.path, request))
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self):
        """Every span received: (resource attributes, span)."""
        with self.lock:
            found = []
            for _, _, request in self.requests:
                for resource_spans in request.resource_spans:
                    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                    for scope_spans in resource_spans.scope_spans:
                        found += [(resource, span) for span in scope_spans.spans]
            return found

    def wait_for(self, predicate, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            found = [s for s in self.spans() if predicate(s[1])]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def attributes(span):
    out = {}
    for a in span.attributes:
        kind = a.value.WhichOneof("value")
        out[a.key] = getattr(a.value, kind) if kind else None
    return out


def simulator_gateway(env):
    state = tempfile.mkdtemp(prefix="gw-otel-")
    gw = Gateway(["--simulator", "--state-dir", state], env=env)
    simulator_url = None
    while simulator_url is None:
        line = gw.proc.stdout.readline()
        assert line, "the simulator guide was not printed"
        match = re.search(r"simulator at (https://\S+?) ", line)
        simulator_url = match.group(1) if match else None
    index = json.load(open(os.path.join(state, "transactions.json")))
    customer = next(c for c in next(iter(index.values()))["Production"] if c["transactionId"])
    return gw, state, simulator_url, customer["transactionId"]


def metric(gw, series):
    with urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split(" ")[1])
    return None


def test_get_history_exports_a_server_span_under_the_caller_and_an_apple_span_under_it():
    receiver = OTLPReceiver()
    unsampled_trace = "5bf92f3577b34da6a3ce929d0e0e4737"
    try:
        gw, state, simulator_url, transaction_id = simulator_gateway({
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "billing-gateway",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=interop,team=pay%20ments",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s%3Dcret", "OTEL_BSP_SCHEDULE_DELAY": "50"})
        try:
            get_history(gw, transaction_id, [("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01")])
            trace_id = bytes.fromhex(TRACE_ID)
            (server,) = [s for _, s in receiver.wait_for(
                lambda s: s.trace_id == trace_id and s.kind == trace_pb2.Span.SPAN_KIND_SERVER)]
            clients = [s for _, s in receiver.wait_for(
                lambda s: s.trace_id == trace_id and s.kind == trace_pb2.Span.SPAN_KIND_CLIENT
                and s.name.startswith("GET "))]
            # The caller's parentbased flag 00: nothing recorded for that trace.
            get_history(gw, transaction_id, [("traceparent", f"00-{unsampled_trace}-{CALLER_SPAN}-00"), ("x", "y")])
            to_apple = [r for r in recorded_requests(state, simulator_url)
                        if TRACE_ID in r["headers"].get("traceparent", "")]
        finally:
            gw.stop()  # flushes what is queued

        assert server.name == "appstore.gateway.v1.AppStoreGateway/GetHistory"
        assert server.parent_span_id == bytes.fromhex(CALLER_SPAN)
        assert attributes(server).items() >= {
            "rpc.system": "grpc", "rpc.service": "appstore.gateway.v1.AppStoreGateway", "rpc.method": "GetHistory",
            "rpc.grpc.status_code": 0}.items()
        assert server.end_time_unix_nano >= server.start_time_unix_nano > 0

        assert clients, [s.name for _, s in receiver.spans()]
        for client in clients:
            assert client.parent_span_id == server.span_id
            assert client.start_time_unix_nano >= server.start_time_unix_nano
            found = attributes(client)
            assert found["http.request.method"] == "GET" and found["server.address"] == "localhost"
            assert found["http.response.status_code"] == 200 and found["appstore.endpoint"] == "getTransactionHistory"
        # What Apple saw as its parent is the client span the gateway exported.
        sent_parents = {r["headers"]["traceparent"].split("-")[2] for r in to_apple}
        assert sent_parents == {c.span_id.hex() for c in clients}

        resource, _ = receiver.spans()[0]
        assert resource["service.name"] == "billing-gateway"
        assert resource["deployment.environment"] == "interop" and resource["team"] == "pay ments"
        assert {r[1] for r in receiver.requests} == {"/v1/traces"}
        assert all(h["content-type"] == "application/x-protobuf" and h["x-api-key"] == "s=cret"
                   for h, _, _ in receiver.requests)
        assert not [s for _, s in receiver.spans() if s.trace_id == bytes.fromhex(unsampled_trace)]
        assert len({s.trace_id for _, s in receiver.spans() if s.trace_id == trace_id}) == 1
    finally:
        receiver.close()


def test_sampler_off_exports_nothing():
    receiver = OTLPReceiver()
    try:
        gw, _, _, transaction_id = simulator_gateway({
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_TRACES_SAMPLER": "always_off",
            "OTEL_BSP_SCHEDULE_DELAY": "10"})
        try:
            get_history(gw, transaction_id, [("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01")])
            get_history(gw, transaction_id, [])
        finally:
            gw.stop()
        assert gw.proc.returncode == 0
        assert receiver.requests == []
    finally:
        receiver.close()


def test_a_dead_receiver_never_blocks_calls_and_drops_are_counted():
    # A collector that accepts connections and never answers: every export waits its whole timeout.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    try:
        gw = Gateway([], env={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2000", "OTEL_BSP_MAX_QUEUE_SIZE": "4",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2", "OTEL_BSP_SCHEDULE_DELAY": "10"})
        try:
            with grpc.insecure_channel(gw.address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                # Far more calls than the queue holds while the exporter waits: each still answers.
                for _ in range(50):
                    assert stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                        health_pb2.HealthCheckResponse.SERVING
            dropped = metric(gw, 'appstore_gateway_trace_spans_dropped_total{reason="queue_full"}')
            assert dropped is not None and dropped > 0
            assert metric(gw, "appstore_gateway_trace_spans_exported_total") == 0
        finally:
            # The flush at shutdown is bounded by the export timeout: the process still exits cleanly.
            assert gw.terminate(timeout=30) == 0
    finally:
        silent.close()


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_webhook_receipts_store_commits_and_redis_budget_calls_are_spans():
    """The webhook's receipt (a SERVER span) with its store commit under it, and the shared budget's Redis
    round trip under the RPC that spent it — with the budget and the store in Redis."""
    from test_webhook import Redis, Simulator, WebhookGateway

    receiver = OTLPReceiver()
    sim = Simulator()
    redis = Redis()
    try:
        gw = WebhookGateway(sim, redis=redis, extra={
            "tracing": {"endpoint": receiver.url, "serviceName": "hooks", "scheduleDelay": "50ms"}})
        try:
            sim.deliver(gw.webhook, notificationType="REFUND_DECLINED", count=2)
            index = json.load(open(os.path.join(sim.directory, "transactions.json")))
            bundle = sim.config["apps"][0]["bundleId"]
            customer = next(c for c in index[bundle]["Production"] if c["transactionId"])
            get_history(gw, customer["transactionId"], [("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01")])
            receipts = receiver.wait_for(lambda s: s.name == "POST webhook")
            commits = receiver.wait_for(lambda s: s.name == "notification store insert")
            budget = receiver.wait_for(lambda s: s.name == "redis budget reserve")
            (server,) = [s for _, s in receiver.wait_for(
                lambda s: s.trace_id == bytes.fromhex(TRACE_ID) and s.kind == trace_pb2.Span.SPAN_KIND_SERVER)]
        finally:
            gw.stop()
    finally:
        redis.stop()
        sim.stop()
        receiver.close()

    assert len(receipts) == 2, [s.name for _, s in receiver.spans()]
    assert {s.kind for _, s in receipts} == {trace_pb2.Span.SPAN_KIND_SERVER}
    receipt_ids = {(s.trace_id, s.span_id) for _, s in receipts}
    assert len(commits) == 2
    for _, commit in commits:
        assert (commit.trace_id, commit.parent_span_id) in receipt_ids
        assert commit.kind == trace_pb2.Span.SPAN_KIND_CLIENT
    assert budget, [s.name for _, s in receiver.spans()]
    for _, reservation in budget:
        assert reservation.trace_id == server.trace_id and reservation.parent_span_id == server.span_id
    assert all(resource["service.name"] == "hooks" for resource, _ in receiver.spans())


def test_a_webhook_delivery_is_a_new_root_span_linked_to_the_senders_context():
    """Anyone on the internet can send a traceparent: the webhook's span starts a trace of its own (never a
    child of the sender's span, nor sampled by the sender's flags), and the sender's context is a span link."""
    import requests

    from test_webhook import Simulator, WebhookGateway, database_path

    sender_trace, sender_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    receiver = OTLPReceiver()
    sim = Simulator()
    try:
        gw = WebhookGateway(sim, database_path(), extra={
            "tracing": {"endpoint": receiver.url, "scheduleDelay": "50ms"}})
        try:
            answer = requests.post(gw.webhook, data=b"{}", timeout=10, headers={
                "content-type": "application/json", "traceparent": f"00-{sender_trace}-{sender_span}-00",
                "tracestate": "vendor=opaque"})
            assert answer.status_code == 400
            (receipt,) = [s for _, s in receiver.wait_for(lambda s: s.name == "POST webhook")]
        finally:
            gw.stop()
    finally:
        sim.stop()
        receiver.close()

    assert receipt.kind == trace_pb2.Span.SPAN_KIND_SERVER
    assert receipt.trace_id != bytes.fromhex(sender_trace) and len(receipt.trace_id) == 16
    assert receipt.parent_span_id == b""
    assert receipt.flags & 0x1 == 1  # sampled here, though the sender's flags said not sampled
    (link,) = receipt.links
    assert link.trace_id == bytes.fromhex(sender_trace) and link.span_id == bytes.fromhex(sender_span)
    assert link.trace_state == "vendor=opaque"
    assert link.flags == 0x300  # the sender's flags (not sampled), and "remote" known and set
