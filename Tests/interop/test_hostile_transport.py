"""Hostile callers of the transport against the real binary: memory held for half-sent requests, the
connection cap and the descriptor limit, request deadlines, oversized error trailers, the admin port.

Every case checks that the process lives and still answers health SERVING afterwards. Memory bounds are
stated per case (RSS growth measured while the attack holds its bytes in the server). CPU is read from
/proc/<pid>/stat while the server is saturated: a generous bound that only a busy loop breaks.
"""
import os
import resource
import socket
import time

import grpc
import h2.events
import pytest
from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2, verify_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import Gateway
from h2raw import RawClient, grpc_frame
from procstat import cpu_share, rss_bytes

MIB = 1024 * 1024
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def assert_healthy(gateway):
    assert gateway.proc.poll() is None, f"the gateway exited:\n{gateway.read_log()[-2000:]}"
    with grpc.insecure_channel(gateway.address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


# MARK: memory held for half-sent requests

def half_send(clients, streams_per_connection, message_bytes, quiet_seconds=1.5, limit_seconds=20):
    """Opens the streams and sends each a gRPC message prefix announcing `message_bytes`, then as much of
    the message as the server's flow-control window allows, never finishing it. Returns the bytes sent once
    the server has granted no window for `quiet_seconds`."""
    pending = {}
    for client in clients:
        for _ in range(streams_per_connection):
            sid = client.request(HEALTH_CHECK, body=b"\x00" + message_bytes.to_bytes(4, "big"), end_stream=False)
            pending[(client, sid)] = message_bytes
    sent = 5 * len(pending)
    chunk = b"\x00" * 16384
    started = last_progress = time.monotonic()
    while time.monotonic() - last_progress < quiet_seconds and time.monotonic() - started < limit_seconds:
        progressed = False
        for (client, sid), remaining in list(pending.items()):
            window = min(client.conn.local_flow_control_window(sid), remaining, client.conn.max_outbound_frame_size)
            if window > 0:
                client.conn.send_data(sid, chunk[:window])
                pending[(client, sid)] = remaining - window
                sent += window
                progressed = True
        for client in clients:
            client.flush()
            client.sock.settimeout(0.02)
            try:
                data = client.sock.recv(65536)
            except socket.timeout:
                data = None
            if data:
                for event in client.conn.receive_data(data):
                    if isinstance(event, h2.events.WindowUpdated):
                        progressed = True
                client.flush()
        if progressed:
            last_progress = time.monotonic()
    return sent


@pytest.fixture
def one_loop_gateway(fresh_gateway):
    def start(env=None):
        return fresh_gateway("--threads", "1", env=env)
    return start


def test_half_sent_messages_on_one_connection_hold_bounded_memory(one_loop_gateway):
    """64 streams each half-sending a 4 MiB message: the connection holds at most
    limits.maxBufferedBytesPerConnection (8 MiB) plus one connection window (1 MiB). Bound: < 40 MiB of RSS
    growth (it was 264 MiB with nghttp2's automatic window updates)."""
    gateway = one_loop_gateway()
    baseline = rss_bytes(gateway.proc.pid)
    client = RawClient(gateway.port)
    try:
        sent = half_send([client], 64, 4 * MIB - 1024)
        grown = rss_bytes(gateway.proc.pid) - baseline
        # The server stopped granting window: far less than the 256 MiB announced got through.
        assert sent < 12 * MIB, f"{sent / MIB:.1f} MiB accepted on one connection"
        assert sent > 8 * MIB, f"only {sent / MIB:.1f} MiB accepted: the budget should take 8 MiB"
        assert grown < 40 * MIB, f"RSS grew {grown / MIB:.1f} MiB"
        assert_healthy(gateway)
    finally:
        client.close()
    assert_healthy(gateway)


def test_half_sent_messages_on_many_connections_hold_bounded_memory(one_loop_gateway):
    """Six such connections with limits.maxBufferedBytes at 16 MiB: the process holds at most that plus one
    window per connection. Bound: < 40 MiB of RSS growth (six times the per-connection budget would be 54)."""
    gateway = one_loop_gateway(env={"APPSTORE_GATEWAY_LIMITS_MAX_BUFFERED_BYTES": str(16 * MIB)})
    baseline = rss_bytes(gateway.proc.pid)
    clients = [RawClient(gateway.port) for _ in range(6)]
    try:
        sent = half_send(clients, 64, 4 * MIB - 1024)
        grown = rss_bytes(gateway.proc.pid) - baseline
        assert sent < 24 * MIB, f"{sent / MIB:.1f} MiB accepted over six connections"
        assert grown < 40 * MIB, f"RSS grew {grown / MIB:.1f} MiB"
        assert_healthy(gateway)  # a new connection still gets its first window
    finally:
        for client in clients:
            client.close()
    assert_healthy(gateway)


# MARK: request deadlines

def test_half_sent_request_without_timeout_ends_at_the_default_deadline(one_loop_gateway):
    gateway = one_loop_gateway(env={"APPSTORE_GATEWAY_LIMITS_DEFAULT_DEADLINE": "1s",
                                    "APPSTORE_GATEWAY_LIMITS_MAX_DEADLINE": "2s"})
    client = RawClient(gateway.port)
    try:
        started = time.monotonic()
        sid = client.request(HEALTH_CHECK, body=b"\x00\x00\x00\x00\x0a\x01\x02", end_stream=False)
        client.read_until(client.stream_ended(sid), timeout=8)
        elapsed = time.monotonic() - started
        assert client.headers_of(sid)[-1].get("grpc-status") == "4", client.headers_of(sid)  # DEADLINE_EXCEEDED
        assert elapsed >= 0.9, f"ended after {elapsed:.2f} s, before limits.defaultDeadline (1 s)"

        # A caller's longer grpc-timeout is cut to limits.maxDeadline (2 s)...
        started = time.monotonic()
        sid = client.request(HEALTH_CHECK, headers=[("grpc-timeout", "1H")], body=b"\x00\x00\x00\x00\x0a",
                             end_stream=False)
        client.read_until(client.stream_ended(sid), timeout=8)
        elapsed = time.monotonic() - started
        assert client.headers_of(sid)[-1].get("grpc-status") == "4", client.headers_of(sid)
        assert elapsed >= 1.9, f"ended after {elapsed:.2f} s, before limits.maxDeadline (2 s)"

        # ...and a shorter one is kept.
        sid = client.request(HEALTH_CHECK, headers=[("grpc-timeout", "200m")], body=b"\x00\x00\x00\x00\x0a",
                             end_stream=False)
        started = time.monotonic()
        client.read_until(client.stream_ended(sid), timeout=8)
        assert client.headers_of(sid)[-1].get("grpc-status") == "4"
        assert time.monotonic() - started < 1.9, "the caller's shorter grpc-timeout was not kept"
    finally:
        client.close()


HEALTH_WATCH = "/grpc.health.v1.Health/Watch"


def test_streams_without_timeout_are_bounded_only_until_their_request_is_in(one_loop_gateway):
    """limits.defaultDeadline bounds a stream's wait for its request, not the stream: a follower may stay."""
    gateway = one_loop_gateway(env={"APPSTORE_GATEWAY_LIMITS_DEFAULT_DEADLINE": "1s"})
    client = RawClient(gateway.port)
    try:
        half_sent = client.request(HEALTH_WATCH, body=b"\x00\x00\x00\x00\x0a", end_stream=False)
        client.read_until(client.stream_ended(half_sent), timeout=8)
        assert client.headers_of(half_sent)[-1].get("grpc-status") == "4", client.headers_of(half_sent)

        watching = client.request(HEALTH_WATCH, body=grpc_frame(b""))
        with pytest.raises(TimeoutError):
            client.read_until(client.stream_ended(watching), timeout=2.5)  # well past the 1 s default
        assert client.headers_of(watching)[0].get(":status") == "200"
    finally:
        client.close()
    assert_healthy(gateway)
    assert_healthy(gateway)


# MARK: error trailers

@pytest.mark.parametrize("rpc", ["VerifyJWS", "GetHistory"])
def test_huge_app_name_gets_a_status(gateway, rpc):
    """A 100 KB `app`: the error quoting it must still fit the trailers, so the caller gets a status."""
    app = "a" * 100_000
    with grpc.insecure_channel(gateway.address) as channel:
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            if rpc == "VerifyJWS":
                stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="e30.e30.sig", app=app), timeout=10)
            else:
                stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1", app=app), timeout=10)
    error = info.value
    assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), error
    assert len(error.details()) <= 1024
    details = dict(error.trailing_metadata()).get("grpc-status-details-bin", b"")
    assert len(details) <= 3072
    assert_healthy(gateway)


# MARK: connection cap and descriptor limit

def served(port, timeout=0.5):
    """Connects and waits for the server's SETTINGS: (socket, True) when the connection was accepted."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    sock.sendall(PREFACE + EMPTY_SETTINGS)
    sock.settimeout(timeout)
    try:
        return sock, len(sock.recv(9)) > 0
    except socket.timeout:
        return sock, False


def low_descriptor_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))


@pytest.mark.parametrize("saturation", ["descriptor-limit", "max-connections"])
def test_saturated_listener_does_not_spin_and_recovers(saturation):
    """Connections until the server stops taking them (RLIMIT_NOFILE 48, or limits.maxConnections 8): the
    listener is out of epoll then, so the process uses < 20 % of a core while saturated (it spun at 100 %),
    and it serves again once connections close."""
    if saturation == "descriptor-limit":
        gateway = Gateway(["--threads", "1"], preexec_fn=low_descriptor_limit)
    else:
        gateway = Gateway(["--threads", "1"], env={"APPSTORE_GATEWAY_LIMITS_MAX_CONNECTIONS": "8"})
    sockets = []
    try:
        assert_healthy(gateway)
        refused = None
        for _ in range(100):
            sock, accepted = served(gateway.port)
            if not accepted:
                refused = sock
                break
            sockets.append(sock)
        assert refused is not None, f"{len(sockets)} connections and the server still accepts"
        if saturation == "max-connections":
            assert len(sockets) == 8
        share = cpu_share(gateway.proc.pid)
        assert share < 0.2, f"{share:.0%} of a core while saturated: the loop is spinning"
        assert gateway.proc.poll() is None

        for sock in sockets[:4]:
            sock.close()
        del sockets[:4]
        refused.settimeout(3)
        assert len(refused.recv(9)) > 0, "the queued connection was not served after others closed"
        sockets.append(refused)
        for sock in sockets:
            sock.close()
        sockets = []
        assert_healthy(gateway)
    finally:
        for sock in sockets:
            sock.close()
        gateway.stop()


# MARK: admin port

def admin_exchange(gateway, request, timeout=3.0):
    """Sends raw bytes to the admin port; returns (response bytes, closed by the server)."""
    host, port = gateway.admin_url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        sock.sendall(request)
        data, closed, deadline = b"", False, time.monotonic() + timeout
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            data += chunk
        return data, closed
    finally:
        sock.close()


@pytest.mark.parametrize("request_bytes, status", [
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n", b"413"),
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", b"413"),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", b"413"),
    (b"DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"405"),
    (b"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"405"),
], ids=["announced-8MiB", "chunked", "get-with-body", "delete", "put"])
def test_admin_refuses_bodies_and_methods_and_closes(gateway, request_bytes, status):
    data, closed = admin_exchange(gateway, request_bytes)
    assert data.startswith(b"HTTP/1.1 " + status), data[:200]
    assert closed, "the connection stayed open after a refused request"
    assert_healthy(gateway)


def test_admin_head_has_no_body_and_get_still_works(gateway):
    data, _ = admin_exchange(gateway, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == b"", data
    data, _ = admin_exchange(gateway, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"ok\n"), data


def test_admin_bodies_from_many_connections_hold_no_memory(gateway):
    """24 connections announcing 8 MiB bodies and sending them: each is refused at its head. Bound: < 10 MiB
    of RSS growth (it was 133 MiB)."""
    host, port = gateway.admin_url.removeprefix("http://").rsplit(":", 1)
    baseline = rss_bytes(gateway.proc.pid)
    socks = []
    for _ in range(24):
        sock = socket.create_connection((host, int(port)), timeout=2)
        sock.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n")
        socks.append(sock)
    for sock in socks:
        try:
            for _ in range(64):
                sock.sendall(b"\x00" * 65536)
        except OSError:
            pass  # refused and closed, as it should be
    grown = rss_bytes(gateway.proc.pid) - baseline
    for sock in socks:
        sock.close()
    assert grown < 10 * MIB, f"RSS grew {grown / MIB:.1f} MiB"
    assert_healthy(gateway)


def test_admin_slow_heads_are_closed_and_connections_capped(gateway):
    """A head not finished within 10 s closes the connection; at most 64 admin connections are taken."""
    host, port = gateway.admin_url.removeprefix("http://").rsplit(":", 1)
    slow = [socket.create_connection((host, int(port)), timeout=2) for _ in range(64)]
    for sock in slow:
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
    time.sleep(0.3)
    extra = socket.create_connection((host, int(port)), timeout=2)
    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    extra.settimeout(0.5)
    with pytest.raises(socket.timeout):
        extra.recv(100)  # the 65th connection waits in the backlog
    closed = 0
    deadline = time.monotonic() + 14
    for sock in slow:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            closed += sock.recv(100) == b""
        except (socket.timeout, ConnectionResetError):
            closed += 0
        sock.close()
    assert closed == len(slow), f"{len(slow) - closed} slow heads still open after the header timeout"
    extra.settimeout(3)
    assert extra.recv(100).startswith(b"HTTP/1.1 200"), "the queued admin connection was not served"
    extra.close()
    assert_healthy(gateway)
