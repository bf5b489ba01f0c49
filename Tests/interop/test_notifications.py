"""StreamNotifications end to end: grpcio → gateway → the App Store simulator (standalone, 50 customers:
150+ notifications over 8+ pages). Apple's Python library pages the simulator directly as the oracle."""
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import grpc
import pytest
import yaml
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from google.protobuf import timestamp_pb2
from google.rpc import error_details_pb2, status_pb2

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, notification_pb2
from conftest import GATEWAY_BIN, Gateway, throwaway_key
from test_simulator import Simulator

CUSTOMERS = "50"


class NotificationSimulator(Simulator):
    """A standalone simulator process on `directory` (created with 50 customers on first use), with `flags`."""

    def __init__(self, directory, *flags):
        self.proc = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", directory, "--seed", "7",
             "--customers", CUSTOMERS, *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"listening on (https://\S+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self.url = match.group(1)
        self.directory = directory
        self.config_path = os.path.join(directory, "gateway.yaml")
        self.config = yaml.safe_load(open(self.config_path))
        self.app = self.config["apps"][0]


def copy_of(simulator, *flags):
    """Another simulator serving the same data (a copy of the state directory), e.g. with faults."""
    directory = tempfile.mkdtemp(prefix="gw-notif-copy-")
    shutil.copytree(simulator.directory, directory, dirs_exist_ok=True)
    return NotificationSimulator(directory, *flags)


def timestamp(seconds):
    value = timestamp_pb2.Timestamp()
    value.FromMilliseconds(int(seconds * 1000))
    return value


NOW = time.time()
START, END = timestamp(NOW - 179 * 86_400), timestamp(NOW + 3_600)


def request(**fields):
    fields.setdefault("start_date", START)
    fields.setdefault("end_date", END)
    return notification_pb2.StreamNotificationsRequest(**fields)


def uuid_of(jws):
    """The notificationUUID in a notification JWS (the simulator signs anew on every request)."""
    payload = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["notificationUUID"]


def uuids(events):
    return [e.notification.notification_uuid for e in events]


def error_info(error):
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    for detail in status.details:
        if detail.Unpack(info):
            return info
    raise AssertionError("no ErrorInfo in the status details")


def upstream_pages(gateway):
    """Get Notification History answers the gateway received, from its metrics."""
    import urllib.request

    with urllib.request.urlopen(gateway.admin_url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("appstore_gateway_apple_requests_total{") and 'endpoint="getNotificationHistory"' in line \
                and 'http_status="200"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


@pytest.fixture(scope="module")
def setup():
    simulator = NotificationSimulator(tempfile.mkdtemp(prefix="gw-notif-"))
    # A small per-stream write buffer, so backpressure shows after a few events rather than a few hundred KiB.
    gw = Gateway(["--config", simulator.config_path], env={
        "APPSTORE_GATEWAY_LOGGING_LEVEL": "debug", "APPSTORE_GATEWAY_LIMITS_STREAM_WRITE_BUFFER_BYTES": "16384"})
    channel = grpc.insecure_channel(gw.address)
    yield simulator, gw, gateway_pb2_grpc.AppStoreGatewayStub(channel), simulator.config_path
    channel.close()
    gw.stop()
    simulator.stop()


def fixed_window_stub(gateway):
    """A client whose HTTP/2 receive window stays at 64 KiB (no BDP growth, which on loopback soon allows
    megabytes in flight): what a slow reader leaves unread then stops the gateway within a page or two."""
    channel = grpc.insecure_channel(gateway.address, options=[("grpc.http2.bdp_probe", 0)])
    return gateway_pb2_grpc.AppStoreGatewayStub(channel)
    gw.stop()
    simulator.stop()


def oracle(simulator, **filters):
    """The simulator's own list, paged with Apple's library: (signedPayload, sendAttempts) per record, pages."""
    from appstoreserverlibrary.models.Environment import Environment
    client = simulator.client(Environment.PRODUCTION)
    body = NotificationHistoryRequest(startDate=START.ToMilliseconds(), endDate=END.ToMilliseconds(), **filters)
    token, items, pages = None, [], 0
    os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(simulator.directory, "tls", "ca.pem")
    try:
        while True:
            response = client.get_notification_history(token, body)
            pages += 1
            items += response.notificationHistory
            if not response.hasMore:
                return items, pages
            token = response.paginationToken
    finally:
        os.environ.pop("REQUESTS_CA_BUNDLE", None)


@pytest.fixture(scope="module")
def everything(setup):
    simulator, _, stub, _ = setup
    events = list(stub.StreamNotifications(request(), timeout=120))
    return events, oracle(simulator)


def test_order_and_completeness_match_the_simulator(everything):
    events, (items, pages) = everything
    assert len(items) >= 150 and pages >= 8
    assert uuids(events) == [uuid_of(i.signedPayload) for i in items]
    assert all(uuid_of(e.signed_payload) == e.notification.notification_uuid for e in events)
    for event, item in zip(events, items):
        n = event.notification
        assert n.notification_uuid and n.notification_type_raw and n.raw_json and n.signed_date.seconds > 0
        assert n.notification_type != common_pb2.NOTIFICATION_TYPE_UNSPECIFIED
        assert [a.result_raw for a in event.send_attempts] == [a.sendAttemptResult for a in item.sendAttempts]
        assert [a.attempt_date.ToMilliseconds() for a in event.send_attempts] == [a.attemptDate for a in item.sendAttempts]
        assert all(a.result != common_pb2.SEND_ATTEMPT_RESULT_UNSPECIFIED for a in event.send_attempts)
        assert event.resume_token
    with_transaction = [e for e in events if e.notification.data.transaction.transaction_id]
    assert with_transaction and all(e.notification.data.transaction.raw_json for e in with_transaction)
    assert any(e.notification.data.renewal_info.raw_json for e in events)


def test_filters_reach_apple(setup, everything):
    simulator, _, stub, _ = setup
    events, _ = everything
    subscribed = list(stub.StreamNotifications(request(notification_type="SUBSCRIBED"), timeout=60))
    items, _ = oracle(simulator, notificationType="SUBSCRIBED")
    assert subscribed and uuids(subscribed) == [uuid_of(i.signedPayload) for i in items]
    assert all(e.notification.notification_type_raw == "SUBSCRIBED" for e in subscribed)
    initial = list(stub.StreamNotifications(
        request(notification_type="SUBSCRIBED", notification_subtype="INITIAL_BUY"), timeout=60))
    assert initial and all(e.notification.subtype_raw == "INITIAL_BUY" for e in initial)
    transaction_id = next(e.notification.data.transaction.original_transaction_id for e in events
                          if e.notification.data.transaction.original_transaction_id)
    own = list(stub.StreamNotifications(request(transaction_id=transaction_id), timeout=60))
    assert own and set(uuids(own)) < set(uuids(events))
    assert transaction_id in {e.notification.data.transaction.original_transaction_id for e in own}
    failures = list(stub.StreamNotifications(request(only_failures=True), timeout=60))
    assert len(failures) < len(events)
    assert all(all(a.result != common_pb2.SEND_ATTEMPT_RESULT_SUCCESS for a in e.send_attempts) for e in failures)


@pytest.mark.parametrize("fields, code, field", [
    ({"start_date": None}, grpc.StatusCode.INVALID_ARGUMENT, "start_date"),
    ({"end_date": None}, grpc.StatusCode.INVALID_ARGUMENT, "end_date"),
    ({"end_date": timestamp(NOW - 179 * 86_400 - 60)}, grpc.StatusCode.INVALID_ARGUMENT, "end_date"),
    ({"start_date": timestamp(NOW - 181 * 86_400)}, grpc.StatusCode.INVALID_ARGUMENT, "start_date"),
    ({"notification_type": "DID_RENEW", "transaction_id": "2000000000000001"}, grpc.StatusCode.INVALID_ARGUMENT,
     "transaction_id"),
    ({"notification_subtype": "INITIAL_BUY"}, grpc.StatusCode.INVALID_ARGUMENT, "notification_subtype"),
    ({"app": "nope"}, grpc.StatusCode.NOT_FOUND, None),
    ({"resume_token": "garbled"}, grpc.StatusCode.INVALID_ARGUMENT, "resume_token"),
])
def test_validation_errors_are_trailers_only(setup, fields, code, field):
    _, gw, stub, _ = setup
    message = request(**{k: v for k, v in fields.items() if v is not None})
    for name, value in fields.items():
        if value is None:
            message.ClearField(name)
    before = upstream_pages(gw)
    call = stub.StreamNotifications(message, timeout=10)
    with pytest.raises(grpc.RpcError) as error:
        next(call)
    assert error.value.code() == code
    # Trailers-Only: the status came in the only HEADERS frame, so there is no initial metadata.
    assert not call.initial_metadata()
    if field:
        assert error_info(error.value).metadata["field"] == field
    assert upstream_pages(gw) == before


def test_a_forged_or_foreign_token_is_invalid_argument(setup, everything):
    _, _, stub, _ = setup
    events, _ = everything
    token = events[30].resume_token
    tampered = token[:20] + ("A" if token[20] != "A" else "B") + token[21:]
    for bad, fields in ((tampered, {}), (token, {"notification_type": "DID_RENEW"}), (token, {"only_failures": True})):
        with pytest.raises(grpc.RpcError) as error:
            list(stub.StreamNotifications(request(resume_token=bad, **fields), timeout=10))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "resume_token" in error.value.details()


def test_resume_after_every_position_of_one_page(setup, everything):
    _, _, stub, _ = setup
    events, _ = everything
    expected = uuids(events)
    for position in range(19, 41):  # the last of page 1, all of page 2, the first of page 3
        call = stub.StreamNotifications(request(resume_token=events[position].resume_token), timeout=60)
        got = []
        for event in call:
            got.append(event.notification.notification_uuid)
            if len(got) == 22:
                call.cancel()
                break
        assert got == expected[position + 1:position + 23], f"resuming after event {position}"


def test_resume_after_the_last_event_is_empty(setup, everything):
    _, _, stub, _ = setup
    events, _ = everything
    assert list(stub.StreamNotifications(request(resume_token=events[-1].resume_token), timeout=60)) == []


def test_a_slow_consumer_holds_upstream_paging_back(setup, everything):
    _, gw, _, _ = setup
    stub = fixed_window_stub(gw)
    events, (_, pages) = everything
    before = upstream_pages(gw)
    call = stub.StreamNotifications(request(), timeout=60)
    first = next(call)
    time.sleep(2)
    # The page being read plus at most one fetched ahead, however long the client waits.
    assert upstream_pages(gw) - before <= 2
    rest = list(call)
    assert uuids([first] + rest) == uuids(events)
    assert upstream_pages(gw) - before == pages


def test_cancel_mid_stream_stops_paging(setup, everything):
    _, gw, _, _ = setup
    stub = fixed_window_stub(gw)
    before = upstream_pages(gw)
    call = stub.StreamNotifications(request(), timeout=60)
    for _ in range(5):
        next(call)
    call.cancel()
    time.sleep(1)
    settled = upstream_pages(gw)
    assert settled - before <= 2
    time.sleep(1)
    assert upstream_pages(gw) == settled
    assert len(list(stub.StreamNotifications(request(notification_type="SUBSCRIBED"), timeout=60))) > 0


def test_deadline_ends_the_stream_and_paging(setup, everything):
    _, gw, _, _ = setup
    stub = fixed_window_stub(gw)
    before = upstream_pages(gw)
    call = stub.StreamNotifications(request(), timeout=1.5)
    received = 0
    with pytest.raises(grpc.RpcError) as error:
        for _ in call:
            received += 1
            time.sleep(0.2)
    assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED and 0 < received < 20
    time.sleep(0.5)
    assert upstream_pages(gw) - before <= 2


def test_resume_across_a_gateway_restart(setup, everything, fresh_gateway):
    _, _, _, config = setup
    events, _ = everything
    first = fresh_gateway("--config", config)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(first.address))
    call = stub.StreamNotifications(request(), timeout=60)
    got = [next(call) for _ in range(33)]
    call.cancel()
    first.terminate()
    second = fresh_gateway("--config", config)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(second.address))
    rest = list(stub.StreamNotifications(request(resume_token=got[-1].resume_token), timeout=60))
    assert uuids(got + rest) == uuids(events)


def test_graceful_shutdown_ends_the_stream_with_a_resume_token(setup, everything, fresh_gateway):
    _, gw, stub, config = setup
    events, _ = everything
    draining = fresh_gateway("--config", config, env={
        "APPSTORE_GATEWAY_SHUTDOWN_GRACE": "1s", "APPSTORE_GATEWAY_LIMITS_STREAM_WRITE_BUFFER_BYTES": "16384"})
    # A fixed 64 KiB window: what is queued when the grace period ends drains well within the server's
    # 500 ms flush, so the final status reaches this slow reader before the connection closes.
    call = fixed_window_stub(draining).StreamNotifications(request(), timeout=60)
    got = [next(call) for _ in range(3)]
    threading.Thread(target=draining.terminate, daemon=True).start()
    with pytest.raises(grpc.RpcError) as error:
        for event in call:  # slower than the 1 s grace period lets the whole stream through
            got.append(event)
            time.sleep(0.05)
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    token = error_info(error.value).metadata["resume_token"]
    assert token == got[-1].resume_token
    rest = list(stub.StreamNotifications(request(resume_token=token), timeout=60))
    assert uuids(got + rest) == uuids(events)


def test_apple_429_mid_stream_ends_with_a_resume_token(setup, everything, fresh_gateway):
    simulator, _, _, _ = setup
    events, _ = everything
    faulty = copy_of(simulator, "--fault", "error=4290000", "--fault-every", "3", "--fault-endpoint",
                     "getNotificationHistory")
    try:
        gw = fresh_gateway("--config", faulty.config_path)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))
        got, token, from_apple = [], "", 0
        while True:
            try:
                for event in stub.StreamNotifications(request(resume_token=token), timeout=60):
                    got.append(event)
                break
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error.details()
                info = error_info(error)
                from_apple += info.metadata.get("apple_error_code") == "4290000"
                token = info.metadata.get("resume_token", "")
                assert token == (got[-1].resume_token if got else "")
                time.sleep(retry_delay(error))
        assert from_apple >= 2
        assert uuids(got) == uuids(events)
    finally:
        faulty.stop()


def retry_delay(error):
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    retry = error_details_pb2.RetryInfo()
    for detail in status.details:
        if detail.Unpack(retry):
            return retry.retry_delay.ToMilliseconds() / 1000 + 0.05
    return 1.0


def test_expired_apple_pagination_token_is_failed_precondition(setup, everything, fresh_gateway):
    simulator, _, _, _ = setup
    short = copy_of(simulator, "--pagination-token-lifetime", "1")
    try:
        gw = fresh_gateway("--config", short.config_path)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))
        call = stub.StreamNotifications(request(), timeout=60)
        got = [next(call) for _ in range(25)]  # event 24 sits on page 2, fetched with Apple's token
        call.cancel()
        time.sleep(2.2)
        with pytest.raises(grpc.RpcError) as error:
            list(stub.StreamNotifications(request(resume_token=got[-1].resume_token), timeout=60))
        assert error.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "start_date" in error.value.details() and "expired" in error.value.details()
        info = error_info(error.value)
        assert info.reason == "PAGINATION_TOKEN_EXPIRED"
        assert info.metadata["restart_from_ms"] == str(got[-1].notification.signed_date.ToMilliseconds())
    finally:
        short.stop()


def key_ring(path, *keys):
    """A resume-token key ring file (0600): one base64 key per line, the first signing."""
    path.write_text("# resume-token keys, newest first\n" + "".join(base64.b64encode(k).decode() + "\n" for k in keys))
    path.chmod(0o600)
    return str(path)


def config_with(simulator, path, **notifications):
    """The simulator's gateway configuration with `notifications` keys set, written to `path`."""
    config = yaml.safe_load(open(simulator.config_path))
    config.setdefault("notifications", {}).update(notifications)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_adding_an_app_and_its_key_leaves_resume_tokens_valid(setup, everything, fresh_gateway, tmp_path):
    """The token key is not derived from the apps' keys: a configuration with one more app (and key)
    resumes the first one's stream, as two processes side by side."""
    simulator, _, _, config = setup
    events, _ = everything
    first = fresh_gateway("--config", config)
    token = list(gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(first.address)).StreamNotifications(
        request(), timeout=60))[30].resume_token
    more = yaml.safe_load(open(config))
    more["apps"].append({"name": "another", "bundleId": "com.example.another", "issuerId": "issuer",
                         "keyId": "ANOTHERKEY", "privateKeyFile": throwaway_key(tmp_path), "environment": "sandbox"})
    (tmp_path / "more.yaml").write_text(yaml.safe_dump(more))
    second = fresh_gateway("--config", str(tmp_path / "more.yaml"))
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(second.address))
    rest = list(stub.StreamNotifications(request(app=simulator.app["name"], resume_token=token), timeout=60))
    assert uuids(rest) == uuids(events[31:])


def test_a_key_ring_shared_by_two_processes_resumes_across_them_and_rotates(setup, everything, fresh_gateway, tmp_path):
    simulator, _, _, _ = setup
    events, _ = everything
    old, new = os.urandom(32), os.urandom(48)
    ring = key_ring(tmp_path / "ring", old)
    one = fresh_gateway("--config", config_with(simulator, tmp_path / "one.yaml", resumeTokenKeyFile=ring))
    two = fresh_gateway("--config", config_with(simulator, tmp_path / "two.yaml", resumeTokenKeyFile=ring))
    got = list(gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(one.address)).StreamNotifications(
        request(), timeout=60))
    assert uuids(got) == uuids(events)
    # Minted by one process, resumed by the other (a rolling update's old and new pods), and back.
    stub_two = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(two.address))
    call = stub_two.StreamNotifications(request(resume_token=got[20].resume_token), timeout=60)
    middle = [next(call) for _ in range(10)]
    call.cancel()
    assert uuids(middle) == uuids(events[21:31])
    stub_one = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(one.address))
    assert uuids(stub_one.StreamNotifications(request(resume_token=middle[-1].resume_token), timeout=60)) \
        == uuids(events[31:])
    # Rotation: a ring with a new signing key still verifies the old key's tokens ...
    rotated = fresh_gateway("--config", config_with(
        simulator, tmp_path / "rotated.yaml", resumeTokenKeyFile=key_ring(tmp_path / "rotated", new, old)))
    stub_rotated = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(rotated.address))
    call = stub_rotated.StreamNotifications(request(resume_token=got[40].resume_token), timeout=60)
    signed_with_new = next(call)
    call.cancel()
    assert signed_with_new.notification.notification_uuid == uuids(events)[41]
    # ... whose own tokens the old ring refuses: why a new key goes last until every replica has it.
    with pytest.raises(grpc.RpcError) as refused:
        list(stub_one.StreamNotifications(request(resume_token=signed_with_new.resume_token), timeout=10))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Once the old key is dropped from the ring, its tokens are refused.
    dropped = fresh_gateway("--config", config_with(
        simulator, tmp_path / "dropped.yaml", resumeTokenKeyFile=key_ring(tmp_path / "dropped", new)))
    stub_dropped = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(dropped.address))
    with pytest.raises(grpc.RpcError) as refused:
        list(stub_dropped.StreamNotifications(request(resume_token=got[40].resume_token), timeout=10))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(refused.value).reason == "INVALID_ARGUMENT" and "resume_token" in refused.value.details()
    assert uuids(stub_dropped.StreamNotifications(request(resume_token=signed_with_new.resume_token), timeout=60)) \
        == uuids(events[42:])


def test_a_resume_token_past_its_max_age_is_invalid_argument_with_its_reason(setup, everything, fresh_gateway, tmp_path):
    simulator, _, _, _ = setup
    events, _ = everything
    gw = fresh_gateway("--config", config_with(simulator, tmp_path / "short.yaml", resumeTokenMaxAge="1s"))
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))
    call = stub.StreamNotifications(request(), timeout=60)
    event = [next(call) for _ in range(5)][-1]
    call.cancel()
    time.sleep(1.2)  # lets the token outlive its 1 s
    with pytest.raises(grpc.RpcError) as expired:
        list(stub.StreamNotifications(request(resume_token=event.resume_token), timeout=10))
    assert expired.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expired" in expired.value.details() and "1s" in expired.value.details()
    info = error_info(expired.value)
    assert info.reason == "RESUME_TOKEN_EXPIRED"
    assert info.metadata["field"] == "resume_token" and info.metadata["max_age_ms"] == "1000"
    assert info.metadata["restart_from_ms"] == str(event.notification.signed_date.ToMilliseconds())


def test_a_rewritten_key_ring_is_reloaded_by_the_running_gateway(setup, everything, fresh_gateway, tmp_path):
    """A Secret update (here an atomic rename, as the kubelet swaps `..data`) reaches the running process."""
    simulator, _, _, _ = setup
    events, _ = everything
    old, new = os.urandom(32), os.urandom(32)
    ring = tmp_path / "ring"
    gw = fresh_gateway("--config", config_with(simulator, tmp_path / "gw.yaml", resumeTokenKeyFile=key_ring(ring, old)))
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))
    call = stub.StreamNotifications(request(), timeout=60)
    before = [next(call) for _ in range(5)][-1]
    call.cancel()
    key_ring(tmp_path / "next", new)
    os.rename(tmp_path / "next", ring)
    deadline = time.time() + 20
    while "reloaded the resume-token key ring" not in gw.read_log() and time.time() < deadline:
        time.sleep(0.1)
    assert "reloaded the resume-token key ring" in gw.read_log()
    assert base64.b64encode(new).decode() not in gw.read_log(), "a key is never logged"
    with pytest.raises(grpc.RpcError) as refused:
        list(stub.StreamNotifications(request(resume_token=before.resume_token), timeout=10))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    call = stub.StreamNotifications(request(), timeout=60)
    after = [next(call) for _ in range(5)][-1]
    call.cancel()
    assert uuids(stub.StreamNotifications(request(resume_token=after.resume_token), timeout=60)) == uuids(events[5:])
    # A ring that no longer loads leaves the one in force.
    (tmp_path / "broken").write_text("not a key\n")
    (tmp_path / "broken").chmod(0o600)
    os.rename(tmp_path / "broken", ring)
    deadline = time.time() + 20
    while "kept the previous resume-token key ring" not in gw.read_log() and time.time() < deadline:
        time.sleep(0.1)
    assert "kept the previous resume-token key ring" in gw.read_log()
    assert uuids(stub.StreamNotifications(request(resume_token=after.resume_token), timeout=60)) == uuids(events[5:])


def test_a_bad_key_ring_stops_start_up_naming_the_line_never_the_key(setup, tmp_path):
    simulator, _, _, _ = setup
    short = base64.b64encode(os.urandom(16)).decode()
    ring = tmp_path / "ring"
    ring.write_text(f"# rotated 2026-11-27\n{base64.b64encode(os.urandom(32)).decode()}\n{short}\n")
    ring.chmod(0o600)
    config = config_with(simulator, tmp_path / "bad.yaml", resumeTokenKeyFile=str(ring))
    checked = subprocess.run([GATEWAY_BIN, "check-config", "--config", config], capture_output=True, text=True,
                             timeout=30)
    assert checked.returncode == 1
    assert "notifications.resumeTokenKeyFile: line 3 of" in checked.stdout and "16-byte key" in checked.stdout
    assert short not in checked.stdout
    served = subprocess.run([GATEWAY_BIN, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                            capture_output=True, text=True, timeout=30)
    assert served.returncode == 1
    assert "line 3 of" in served.stderr and short not in served.stderr + served.stdout
    ring.chmod(0o644)
    checked = subprocess.run([GATEWAY_BIN, "check-config", "--config", config], capture_output=True, text=True,
                             timeout=30)
    assert checked.returncode == 1 and "readable or writable by others" in checked.stdout
