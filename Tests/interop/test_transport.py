"""The gRPC transport against a real client: grpcio (and raw HTTP/2 where grpcio cannot say it)."""
import concurrent.futures
import random
import tempfile
import threading
import time
import urllib.request

import grpc
import h2.events
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from appstore.gateway.v1 import gateway_pb2_grpc, notification_pb2, verify_pb2
from google.rpc import status_pb2, error_details_pb2
from h2raw import RawClient, grpc_frame

SERVICE = "appstore.gateway.v1.AppStoreGateway"


def test_health_check_serving(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    assert stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
    assert stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=5).status == health_pb2.HealthCheckResponse.SERVING


def test_health_check_unknown_service_is_not_found(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no.such.Service" in info.value.details()


def test_health_watch_sends_current_status_and_unknown(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    watch.cancel()
    unknown = stub.Watch(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
    assert next(unknown).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    unknown.cancel()


def test_unknown_method_is_unimplemented(channel):
    call = channel.unary_unary("/appstore.gateway.v1.AppStoreGateway/NoSuchMethod")
    with pytest.raises(grpc.RpcError) as info:
        call(b"", timeout=5)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "NoSuchMethod" in info.value.details()


def test_unknown_service_is_unimplemented(channel):
    call = channel.unary_unary("/no.such.Service/Method")
    with pytest.raises(grpc.RpcError) as info:
        call(b"", timeout=5)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_wrong_content_type_gets_http_415(gateway):
    client = RawClient(gateway.port)
    try:
        sid = client.request("/grpc.health.v1.Health/Check", body=grpc_frame(b""), content_type="application/json")
        client.read_until(client.stream_ended(sid))
        head = client.headers_of(sid)[0]
        assert head[":status"] == "415"
        # No content type at all is refused the same way.
        sid = client.request("/grpc.health.v1.Health/Check", body=grpc_frame(b""), content_type=None)
        client.read_until(client.stream_ended(sid))
        assert client.headers_of(sid)[0][":status"] == "415"
    finally:
        client.close()


def test_oversized_message_is_resource_exhausted(channel):
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="a" * (5 * 1024 * 1024)), timeout=10)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "exceeds" in info.value.details()
    # The connection stays usable.
    health = health_pb2_grpc.HealthStub(channel)
    assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING


def test_garbage_protobuf_is_invalid_argument(channel):
    call = channel.unary_unary("/grpc.health.v1.Health/Check")
    with pytest.raises(grpc.RpcError) as info:
        call(b"\xff\xff\xff\xff\xff", timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_500_concurrent_calls_on_one_channel(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    futures = [stub.Check.future(health_pb2.HealthCheckRequest(), timeout=30) for _ in range(500)]
    statuses = [f.result().status for f in futures]
    assert statuses == [health_pb2.HealthCheckResponse.SERVING] * 500


def test_one_millisecond_deadline_is_deadline_exceeded(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    watch = stub.Watch(health_pb2.HealthCheckRequest(), timeout=0.001)
    with pytest.raises(grpc.RpcError) as info:
        for _ in watch:
            pass
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_server_enforces_grpc_timeout(gateway):
    """The server itself ends the call when grpc-timeout passes (not only the client)."""
    client = RawClient(gateway.port)
    try:
        started = time.monotonic()
        sid = client.request("/grpc.health.v1.Health/Watch", headers=[("grpc-timeout", "200m")], body=grpc_frame(b""))
        client.read_until(client.stream_ended(sid), timeout=5)
        elapsed = time.monotonic() - started
        trailers = client.headers_of(sid)[-1]
        assert trailers["grpc-status"] == "4", trailers
        assert "deadline" in trailers["grpc-message"]
        assert elapsed >= 0.15
    finally:
        client.close()


def test_malformed_grpc_timeout_is_rejected(gateway):
    client = RawClient(gateway.port)
    try:
        sid = client.request("/grpc.health.v1.Health/Check", headers=[("grpc-timeout", "soon")], body=grpc_frame(b""))
        client.read_until(client.stream_ended(sid))
        head = client.headers_of(sid)[0]
        assert head["grpc-status"] == "3" and "grpc-timeout" in head["grpc-message"]
    finally:
        client.close()


def test_errors_before_any_message_are_trailers_only(gateway):
    client = RawClient(gateway.port)
    try:
        sid = client.request("/appstore.gateway.v1.AppStoreGateway/Nope", body=grpc_frame(b""))
        client.read_until(client.stream_ended(sid))
        blocks = client.headers_of(sid)
        assert len(blocks) == 1 and blocks[0][":status"] == "200" and blocks[0]["grpc-status"] == "12"
        assert not any(isinstance(e, h2.events.DataReceived) and e.stream_id == sid for e in client.events)
    finally:
        client.close()


def test_compressed_message_is_unimplemented(gateway):
    client = RawClient(gateway.port)
    try:
        body = b"\x01" + (3).to_bytes(4, "big") + b"abc"
        sid = client.request("/grpc.health.v1.Health/Check", headers=[("grpc-encoding", "gzip")], body=body)
        client.read_until(client.stream_ended(sid))
        trailers = client.headers_of(sid)[-1]
        assert trailers["grpc-status"] == "12" and "compressed" in trailers["grpc-message"]
    finally:
        client.close()


def test_message_split_across_data_frames_and_truncated(gateway):
    client = RawClient(gateway.port)
    try:
        request = health_pb2.HealthCheckRequest(service=SERVICE).SerializeToString()
        frame = grpc_frame(request)
        sid = client.request("/grpc.health.v1.Health/Check", body=frame[:3], end_stream=False)
        client.conn.send_data(sid, frame[3:7])
        client.conn.send_data(sid, frame[7:], end_stream=True)
        client.flush()
        client.read_until(client.stream_ended(sid))
        assert client.headers_of(sid)[-1]["grpc-status"] == "0"
        # A request that ends inside a message is an error, not a hang.
        sid = client.request("/grpc.health.v1.Health/Check", body=frame[:4])
        client.read_until(client.stream_ended(sid))
        assert client.headers_of(sid)[-1]["grpc-status"] == "13"
    finally:
        client.close()


def test_unimplemented_rpcs_say_so(channel):
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(__import__("appstore.gateway.v1.history_pb2", fromlist=["x"]).GetHistoryRequest(), timeout=5)
    assert info.value.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    assert info.value.details()


def test_cancelled_stream_releases_the_call(gateway):
    """Cancelling a server stream ends the handler: the connection serves on and many cancels leak nothing."""
    client = RawClient(gateway.port)
    try:
        for _ in range(50):
            sid = client.request("/grpc.health.v1.Health/Watch", body=grpc_frame(b""))
            client.read_until(lambda ev: any(isinstance(e, h2.events.DataReceived) and e.stream_id == sid for e in ev))
            client.reset(sid)
        sid = client.request("/grpc.health.v1.Health/Check", body=grpc_frame(b""))
        client.read_until(client.stream_ended(sid))
        assert client.headers_of(sid)[-1]["grpc-status"] == "0"
    finally:
        client.close()


def goaways_sent(gw):
    """appstore_gateway_goaway_sent_total by code, from the gateway's metrics."""
    with urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    prefix = 'appstore_gateway_goaway_sent_total{code="'
    return {line[len(prefix):].split('"', 1)[0]: int(float(line.rsplit(" ", 1)[1]))
            for line in text.splitlines() if line.startswith(prefix)}


def cancel_streams_on_one_channel(gw, open_stream, read, enough, threads=8, seconds=60):
    """`threads` threads on one grpcio channel, each opening a server stream (`open_stream(stub_channel)`),
    reading `read(rng)` messages and cancelling it, until `enough(calls, elapsed)` or `seconds` pass. Returns the
    calls, the errors, and the channel's connectivity states after it first became READY (a GOAWAY makes grpcio
    drop the connection and dial again: IDLE, CONNECTING, READY)."""
    channel = grpc.insecure_channel(gw.address)
    states, ready = [], threading.Event()

    def watch(state):
        if ready.is_set():
            states.append(state.name)
        elif state == grpc.ChannelConnectivity.READY:
            ready.set()

    channel.subscribe(watch, try_to_connect=True)
    assert ready.wait(10)
    calls, errors, lock = [0], [], threading.Lock()
    started = time.monotonic()

    def worker(seed):
        rng = random.Random(seed)
        while time.monotonic() - started < seconds and not enough(calls[0], time.monotonic() - started):
            call = open_stream(channel)
            try:
                wanted = read(rng)
                for i, _ in enumerate(call):
                    if i + 1 >= wanted:
                        break
                call.cancel()
                with lock:
                    calls[0] += 1
            except grpc.RpcError as error:
                with lock:
                    errors.append(f"{error.code().name}: {error.details()}")

    pool = [threading.Thread(target=worker, args=(seed,)) for seed in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    channel.unsubscribe(watch)
    channel.close()
    return calls[0], errors, states


def test_cancelled_notification_streams_draw_no_goaway(fresh_gateway):
    """Eight grpcio threads on one channel, each opening StreamNotifications (the simulator as Apple), reading
    1-30 events and cancelling: a client's ordinary RST_STREAM CANCEL. The gateway used to answer with GOAWAY
    INTERNAL_ERROR every few seconds (nghttp2's reset limit counted these), and grpcio dialled again."""
    gw = fresh_gateway("--simulator", "--state-dir", tempfile.mkdtemp(prefix="gw-goaway-"))
    request = notification_pb2.StreamNotificationsRequest()
    request.start_date.FromSeconds(int(time.time() - 170 * 86_400))
    request.end_date.FromSeconds(int(time.time()))

    def open_stream(channel):
        return gateway_pb2_grpc.AppStoreGatewayStub(channel).StreamNotifications(request, timeout=30)

    calls, errors, states = cancel_streams_on_one_channel(
        gw, open_stream, read=lambda rng: rng.randint(1, 30), enough=lambda calls, elapsed: elapsed >= 10)
    assert calls >= 8 and not errors, (calls, errors[:5])
    assert states == [], f"the channel lost its connection: {states}"
    assert goaways_sent(gw)["INTERNAL_ERROR"] == 0 and sum(goaways_sent(gw).values()) == 0, goaways_sent(gw)


def test_thousands_of_cancelled_streams_draw_no_goaway(fresh_gateway):
    """The same pattern with a stream the gateway answers at once (Health/Watch, one message), 2,000 times: past
    the 1,000 resets (and 33 a second) after which nghttp2's own limit ended the connection with INTERNAL_ERROR.
    A reset of a stream already answered costs the gateway nothing, and counts against no limit."""
    gw = fresh_gateway()

    def open_stream(channel):
        return health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(), timeout=30)

    calls, errors, states = cancel_streams_on_one_channel(
        gw, open_stream, read=lambda rng: 1, enough=lambda calls, elapsed: calls >= 2_000, seconds=120)
    assert calls >= 2_000 and not errors, (calls, errors[:5])
    assert states == [], f"the channel lost its connection: {states}"
    assert sum(goaways_sent(gw).values()) == 0, goaways_sent(gw)


def test_sigterm_during_stream_ends_it_with_status_and_exits_zero(fresh_gateway):
    gw = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_GRACE": "1s"})
    channel = grpc.insecure_channel(gw.address)
    stub = health_pb2_grpc.HealthStub(channel)
    watch = stub.Watch(health_pb2.HealthCheckRequest(service=SERVICE), timeout=30)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    gw.proc.send_signal(__import__("signal").SIGTERM)
    seen = []
    with pytest.raises(grpc.RpcError) as info:
        for response in watch:
            seen.append(response.status)
    # Readiness (the gateway service) flips to NOT_SERVING first; the stream ends with a status once the grace
    # period is over. Liveness ("") stays SERVING so an orchestrator does not restart a draining process.
    assert health_pb2.HealthCheckResponse.NOT_SERVING in seen
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert gw.proc.wait(timeout=20) == 0
    channel.close()
