"""Hostile HTTP/2 clients against the real binary (loopback only, every loop bounded in count and time).

Each case checks that the process lives, that an honest client's health Check keeps succeeding while the
attack runs, that resident memory returns near its baseline, and, where RFC 9113 or nghttp2 defines one,
the error code of the GOAWAY the offender receives. The gateway runs with one event loop so the attacker
and the honest client share it: a defence that only works because they sit on different loops would not
count. Findings the gateway does not defend yet are strict xfails naming the code path.
"""
import random
import socket
import struct
import threading
import time

import grpc
import h2.config
import h2.connection
import h2.events
import hpack
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import Gateway
from h2raw import RawClient, grpc_frame
from procstat import open_fds, rss_bytes

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
END_STREAM, END_HEADERS, PADDED, PRIORITY_FLAG, ACK = 0x1, 0x4, 0x8, 0x20, 0x1
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
STREAM_CLOSED, FRAME_SIZE_ERROR, CANCEL, COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x5, 0x6, 0x8, 0x9, 0xB
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
MIB = 1024 * 1024
RSS_SLACK = 50 * MIB


# MARK: raw frames

def frame(kind, flags, stream_id, payload=b""):
    """One HTTP/2 frame (RFC 9113 §4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def request_block(encoder, path=HEALTH_CHECK, extra=()):
    fields = [(":method", "POST"), (":scheme", "http"), (":authority", "localhost"), (":path", path),
              ("content-type", "application/grpc"), ("te", "trailers")] + list(extra)
    return encoder.encode(fields)


class RawConnection:
    """A socket speaking hand-made frames, and a reader that splits what comes back into frames."""

    def __init__(self, port, preface=True, client_settings=()):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.encoder = hpack.Encoder()
        self.inbound = b""
        self.frames = []
        self.closed = False
        if preface:
            self.send(PREFACE + settings(*client_settings))

    def send(self, data):
        """Sends; False once the server has closed (a reset or broken pipe is the expected end of an attack)."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def read(self, timeout=3.0, until=None):
        """Reads frames until `until(self)` holds, the peer closes, or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while not self.closed and not (until and until(self)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self.inbound += chunk
            while len(self.inbound) >= 9:
                length = int.from_bytes(self.inbound[:3], "big")
                if len(self.inbound) < 9 + length:
                    break
                kind, flags = self.inbound[3], self.inbound[4]
                sid = int.from_bytes(self.inbound[5:9], "big") & 0x7FFFFFFF
                self.frames.append((kind, flags, sid, self.inbound[9:9 + length]))
                self.inbound = self.inbound[9 + length:]
        return self

    def goaway_code(self):
        """The error code of the first GOAWAY received, or None."""
        for kind, _, _, payload in self.frames:
            if kind == GOAWAY:
                return int.from_bytes(payload[4:8], "big")
        return None

    def ended(self):
        """The server said GOAWAY or closed the socket."""
        return self.closed or self.goaway_code() is not None

    def close(self):
        self.sock.close()


# MARK: the honest client and the process

class HealthProber:
    """An honest grpcio client calling health Check in a loop on its own connection while an attack runs."""

    def __init__(self, gateway, interval=0.05):
        self.channel = grpc.insecure_channel(gateway.address)
        self.stub = health_pb2_grpc.HealthStub(self.channel)
        self.interval = interval
        self.latencies = []
        self.failures = []
        self.stop_event = threading.Event()
        self.stub.Check(health_pb2.HealthCheckRequest(), timeout=5)  # connected before the attack
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop_event.is_set() and len(self.latencies) + len(self.failures) < 2000:
            start = time.monotonic()
            try:
                answer = self.stub.Check(health_pb2.HealthCheckRequest(), timeout=3)
                assert answer.status == health_pb2.HealthCheckResponse.SERVING
                self.latencies.append(time.monotonic() - start)
            except Exception as error:  # noqa: BLE001: any failure of the honest client is a finding
                self.failures.append(repr(error))
            self.stop_event.wait(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join(timeout=10)
        self.channel.close()

    def assert_served(self):
        assert not self.failures, f"honest health checks failed during the attack: {self.failures[:3]}"
        assert self.latencies, "no honest health check completed during the attack"
        ordered = sorted(self.latencies)
        assert ordered[len(ordered) // 2] < 0.5, f"median health latency {ordered[len(ordered) // 2]:.3f} s"
        assert ordered[-1] < 2.0, f"slowest health check took {ordered[-1]:.3f} s"


@pytest.fixture(scope="module")
def gw():
    gateway = Gateway(["--threads", "1"])
    yield gateway
    gateway.stop()


@pytest.fixture
def guard(gw):
    """Baseline before the case; after it, the process lives and memory returned near the baseline."""
    assert gw.proc.poll() is None, "the gateway died in an earlier case"
    baseline = rss_bytes(gw.proc.pid)
    yield gw
    assert gw.proc.poll() is None, f"the gateway exited with {gw.proc.returncode}:\n{gw.read_log()[-2000:]}"
    deadline = time.monotonic() + 3
    while rss_bytes(gw.proc.pid) > baseline + RSS_SLACK and time.monotonic() < deadline:
        time.sleep(0.2)
    rss = rss_bytes(gw.proc.pid)
    assert rss < baseline + RSS_SLACK, f"RSS {rss / MIB:.1f} MiB after the case, baseline {baseline / MIB:.1f} MiB"
    check = RawClient(gw.port)
    try:
        sid = check.request(HEALTH_CHECK, body=grpc_frame(b""))
        check.read_until(check.stream_ended(sid), timeout=3)
        assert check.headers_of(sid)[-1].get("grpc-status") == "0"
    finally:
        check.close()


# MARK: cases

@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 64,
    b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + b"\xff" * 64,
    bytes(range(256)) * 4,
], ids=["http1", "bad-magic", "binary"])
def test_invalid_preface_is_disconnected(guard, garbage):
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port, preface=False)
        conn.send(garbage)
        conn.read(timeout=3, until=RawConnection.ended)
        assert conn.closed, f"still connected after an invalid preface; frames: {conn.frames[:3]}"
        conn.close()
    prober.assert_served()


def test_data_on_a_closed_stream_is_ignored_and_its_window_granted_back(guard):
    """RFC 9113 §5.1 lets an endpoint treat a frame on a closed stream as a connection error or ignore it. The
    gateway keeps no closed streams (nghttp2's no_closed_streams: gRPC has no priority tree to keep them for),
    so late DATA is ignored; its bytes still count against the connection's window, which must be granted back,
    or a client could shut every later call of its connection out with DATA nobody reads."""
    conn = RawConnection(guard.port)
    conn.send(frame(HEADERS, END_HEADERS, 1, request_block(conn.encoder)) + frame(DATA, END_STREAM, 1, grpc_frame(b"")))
    conn.read(timeout=3, until=lambda c: any(k == HEADERS and f & END_STREAM and s == 1 for k, f, s, _ in c.frames))
    assert any(k == HEADERS and f & END_STREAM for k, f, _, _ in conn.frames), "the Check never completed"
    late = frame(DATA, 0, 1, b"\0" * 16_384)
    granted = lambda c: any(k == WINDOW_UPDATE and s == 0 for k, _, s, _ in c.frames)
    # 768 KiB, within the 1 MiB connection window; then the window must come back before as much again.
    assert conn.send(late * 48)
    conn.read(timeout=5, until=lambda c: c.ended() or granted(c))
    assert conn.goaway_code() is None and granted(conn), "late DATA ended the connection or kept its window"
    assert conn.send(late * 48)
    conn.send(frame(HEADERS, END_HEADERS, 3, request_block(conn.encoder)) + frame(DATA, END_STREAM, 3, grpc_frame(b"")))
    conn.read(timeout=5, until=lambda c: c.ended() or any(k == HEADERS and f & END_STREAM and s == 3 for k, f, s, _ in c.frames))
    assert conn.goaway_code() is None
    assert any(k == HEADERS and f & END_STREAM and s == 3 for k, f, s, _ in conn.frames), "the next call was not served"
    conn.close()


def test_headers_on_a_lower_closed_stream_id_is_not_served(guard):
    conn = RawConnection(guard.port)
    conn.send(frame(HEADERS, END_HEADERS, 5, request_block(conn.encoder)) + frame(DATA, END_STREAM, 5, grpc_frame(b"")))
    conn.read(timeout=3, until=lambda c: any(k == HEADERS and f & END_STREAM for k, f, _, _ in c.frames))
    conn.send(frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block(conn.encoder)))
    conn.read(timeout=1.5, until=RawConnection.ended)
    # RFC 9113 §5.1.1 makes this a PROTOCOL_ERROR; nghttp2 deliberately ignores the frame instead when it no
    # longer remembers the stream (nghttp2.h: it cannot keep every id seen). Either way no stream 3 is served.
    assert conn.goaway_code() in (None, PROTOCOL_ERROR, STREAM_CLOSED)
    assert not any(s == 3 for _, _, s, _ in conn.frames), "a request on a reused stream id was answered"
    if conn.goaway_code() is None:
        conn.send(frame(HEADERS, END_HEADERS, 7, request_block(conn.encoder)) + frame(DATA, END_STREAM, 7, grpc_frame(b"")))
        conn.read(timeout=3, until=lambda c: any(k == HEADERS and f & END_STREAM and s == 7 for k, f, s, _ in c.frames))
        assert any(k == HEADERS and f & END_STREAM and s == 7 for k, f, s, _ in conn.frames)
    conn.close()


def test_rst_and_window_update_on_idle_streams_are_protocol_error(guard):
    for bad in (frame(RST_STREAM, 0, 7, struct.pack(">I", CANCEL)), frame(WINDOW_UPDATE, 0, 9, struct.pack(">I", 1))):
        conn = RawConnection(guard.port)
        conn.send(bad)
        conn.read(timeout=3, until=RawConnection.ended)
        assert conn.goaway_code() == PROTOCOL_ERROR  # RFC 9113 §5.1 "idle"
        conn.close()


@pytest.mark.parametrize("kind", [DATA, HEADERS, PING], ids=["data", "headers", "ping"])
def test_frame_over_max_frame_size_is_frame_size_error(guard, kind):
    conn = RawConnection(guard.port)
    if kind == DATA:
        conn.send(frame(HEADERS, END_HEADERS, 1, request_block(conn.encoder)))
        oversized = frame(DATA, 0, 1, b"\x00" * 20_000)
    elif kind == HEADERS:
        oversized = frame(HEADERS, END_HEADERS, 1, request_block(conn.encoder) + conn.encoder.encode([("x-big", "a" * 20_000)], huffman=False))
    else:
        oversized = frame(PING, 0, 0, b"\x00" * 20_000)  # PING must be exactly 8 bytes as well
    # The 9-byte header already declares the excess (RFC 9113 §4.2); only 1000 payload bytes follow, so the
    # server has read everything when it closes and no TCP RST can overtake its GOAWAY.
    conn.send(oversized[:9 + 1000])
    conn.read(timeout=3, until=RawConnection.ended)
    assert conn.goaway_code() == FRAME_SIZE_ERROR, f"GOAWAY {conn.goaway_code()} closed={conn.closed}"
    conn.close()


def test_continuation_flood_is_cut_off(guard):
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port)
        block = request_block(conn.encoder)
        conn.send(frame(HEADERS, 0, 1, block))
        fragment = conn.encoder.encode([("x-flood", "v" * 32)])
        sent = 0
        started = time.monotonic()
        while sent < 20_000 and time.monotonic() - started < 5:
            if not conn.send(frame(CONTINUATION, 0, 1, fragment) * 100):
                break
            sent += 100
            if sent % 2000 == 0:
                conn.read(timeout=0.01)
                if conn.ended():
                    break
        conn.read(timeout=3, until=RawConnection.ended)
        assert conn.ended(), f"{sent} CONTINUATION frames without END_HEADERS and the connection is still open"
        assert conn.goaway_code() in (None, ENHANCE_YOUR_CALM, PROTOCOL_ERROR, INTERNAL_ERROR)
        conn.close()
    prober.assert_served()


def test_hpack_bomb_is_refused(guard):
    """A 4 KiB value stored once in the dynamic table, then referenced by one-byte index 62 thousands of
    times: 16 KiB of header block decompressing to tens of MiB."""
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port)
        head = request_block(conn.encoder)
        # Literal with incremental indexing (RFC 7541 §6.2.1), new name, 4000-byte value, no Huffman.
        literal = b"\x40" + bytes([6]) + b"x-bomb" + b"\x7f" + _hpack_int(4000 - 127) + b"b" * 4000
        references = b"\xbe" * 16_000  # indexed field 62: the entry just added
        block = head + literal + references
        chunks = [block[i:i + 16_000] for i in range(0, len(block), 16_000)]
        frames = frame(HEADERS, END_HEADERS if len(chunks) == 1 else 0, 1, chunks[0])
        for i, chunk in enumerate(chunks[1:], 1):
            frames += frame(CONTINUATION, END_HEADERS if i == len(chunks) - 1 else 0, 1, chunk)
        conn.send(frames + frame(DATA, END_STREAM, 1, grpc_frame(b"")))
        conn.read(timeout=5, until=lambda c: c.ended() or any(s == 1 and k in (HEADERS, RST_STREAM)
                                                                for k, _, s, _ in c.frames))
        status = _response_status(conn, 1)
        rst = [p for k, _, s, p in conn.frames if k == RST_STREAM and s == 1]
        assert status == "431" or rst or conn.ended(), f"the bomb was accepted: frames {conn.frames[:4]}"
        conn.close()
    prober.assert_served()


def test_invalid_hpack_index_is_compression_error(guard):
    conn = RawConnection(guard.port)
    conn.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\x80\x01"))  # index 254 + 128: no such entry
    conn.read(timeout=3, until=RawConnection.ended)
    assert conn.goaway_code() == COMPRESSION_ERROR
    conn.close()


def test_header_list_over_limit_gets_431(guard):
    client = RawClient(guard.port)
    try:
        big = [(f"x-pad-{i}", "p" * 1000) for i in range(40)]  # ~41 KiB > limits.maxHeaderListBytes (16 KiB)
        sid = client.request(HEALTH_CHECK, headers=big, body=grpc_frame(b""))
        client.read_until(client.stream_ended(sid), timeout=5)
        assert client.headers_of(sid) and client.headers_of(sid)[0].get(":status") == "431"
        sid = client.request(HEALTH_CHECK, body=grpc_frame(b""))  # the same connection still serves
        client.read_until(client.stream_ended(sid), timeout=5)
        assert client.headers_of(sid)[-1].get("grpc-status") == "0"
    finally:
        client.close()


def test_rapid_reset_is_cut_off(guard):
    """CVE-2023-44487: open a stream and cancel it at once, thousands of times."""
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port)
        sid, started = 1, time.monotonic()
        while sid < 2 * 10_000 and time.monotonic() - started < 8:
            batch = b""
            for _ in range(100):
                batch += frame(HEADERS, END_HEADERS, sid, request_block(conn.encoder))
                batch += frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL))
                sid += 2
            if not conn.send(batch):
                break
            conn.read(timeout=0.001)
            if conn.ended():
                break
        conn.read(timeout=3, until=RawConnection.ended)
        streams = sid // 2
        assert conn.ended(), f"{streams} streams opened and reset in {time.monotonic() - started:.1f} s, still connected"
        # Resets of streams not answered yet spend the connection's budget (burst 1000, 200/s): ENHANCE_YOUR_CALM
        # "too_many_resets". The server closes with our unread frames in its socket buffer, so the kernel's RST
        # can destroy the GOAWAY before we read it (seen about once in three runs on a loaded machine): a bare
        # close counts.
        assert conn.goaway_code() == ENHANCE_YOUR_CALM or (
            conn.goaway_code() is None and conn.closed), f"GOAWAY {conn.goaway_code()}"
        conn.close()
    prober.assert_served()


def test_settings_flood_is_cut_off(guard):
    """SETTINGS frames whose ACKs the client never reads: the server's outbound ACK queue must stay bounded."""
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        one = settings((4, 65535))
        sent, started = 0, time.monotonic()
        conn.sock.settimeout(1)
        while sent < 200_000 and time.monotonic() - started < 8:
            if not conn.send(one * 1000):
                break
            sent += 1000
        conn.read(timeout=3, until=lambda c: c.closed)
        assert conn.ended(), f"{sent} unacknowledged SETTINGS and still connected"
        conn.close()
    prober.assert_served()


def test_settings_with_too_many_entries_is_enhance_your_calm(guard):
    conn = RawConnection(guard.port)
    conn.send(settings(*[(4, 65535)] * 100))  # nghttp2's default cap is 32 entries per frame
    conn.read(timeout=3, until=RawConnection.ended)
    assert conn.goaway_code() == ENHANCE_YOUR_CALM
    conn.close()


def test_ping_flood_is_cut_off(guard):
    """PINGs whose ACKs the client never reads."""
    with HealthProber(guard) as prober:
        conn = RawConnection(guard.port)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        one = frame(PING, 0, 0, b"\x00" * 8)
        sent, started = 0, time.monotonic()
        conn.sock.settimeout(1)
        while sent < 400_000 and time.monotonic() - started < 8:
            if not conn.send(one * 1000):
                break
            sent += 1000
        conn.read(timeout=3, until=lambda c: c.closed)
        assert conn.ended(), f"{sent} unacknowledged PINGs and still connected"
        conn.close()
    prober.assert_served()


def test_zero_window_forever_keeps_memory_bounded(guard):
    """SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE ever: every response waits in the server."""
    with HealthProber(guard) as prober:
        conns = []
        for _ in range(4):
            conn = RawConnection(guard.port, client_settings=[(4, 0)])
            batch = b""
            for i in range(200):  # below SETTINGS_MAX_CONCURRENT_STREAMS (256)
                sid = 2 * i + 1
                batch += frame(HEADERS, END_HEADERS, sid, request_block(conn.encoder))
                batch += frame(DATA, END_STREAM, sid, grpc_frame(b""))
            conn.send(batch)
            conns.append(conn)
        for conn in conns:
            conn.read(timeout=1)
            assert not conn.closed
            assert not any(k == DATA for k, _, _, _ in conn.frames), "DATA sent through a zero window"
        time.sleep(2)
        assert guard.proc.poll() is None
        for conn in conns:
            conn.close()
    prober.assert_served()


def test_slowloris_does_not_block_others(guard):
    """Twenty connections each sending its preface one byte at a time; others are served meanwhile."""
    with HealthProber(guard) as prober:
        conns = [RawConnection(guard.port, preface=False) for _ in range(20)]
        payload = PREFACE + settings()
        for index in range(4):  # four seconds, one byte a second on each
            for conn in conns:
                conn.send(payload[index:index + 1])
            time.sleep(1)
        assert guard.proc.poll() is None
        for conn in conns:
            conn.close()
    prober.assert_served()
    assert len(prober.latencies) >= 20


def test_slowloris_connections_are_closed_after_max_idle(fresh_gateway):
    """A connection that never completes a request is idle: `connection.maxIdle` bounds how long it is held."""
    gateway = fresh_gateway("--threads", "1", env={"APPSTORE_GATEWAY_CONNECTION_MAX_IDLE": "1s"})
    conns = [RawConnection(gateway.port, preface=False) for _ in range(10)]
    payload = PREFACE + settings()
    started = time.monotonic()
    while time.monotonic() - started < 4 and not all(c.closed for c in conns):
        for conn in conns:
            if not conn.closed:
                conn.send(payload[int((time.monotonic() - started) * 4):][:1])
                conn.read(timeout=0.02)
        time.sleep(0.25)
    assert all(c.closed for c in conns), f"{sum(not c.closed for c in conns)} of 10 slow connections still open"
    for conn in conns:
        conn.close()


def test_thousands_of_connections_opened_and_dropped(guard):
    pid = guard.proc.pid
    fds_before = open_fds(pid)
    with HealthProber(guard) as prober:
        started, count = time.monotonic(), 0
        while count < 3000 and time.monotonic() - started < 15:
            sock = socket.create_connection(("127.0.0.1", guard.port), timeout=5)
            if count % 3 == 1:
                sock.sendall(PREFACE + settings())
            elif count % 3 == 2:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
            sock.close()
            count += 1
    prober.assert_served()
    assert count >= 1000
    deadline = time.monotonic() + 5
    while open_fds(pid) > fds_before + 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert open_fds(pid) <= fds_before + 5, f"descriptors: {fds_before} before, {open_fds(pid)} after {count} drops"


# MARK: random frame sequences

FUZZ_PATHS = [HEALTH_CHECK, "/grpc.health.v1.Health/Watch", "/appstore.gateway.v1.AppStoreGateway/VerifyJWS",
              "/appstore.gateway.v1.AppStoreGateway/GetHistory", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
              "/nope/Nope", "", "/", "*"]
# What the gateway may answer a peer that breaks the protocol. INTERNAL_ERROR is not among them: nghttp2 sends
# it when one of the gateway's own callbacks failed, which hostile bytes must never cause.
EXPECTED_GOAWAYS = {NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, FRAME_SIZE_ERROR,
                    COMPRESSION_ERROR, ENHANCE_YOUR_CALM}


def _random_fields(rng, hostile):
    """A request's fields: a gRPC call's, with a random method path, content type and metadata (a deadline in any
    unit, trace context, a request id, a bearer token, binary metadata); hostile, also what HTTP/2 forbids in a
    request (uppercase names, connection-specific fields, response and extended-CONNECT pseudo-headers, `te`
    other than trailers, pseudo-headers reordered, repeated or missing) or what no gRPC server should accept."""
    fields = [(":method", "POST"), (":scheme", "http"), (":authority", rng.choice(["localhost", "a" * rng.randrange(1, 300)])),
              (":path", rng.choice(FUZZ_PATHS)),
              ("content-type", rng.choice(["application/grpc", "application/grpc", "application/grpc+proto", "application/json"])),
              ("te", "trailers")]
    extra = [("grpc-timeout", rng.choice(["1m", "10S", "0n", "99999999H", "x", "-1S", "100000000m"])),
             ("grpc-encoding", rng.choice(["identity", "gzip", "zstd"])), ("traceparent", "00-" + "f" * 32 + "-" + "1" * 16 + "-01"),
             ("tracestate", "k=" + "v" * rng.randrange(0, 600)), ("x-request-id", rng.choice(["abc", "", " ", "\x7f" * 3, "r" * 200])),
             ("authorization", "Bearer " + "e" * rng.randrange(0, 100)), ("x-bin-bin", "AAAA"), ("x-data-bin", "!!"),
             ("user-agent", "fuzz/" + str(rng.randrange(1000)))]
    fields += rng.sample(extra, rng.randrange(0, 5))
    if hostile:
        odd = [(":method", rng.choice(["GET", "PUT", ""])), (":scheme", "ftp"), (":authority", ""), ("te", "gzip"),
               ("connection", "close"), ("Upper-Case", "x"), (":status", "200"), (":protocol", "websocket")]
        fields += rng.sample(odd, rng.randrange(1, 3))
        if rng.random() < 0.3:
            rng.shuffle(fields)
        if rng.random() < 0.3:
            fields = [f for f in fields if f[0] != rng.choice([":method", ":path", ":scheme"])]
    return fields


class FrameGenerator:
    """Seeded random frames for one connection: requests, bodies, resets, window updates, settings, pings,
    priorities, unknown types, and now and then GOAWAY. A frame is what an honest if erratic client may send (a
    new stream for a head, a body only on a stream whose request is still open, values in range), or, with
    `hostile_rate`, hostile: a stream no client may name (reused, even, zero, the largest), values out of range,
    PUSH_PROMISE (a server's frame), a padding longer than its frame, a head depending on itself; with the same
    rate a burst also gets a few bytes overwritten anywhere, framing included."""

    def __init__(self, rng, hostile_rate):
        self.rng = rng
        self.hostile_rate = hostile_rate
        self.encoder = hpack.Encoder()
        self.next_id = 1
        self.sending = []  # streams whose request the generator has not ended

    def burst(self):
        rng = self.rng
        out = b""
        for _ in range(rng.randrange(1, 12)):
            hostile = rng.random() < self.hostile_rate
            weird = rng.choice([max(1, self.next_id - 2), self.next_id + 1, 0, 0x7FFFFFFF, rng.randrange(1, 200)])
            started = self.next_id > 1
            opened = max(1, self.next_id - 2 * rng.randrange(1, 4))
            choice = rng.random() if started else 0
            if choice < 0.35 or (0.35 <= choice < 0.65 and not self.sending and not hostile):
                out += self.request(weird if hostile else self.next_id, hostile)
            elif choice < 0.65:
                sid = weird if hostile else rng.choice(self.sending)
                body, ended = self.data(sid, hostile)
                out += body
                if ended and sid in self.sending:
                    self.sending.remove(sid)
            elif choice < 0.72:
                code = rng.choice([0, 1, 2, 8, 0xB, 0xFFFFFFFF])
                out += frame(RST_STREAM, 0, weird if hostile else opened, struct.pack(">I", code))
                if opened in self.sending:
                    self.sending.remove(opened)
            elif choice < 0.79:
                increment = rng.choice([0, 0x7FFFFFFF, 0xFFFFFFFF]) if hostile else rng.choice([1, 1024, 65535, 1 << 20])
                out += frame(WINDOW_UPDATE, 0, rng.choice([0, opened]), struct.pack(">I", increment))
            elif choice < 0.84:
                if hostile:
                    pairs = [(rng.choice([2, 4, 5, 0xFFFF]), rng.choice([2, 0, 0x80000000, 0xFFFFFFFF, 1 << 24]))]
                else:
                    pairs = [(rng.choice([1, 3, 4, 6]), rng.choice([100, 16384, 65535, 1 << 20]))
                             for _ in range(rng.randrange(0, 3))] + [(5, rng.choice([16384, 65536, (1 << 24) - 1]))]
                out += frame(SETTINGS, 0, opened if hostile else 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))
            elif choice < 0.88:
                size = rng.choice([7, 9]) if hostile else 8
                out += frame(PING, ACK if rng.random() < 0.3 else 0, opened if hostile else 0, bytes(size))
            elif choice < 0.91:
                priority = struct.pack(">IB", self.next_id + 2, 255)
                out += frame(PRIORITY, 0, weird if hostile else opened, priority[:4] if hostile else priority)
            elif choice < 0.93:
                last = rng.randrange(1, 1 << 31) if hostile else 0
                out += frame(GOAWAY, 0, opened if hostile else 0, struct.pack(">II", last, rng.randrange(20)))
            elif choice < 0.95 and hostile:
                promise = struct.pack(">I", self.next_id + 1) + self.encoder.encode([(":path", "/")])
                out += frame(PUSH_PROMISE, END_HEADERS, opened, promise)
            else:
                payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
                out += frame(rng.choice([0xA, 0xB, 0x10, 0xFF]), rng.randrange(256), rng.choice([0, opened, weird]), payload)
        if rng.random() < self.hostile_rate and out:
            mutated = bytearray(out)
            for _ in range(rng.randrange(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            out = bytes(mutated)
        return out

    def request(self, sid, hostile):
        """A request head on `sid`: padded, with a priority, split into a CONTINUATION, or plain."""
        rng = self.rng
        block = self.encoder.encode(_random_fields(rng, hostile))
        ends = rng.random() < 0.3
        flags = END_STREAM if ends else 0
        prefix = pad = b""
        if rng.random() < 0.15:
            flags |= PRIORITY_FLAG
            prefix = struct.pack(">IB", sid if hostile else rng.choice([0, sid + 2]), rng.randrange(256))
        if rng.random() < 0.1:
            flags |= PADDED
            pad_length = rng.randrange(0, 256)
            prefix = bytes([pad_length]) + prefix
            pad = b"\x00" * (pad_length + (rng.randrange(1, 50) if hostile else 0))
        if sid == self.next_id:
            self.next_id += 2
            if not ends:
                self.sending.append(sid)
        if rng.random() < 0.2 and len(block) > 2:
            cut = rng.randrange(1, len(block))
            follow = rng.choice([DATA, HEADERS]) if hostile else CONTINUATION
            return (frame(HEADERS, flags, sid, prefix + block[:cut] + pad)
                    + frame(follow, END_HEADERS, sid + 2 if hostile else sid, block[cut:]))
        return frame(HEADERS, flags | END_HEADERS, sid, prefix + block + pad)

    def data(self, sid, hostile):
        """DATA with a gRPC prefix that tells the truth or not (a length past the body, past the limits), or
        bytes; returns the frame and whether it ends the request."""
        rng = self.rng
        size = rng.choice([0, 4, 5, 6, 100, 5000, 16000, rng.randrange(0, 16000)])
        if rng.random() < 0.7:
            declared = rng.choice([size, max(0, size - 5), size + 10, 0, 1 << 31, 0xFFFFFFFF])
            body = bytes([rng.choice([0, 0, 1, 2, 0x80])]) + struct.pack(">I", declared)
            body += bytes(rng.randrange(256) for _ in range(min(size, 64))) + b"\x00" * max(0, size - 64)
        else:
            body = bytes(rng.randrange(256) for _ in range(min(size, 64)))
        ends = rng.random() < 0.5
        flags = END_STREAM if ends else 0
        if rng.random() < 0.1:
            flags |= PADDED
            pad_length = rng.randrange(0, 256) if hostile else rng.randrange(0, 32)
            body = bytes([pad_length]) + body + (b"" if hostile else b"\x00" * pad_length)
        return frame(DATA, flags, sid, body), ends


def test_random_frame_sequences_never_take_the_gateway_down(guard):
    """400 connections, each a seeded random sequence of frames (plausible and broken requests, bodies, resets,
    settings, pings, priorities, mutated bytes), on the loop an honest client shares. The process lives and keeps
    answering, and a connection the gateway ends gets a GOAWAY whose code names the peer's fault, never
    INTERNAL_ERROR."""
    rng = random.Random(20261124)
    codes = {}
    answered = 0  # connections on which the gateway answered at least one stream
    with HealthProber(guard) as prober:
        for _ in range(400):
            conn = RawConnection(guard.port)
            frames = FrameGenerator(rng, hostile_rate=rng.choice([0, 0, 0.05, 0.2]))  # half send what a client may
            for _ in range(rng.randrange(1, 4)):
                if not conn.send(frames.burst()):
                    break
                conn.read(timeout=0.03, until=RawConnection.ended)
                if conn.ended():
                    break
            conn.read(timeout=0.05, until=RawConnection.ended)
            code = conn.goaway_code()
            codes[code] = codes.get(code, 0) + 1
            answered += any(kind == HEADERS and sid for kind, _, sid, _ in conn.frames)
            conn.close()
    prober.assert_served()
    unexpected = {code: count for code, count in codes.items() if code is not None and code not in EXPECTED_GOAWAYS}
    assert not unexpected, f"GOAWAY codes that blame the gateway: {unexpected} (all: {codes})"
    # The generator reaches both ends: connections the gateway ended for a fault, ones it kept, and answers.
    assert codes.get(None, 0) > 40 and sum(count for code, count in codes.items() if code) > 40, codes
    assert answered > 100, f"only {answered} connections got an answer: the sequences do not reach the handlers"


# MARK: helpers

def _hpack_int(value):
    """The continuation bytes of an HPACK integer whose prefix is full (RFC 7541 §5.1)."""
    out = b""
    while value >= 128:
        out += bytes([value % 128 + 128])
        value //= 128
    return out + bytes([value])


def _response_status(conn, stream_id):
    decoder = hpack.Decoder()
    for kind, flags, sid, payload in conn.frames:
        if kind == HEADERS and sid == stream_id:
            return dict(decoder.decode(payload)).get(":status")
    return None
