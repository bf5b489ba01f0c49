"""A stream no single payload can block: with one badly signed notification on every page, StreamNotifications
delivers it (signed_payload, status, message, no decoded notification) and every other event; a resumed stream
goes past it too. `strict_verification` keeps the old behaviour: DATA_LOSS at the first one."""
import tempfile

import grpc
import pytest

from appstore.gateway.v1 import gateway_pb2_grpc, verify_pb2
from test_notifications import NotificationSimulator, copy_of, error_info, request, uuid_of


@pytest.fixture(scope="module")
def streams(fresh_gateway_module):
    simulator = NotificationSimulator(tempfile.mkdtemp(prefix="gw-forged-"))
    forged = copy_of(simulator, "--fault", "forged-notification=3")
    try:
        clean = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(
            fresh_gateway_module("--config", simulator.config_path).address))
        faulty = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(
            fresh_gateway_module("--config", forged.config_path).address))
        baseline = list(clean.StreamNotifications(request(), timeout=120))
        yield baseline, faulty
    finally:
        forged.stop()
        simulator.stop()


@pytest.fixture(scope="module")
def fresh_gateway_module():
    from conftest import Gateway
    started = []

    def start(*args):
        gateway = Gateway(list(args))
        started.append(gateway)
        return gateway
    yield start
    for gateway in started:
        gateway.stop()


def test_every_event_arrives_and_the_forged_ones_say_why(streams):
    baseline, stub = streams
    events = list(stub.StreamNotifications(request(), timeout=120))
    assert len(events) == len(baseline) >= 150
    forged = [e for e in events if e.status != verify_pb2.VERIFICATION_STATUS_OK]
    assert len(forged) >= 8  # one per page
    for event, expected in zip(events, baseline):
        assert uuid_of(event.signed_payload) == expected.notification.notification_uuid
        assert event.resume_token
        if event.status == verify_pb2.VERIFICATION_STATUS_OK:
            assert event.notification.notification_uuid == expected.notification.notification_uuid
            assert not event.message
        else:
            assert event.status == verify_pb2.VERIFICATION_STATUS_INVALID_SIGNATURE, event.message
            assert event.message and not event.HasField("notification")


def test_resuming_at_a_forged_event_goes_past_it(streams):
    _, stub = streams
    events = list(stub.StreamNotifications(request(), timeout=120))
    index = next(i for i, e in enumerate(events) if e.status != verify_pb2.VERIFICATION_STATUS_OK)
    before = list(stub.StreamNotifications(request(resume_token=events[index - 1].resume_token), timeout=120))
    assert [uuid_of(e.signed_payload) for e in before] == [uuid_of(e.signed_payload) for e in events[index:]]
    after = list(stub.StreamNotifications(request(resume_token=events[index].resume_token), timeout=120))
    assert [uuid_of(e.signed_payload) for e in after] == [uuid_of(e.signed_payload) for e in events[index + 1:]]


def test_strict_verification_ends_at_the_first_forged_event(streams):
    _, stub = streams
    got = []
    with pytest.raises(grpc.RpcError) as error:
        for event in stub.StreamNotifications(request(strict_verification=True), timeout=120):
            got.append(event)
    assert error.value.code() == grpc.StatusCode.DATA_LOSS
    assert len(got) == 2 and all(e.status == verify_pb2.VERIFICATION_STATUS_OK for e in got)
    assert error_info(error.value).metadata["resume_token"] == got[-1].resume_token
