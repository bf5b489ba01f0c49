"""GetHistory end to end: grpcio → gateway → libcurl over HTTPS (h2) → the App Store simulator."""
import json
import os
import tempfile
import time

import grpc
import pytest

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, history_pb2
from conftest import Gateway


@pytest.fixture(scope="module")
def simulated():
    """A gateway started with `serve --simulator` and the simulator's sample ids."""
    state = tempfile.mkdtemp(prefix="gw-sim-")
    gw = Gateway(["--simulator", "--state-dir", state])
    index = json.load(open(os.path.join(state, "transactions.json")))
    bundle = next(iter(index))
    channel = grpc.insecure_channel(gw.address)
    # Customers with no purchase in an environment have no transaction id there.
    with_ids = {env: [c for c in customers if c["transactionId"]] for env, customers in index[bundle].items()}
    yield gw, gateway_pb2_grpc.AppStoreGatewayStub(channel), with_ids
    channel.close()
    gw.stop()


def biggest(customers):
    return max(customers, key=lambda c: c["transactions"])


def test_all_pages_returns_the_whole_history_verified(simulated):
    _, stub, index = simulated
    customer = biggest(index["Production"])
    response = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True), timeout=30)
    assert response.environment == common_pb2.ENVIRONMENT_PRODUCTION
    assert not response.has_more and response.pages_fetched >= 2
    ids = [t.transaction_id for t in response.transactions]
    assert len(ids) == len(set(ids)) == customer["transactions"]
    assert len(response.signed_transactions) == len(response.transactions)
    for t in response.transactions:
        assert t.raw_json and t.bundle_id == response.bundle_id and t.purchase_date.seconds > 0


def test_one_page_then_the_next_by_revision(simulated):
    _, stub, index = simulated
    customer = biggest(index["Production"])
    first = stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"]), timeout=30)
    assert first.has_more and len(first.transactions) == 20 and first.pages_fetched == 1
    second = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], revision=first.revision), timeout=30)
    assert not {t.transaction_id for t in first.transactions} & {t.transaction_id for t in second.transactions}


def test_filters_reach_apple(simulated):
    _, stub, index = simulated
    customer = biggest(index["Production"])
    everything = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True), timeout=30).transactions
    renewables = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True,
        product_types=[common_pb2.PRODUCT_TYPE_AUTO_RENEWABLE]), timeout=30).transactions
    assert renewables and all(t.type == common_pb2.PRODUCT_TYPE_AUTO_RENEWABLE for t in renewables)
    assert len(renewables) <= len(everything)
    descending = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True, sort=common_pb2.SORT_ORDER_DESCENDING), timeout=30)
    assert {t.transaction_id for t in descending.transactions} == {t.transaction_id for t in everything}


def test_auto_environment_falls_back_to_sandbox(simulated):
    _, stub, index = simulated
    customer = index["Sandbox"][0]
    response = stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id=customer["transactionId"]), timeout=30)
    assert response.environment == common_pb2.ENVIRONMENT_SANDBOX and response.transactions


def test_legacy_receipt_view(simulated):
    _, stub, index = simulated
    customer = biggest(index["Production"])
    response = stub.GetHistory(history_pb2.GetHistoryRequest(
        transaction_id=customer["transactionId"], include_latest_receipt_info=True), timeout=30)
    assert len(response.latest_receipt_info) == len(response.transactions)
    legacy, jws = response.latest_receipt_info[0], response.transactions[0]
    assert legacy.transaction_id == jws.transaction_id
    assert legacy.purchase_date_ms == str(jws.purchase_date.ToMilliseconds())
    assert legacy.purchase_date.endswith(" Etc/GMT") and legacy.purchase_date_pst.endswith(" America/Los_Angeles")


def test_errors_are_mapped(simulated):
    _, stub, _ = simulated
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="999999999999"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(history_pb2.GetHistoryRequest(), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "transaction_id" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1", app="nope"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_many_concurrent_calls_share_the_upstream(simulated):
    _, stub, index = simulated
    customers = index["Production"]
    futures = [stub.GetHistory.future(history_pb2.GetHistoryRequest(
        transaction_id=customers[i % len(customers)]["transactionId"]), timeout=60) for i in range(100)]
    results = [f.result() for f in futures]
    assert all(r.transactions for r in results)
