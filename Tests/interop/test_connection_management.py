"""Connection management for load-balanced deployments (gRFC A9, keepalive.md) and graceful termination."""
import signal
import time

import grpc
import h2.events
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from h2raw import RawClient, grpc_frame

SERVICE = "appstore.gateway.v1.AppStoreGateway"


def goaway(client, timeout):
    """The final GOAWAY: a graceful close first sends a notice (last stream 2^31-1, no debug data), then
    the real one (RFC 9113 §6.8) with the reason as debug data."""
    final = lambda e: isinstance(e, h2.events.ConnectionTerminated) and e.last_stream_id != 2**31 - 1
    client.read_until(lambda ev: any(final(e) for e in ev) or "closed" in ev, timeout=timeout)
    return next((e for e in client.events if final(e)), None)


def test_max_connection_age_sends_goaway_and_lets_calls_finish(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_CONNECTION_MAX_AGE": "1s",
                            "APPSTORE_GATEWAY_CONNECTION_MAX_AGE_GRACE": "2s"})
    client = RawClient(gw.port)
    try:
        started = time.monotonic()
        sid = client.request("/grpc.health.v1.Health/Watch", body=grpc_frame(b""))
        event = goaway(client, timeout=5)
        elapsed = time.monotonic() - started
        assert event is not None and event.error_code == 0 and event.additional_data == b"max_age"
        assert 0.8 <= elapsed <= 3.0  # 1 s ± 10 % jitter, plus the housekeeping tick
        # The open Watch is cut off only when the grace period ends.
        client.read_until(lambda ev: "closed" in ev or any(
            isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) and e.stream_id == sid for e in ev), timeout=6)
        assert time.monotonic() - started >= 2.5
    finally:
        client.close()


def test_grpcio_reconnects_transparently_after_max_age(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_CONNECTION_MAX_AGE": "500ms"})
    channel = grpc.insecure_channel(gw.address)
    stub = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + 3
    calls = 0
    while time.monotonic() < deadline:
        assert stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
        calls += 1
        time.sleep(0.05)
    assert calls > 20
    channel.close()


def test_too_many_pings_without_calls_get_enhance_your_calm(gateway):
    client = RawClient(gateway.port)
    try:
        for i in range(5):
            client.conn.ping(i.to_bytes(8, "big"))
        client.flush()
        event = goaway(client, timeout=5)
        assert event is not None and event.error_code == 11  # ENHANCE_YOUR_CALM
        assert event.additional_data == b"too_many_pings"
    finally:
        client.close()


def test_pings_within_policy_are_answered(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_CONNECTION_PERMIT_CLIENT_PING_WITHOUT_CALLS": "true",
                            "APPSTORE_GATEWAY_CONNECTION_MIN_CLIENT_PING_INTERVAL": "100ms"})
    client = RawClient(gw.port)
    try:
        for i in range(3):
            client.conn.ping(i.to_bytes(8, "big"))
            client.flush()
            client.read_until(lambda ev, i=i: any(isinstance(e, h2.events.PingAckReceived) and e.ping_data == i.to_bytes(8, "big") for e in ev))
            time.sleep(0.15)
        assert not any(isinstance(e, h2.events.ConnectionTerminated) for e in client.events)
    finally:
        client.close()


def test_sigterm_drains_then_stops(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY": "1500ms", "APPSTORE_GATEWAY_SHUTDOWN_GRACE": "1s"})
    channel = grpc.insecure_channel(gw.address)
    stub = health_pb2_grpc.HealthStub(channel)
    assert stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    gw.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    # Readiness is NOT_SERVING at once, liveness stays SERVING, and calls are still answered while draining.
    assert stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=5).status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    started = time.monotonic()
    assert gw.proc.wait(timeout=10) == 0
    assert time.monotonic() - started >= 0.8  # the rest of the drain delay
    channel.close()


def test_sigterm_is_over_when_the_last_connection_closes_not_at_the_grace(fresh_gateway):
    """With a grace period of two minutes and no call in flight, the GOAWAY closes the one connection and the
    gateway exits then, saying it drained; a Watch still open when a short grace ends is cut off, and said so."""
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_GRACE": "120s"})
    channel = grpc.insecure_channel(gw.address)
    stub = health_pb2_grpc.HealthStub(channel)
    assert stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    gw.proc.send_signal(signal.SIGTERM)
    assert gw.proc.wait(timeout=60) == 0  # well inside the 120 s the grace would allow
    assert "gRPC port drained" in gw.read_log()
    channel.close()

    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_GRACE": "500ms"})
    client = RawClient(gw.port)
    try:
        client.request("/grpc.health.v1.Health/Watch", body=grpc_frame(b""))
        client.read_until(lambda ev: any(isinstance(e, h2.events.DataReceived) for e in ev), timeout=5)
        gw.proc.send_signal(signal.SIGTERM)
        assert gw.proc.wait(timeout=30) == 0
        log = gw.read_log()
        assert "shutdown.grace ended calls still running" in log and "gRPC port drained" not in log
    finally:
        client.close()


def test_sigterm_under_load_loses_no_accepted_call(fresh_gateway):
    """Every call the server accepted before shutting down gets an answer; none is dropped."""
    import concurrent.futures

    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY": "500ms", "APPSTORE_GATEWAY_SHUTDOWN_GRACE": "3s"})
    channel = grpc.insecure_channel(gw.address)
    stub = health_pb2_grpc.HealthStub(channel)
    results = {"ok": 0, "unavailable": 0, "other": []}

    def call():
        try:
            stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
            results["ok"] += 1
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNAVAILABLE:
                results["unavailable"] += 1  # refused before acceptance (connection gone): safe to retry
            else:
                results["other"].append((error.code(), error.details()))

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(call) for _ in range(200)]
        time.sleep(0.05)
        gw.proc.send_signal(signal.SIGTERM)
        futures += [pool.submit(call) for _ in range(200)]
        for f in futures:
            f.result()
    assert gw.proc.wait(timeout=15) == 0
    assert results["other"] == []
    assert results["ok"] >= 200
    channel.close()
