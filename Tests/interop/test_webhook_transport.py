"""The webhook's transport against the real binary: HTTP/1.1 framed strictly by RFC 9112, so no request-smuggling
shape gets more than one answer (a 400, then the connection closes, nothing after it read as a request); honest
pipelined requests still answered in order; error answers that echo neither the configured path nor request
bytes; and its HTTP/2 requests (TLS, ALPN h2) under the same request deadline and body limit as HTTP/1.1."""
import json
import os
import re
import socket
import ssl
import tempfile

import pytest
import yaml

from conftest import Gateway
from h2raw import RawClient
from test_webhook import Simulator, database_path

PATH = "/hidden/receiver-7f3a"


@pytest.fixture(scope="module")
def sim():
    simulator = Simulator()
    yield simulator
    simulator.stop()


class TransportGateway(Gateway):
    """A gateway whose webhook listens on a free port at PATH, cleartext or TLS with the simulator's certificate."""

    def __init__(self, sim, tls=False, request_timeout="10s"):
        config = json.loads(json.dumps(sim.config))
        config["apps"] = config["apps"][:1]
        webhook = {"listen": "127.0.0.1:0", "path": PATH, "requestTimeout": request_timeout}
        if tls:
            webhook["tlsCertificate"] = os.path.join(sim.directory, "tls", "server.pem")
            webhook["tlsKey"] = os.path.join(sim.directory, "tls", "server.key.pem")
        config["notifications"] = {"webhook": webhook, "store": {"sqlite": database_path(), "reconcileInterval": "0"}}
        path = os.path.join(tempfile.mkdtemp(prefix="gw-webhook-transport-"), "gateway.yaml")
        yaml.safe_dump(config, open(path, "w"))
        super().__init__(["--config", path])
        line = self.proc.stdout.readline()
        match = re.search(r"webhook on https?://[\d.]+:(\d+)/", line or "")
        if not match:
            self.stop()
            raise RuntimeError(f"no webhook line: {line!r}\n{self.read_log()}")
        self.webhook_port = int(match.group(1))


@pytest.fixture(scope="module")
def gateway(sim):
    gw = TransportGateway(sim)
    yield gw
    gw.stop()


@pytest.fixture(scope="module")
def tls_gateway(sim):
    gw = TransportGateway(sim, tls=True, request_timeout="1s")
    yield gw
    gw.stop()


def exchange(port, data, timeout=5.0):
    """Sends `data` at once and reads until the server closes; returns (bytes read, closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return received, False
            except ConnectionResetError:
                return received, True
            if not chunk:
                return received, True
            received += chunk


def statuses(data):
    """The status of each response in `data`, framed by content-length."""
    found = []
    while data:
        head, separator, rest = data.partition(b"\r\n\r\n")
        assert separator, data[:200]
        found.append(int(head[9:12]))
        length = int(re.search(rb"content-length: (\d+)", head).group(1))
        data = rest[length:]
    return found


SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize("head", [
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 36\r\n\r\n",
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nX: y\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nX: y\r\n Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}",
    b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n{}",
], ids=["two-lengths", "two-equal-lengths", "plus-sign", "length-list", "bare-lf-hides-te", "length-and-te",
        "obs-fold", "space-before-colon"])
def test_a_smuggling_shape_gets_one_400_and_the_connection_closes(gateway, head):
    data, closed = exchange(gateway.webhook_port, head.replace(b"%s", PATH.encode()) + SMUGGLED)
    assert statuses(data) == [400], data[:400]
    assert b"\r\nconnection: close\r\n" in data.partition(b"\r\n\r\n")[0] + b"\r\n"
    assert closed, "the connection stayed open after the refusal"


def test_pipelined_honest_requests_are_answered_in_order(gateway):
    request = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    data, closed = exchange(
        gateway.webhook_port,
        request.replace(b"%s", PATH.encode()) + request.replace(b"%s", b"/elsewhere")
        + request.replace(b"%s", PATH.encode()).replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n"))
    assert statuses(data) == [400, 404, 400], data[:600]
    assert closed


def test_error_answers_echo_neither_the_path_nor_request_bytes(gateway):
    for request in [
        b"POST /elsewhere-marker HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        b"POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 39\r\n\r\n"
        b'{"signedPayload": "marker.marker.mark"}' % PATH.encode(),
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: marker\r\n\r\n" % PATH.encode(),
        b"GET %s HTTP/1.1\r\nHost: marker\r\n\r\n" % PATH.encode(),
    ]:
        data, closed = exchange(gateway.webhook_port, request)
        assert statuses(data)[0] >= 400, data[:300]
        assert PATH.encode() not in data and b"hidden" not in data and b"marker" not in data, data[:300]


def tls_context(sim):
    return ssl.create_default_context(cafile=os.path.join(sim.directory, "tls", "ca.pem"))


def test_an_h2_request_is_served_and_one_that_stalls_its_body_gets_408(sim, tls_gateway):
    client = RawClient(tls_gateway.webhook_port, tls=tls_context(sim))
    try:
        honest = client.request(PATH, body=b"{}", content_type="application/json")
        client.read_until(client.stream_ended(honest))
        assert client.headers_of(honest)[0][":status"] == "400"  # the transport served it; the body is no notification
        stalled = client.request(PATH, body=b'{"signedPayload": "', end_stream=False, content_type="application/json")
        client.read_until(client.stream_ended(stalled), timeout=8)
        assert "closed" not in client.events
        assert client.headers_of(stalled)[0][":status"] == "408"
        # The connection still serves the next request.
        after = client.request(PATH, body=b"{}", content_type="application/json")
        client.read_until(client.stream_ended(after))
        assert client.headers_of(after)[0][":status"] == "400"
    finally:
        client.close()


def test_an_h2_body_over_the_limit_is_413(sim, tls_gateway):
    """One byte over the body limit (64 KiB), sent as flow control allows, is refused."""
    client = RawClient(tls_gateway.webhook_port, tls=tls_context(sim))
    try:
        large = client.request(PATH, end_stream=False, content_type="application/json")
        ended = client.stream_ended(large)
        left = 64 * 1024 + 1
        while left > 0 and not ended(client.events):
            size = min(client.conn.local_flow_control_window(large), client.conn.max_outbound_frame_size, left)
            if size == 0:
                client.read_until(lambda events: ended(events) or client.conn.local_flow_control_window(large) > 0)
                continue
            client.conn.send_data(large, b"a" * size)
            client.flush()
            left -= size
        client.read_until(ended, timeout=3)
        assert client.headers_of(large)[0][":status"] == "413"
    finally:
        client.close()


def test_an_h2_404_does_not_echo_the_path(sim, tls_gateway):
    client = RawClient(tls_gateway.webhook_port, tls=tls_context(sim))
    try:
        other = client.request("/elsewhere", body=b"{}", content_type="application/json")
        client.read_until(client.stream_ended(other))
        assert client.headers_of(other)[0][":status"] == "404"
        body = b"".join(e.data for e in client.events if getattr(e, "stream_id", None) == other and hasattr(e, "data"))
        assert PATH.encode() not in body and b"hidden" not in body, body
    finally:
        client.close()
