"""The Advanced Commerce API (issue 33) end to end: grpcio → gateway → the simulator. In-app signatures are checked
against Apple's own AdvancedCommerceAPIInAppSignatureCreator (same header, claims and `request` JSON, verified with
the app's public key through `cryptography`); every server RPC reaches Apple's path with Apple's body, answers with
verified signed data, and is idempotent through its request reference id."""
import base64
import json
import os
import tempfile
import uuid

import grpc
import jwt
import pytest
import requests
from appstoreserverlibrary.jws_signature_creator import AdvancedCommerceAPIInAppSignatureCreator
from appstoreserverlibrary.models.AdvancedCommerceDescriptors import AdvancedCommerceDescriptors
from appstoreserverlibrary.models.AdvancedCommerceEffective import AdvancedCommerceEffective
from appstoreserverlibrary.models.AdvancedCommerceOffer import AdvancedCommerceOffer
from appstoreserverlibrary.models.AdvancedCommerceOfferPeriod import AdvancedCommerceOfferPeriod
from appstoreserverlibrary.models.AdvancedCommerceOfferReason import AdvancedCommerceOfferReason
from appstoreserverlibrary.models.AdvancedCommerceOneTimeChargeCreateRequest import \
    AdvancedCommerceOneTimeChargeCreateRequest
from appstoreserverlibrary.models.AdvancedCommerceOneTimeChargeItem import AdvancedCommerceOneTimeChargeItem
from appstoreserverlibrary.models.AdvancedCommercePeriod import AdvancedCommercePeriod
from appstoreserverlibrary.models.AdvancedCommerceReason import AdvancedCommerceReason
from appstoreserverlibrary.models.AdvancedCommerceRequestInfo import AdvancedCommerceRequestInfo
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionCreateItem import AdvancedCommerceSubscriptionCreateItem
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionCreateRequest import \
    AdvancedCommerceSubscriptionCreateRequest
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionModifyChangeItem import \
    AdvancedCommerceSubscriptionModifyChangeItem
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionModifyDescriptors import \
    AdvancedCommerceSubscriptionModifyDescriptors
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionModifyInAppRequest import \
    AdvancedCommerceSubscriptionModifyInAppRequest
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionModifyPeriodChange import \
    AdvancedCommerceSubscriptionModifyPeriodChange
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionModifyRemoveItem import \
    AdvancedCommerceSubscriptionModifyRemoveItem
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionReactivateInAppRequest import \
    AdvancedCommerceSubscriptionReactivateInAppRequest
from appstoreserverlibrary.models.AdvancedCommerceSubscriptionReactivateItem import \
    AdvancedCommerceSubscriptionReactivateItem
from appstoreserverlibrary.models.Environment import Environment
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from google.protobuf import wrappers_pb2
from google.rpc import error_details_pb2, status_pb2

from appstore.gateway.v1 import advanced_commerce_pb2 as ac
from appstore.gateway.v1 import advanced_commerce_pb2_grpc, common_pb2, transaction_pb2
from conftest import Gateway
from test_simulator import Simulator

AUDIENCE = "advanced-commerce-api"


@pytest.fixture(scope="module")
def commerce():
    directory = tempfile.mkdtemp(prefix="commerce-simulator-")
    os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(directory, "tls", "ca.pem")
    sim = Simulator(directory)
    gw = Gateway(["--config", os.path.join(directory, "gateway.yaml")])
    channel = grpc.insecure_channel(gw.address)
    yield sim, advanced_commerce_pb2_grpc.AdvancedCommerceStub(channel), sim.verifier(Environment.PRODUCTION)
    channel.close()
    gw.stop()
    sim.stop()
    os.environ.pop("REQUESTS_CA_BUNDLE", None)


def public_key(sim):
    return serialization.load_pem_private_key(open(sim.app["privateKeyFile"], "rb").read(), None).public_key()


def b64url(part):
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verified_claims(sim, token):
    """The JWS checked by hand with `cryptography` (raw r‖s ES256 over the signing input), then its claims the way
    Apple's library reads them (PyJWT with the audience)."""
    header_part, payload_part, signature_part = token.split(".")
    raw = b64url(signature_part)
    assert len(raw) == 64
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public_key(sim).verify(der, f"{header_part}.{payload_part}".encode(), ec.ECDSA(hashes.SHA256()))
    header = json.loads(b64url(header_part))
    assert header == {"alg": "ES256", "kid": sim.app["keyId"], "typ": "JWT"}
    return jwt.decode(token, public_key(sim), algorithms=["ES256"], audience=AUDIENCE)


def apples_signature(sim, request):
    key = open(sim.app["privateKeyFile"], "rb").read()
    creator = AdvancedCommerceAPIInAppSignatureCreator(key, sim.app["keyId"], sim.app["issuerId"], sim.app["bundleId"])
    return creator.create_signature(request)


def request_claim(claims):
    return json.loads(base64.b64decode(claims["request"], validate=True))


REFERENCE = "550e8400-e29b-41d4-a716-446655440000"


def in_app_cases():
    """Each in-app request kind Apple models, as Apple's Python model and as the gateway's message."""
    info = AdvancedCommerceRequestInfo(requestReferenceId=uuid.UUID(REFERENCE))
    ours_info = ac.AdvancedCommerceRequestInfo(request_reference_id=REFERENCE)
    offer = AdvancedCommerceOffer(periodCount=3, price=4990, period=AdvancedCommerceOfferPeriod.P1M,
                                  reason=AdvancedCommerceOfferReason.WIN_BACK)
    ours_offer = transaction_pb2.AdvancedCommerceOffer(period="P1M", period_count=3, price_milliunits=4990,
                                                       reason="WIN_BACK")
    return [
        ("one_time_charge",
         AdvancedCommerceOneTimeChargeCreateRequest(
             currency="USD", taxCode="C003-00-2", requestInfo=info, storefront="USA",
             item=AdvancedCommerceOneTimeChargeItem(SKU="book-42", description="A book", displayName="Book",
                                                    price=9990)),
         ac.AdvancedCommerceOneTimeChargeCreate(
             request_info=ours_info, currency="USD", tax_code="C003-00-2", storefront="USA",
             item=ac.AdvancedCommerceOneTimeChargeItem(sku="book-42", description="A book", display_name="Book",
                                                       price=9990))),
        ("create_subscription",
         AdvancedCommerceSubscriptionCreateRequest(
             currency="EUR", taxCode="C003-00-1", requestInfo=info, period=AdvancedCommercePeriod.P1M,
             descriptors=AdvancedCommerceDescriptors(description="News, all of it", displayName="News+"),
             items=[AdvancedCommerceSubscriptionCreateItem(SKU="news", description="Daily news", displayName="News",
                                                           price=5000, offer=offer),
                    AdvancedCommerceSubscriptionCreateItem(SKU="sport", description="Sport", displayName="Sport",
                                                           price=2000)],
             previousTransactionId="2000000000000001"),
         ac.AdvancedCommerceSubscriptionCreate(
             request_info=ours_info, currency="EUR", tax_code="C003-00-1", period="P1M",
             descriptors=transaction_pb2.AdvancedCommerceDescriptors(description="News, all of it",
                                                                     display_name="News+"),
             items=[ac.AdvancedCommerceSubscriptionItem(sku="news", description="Daily news", display_name="News",
                                                        price=5000, offer=ours_offer),
                    ac.AdvancedCommerceSubscriptionItem(sku="sport", description="Sport", display_name="Sport",
                                                        price=2000)],
             previous_transaction_id="2000000000000001")),
        ("modify_subscription",
         AdvancedCommerceSubscriptionModifyInAppRequest(
             requestInfo=info, transactionId="2000000000000002", retainBillingCycle=True, currency="USD",
             changeItems=[AdvancedCommerceSubscriptionModifyChangeItem(
                 SKU="news-pro", description="More news", displayName="News Pro", currentSKU="news", price=7000,
                 reason=AdvancedCommerceReason.UPGRADE, effective=AdvancedCommerceEffective.IMMEDIATELY,
                 proratedPrice=1200)],
             removeItems=[AdvancedCommerceSubscriptionModifyRemoveItem(SKU="sport")],
             descriptors=AdvancedCommerceSubscriptionModifyDescriptors(
                 effective=AdvancedCommerceEffective.NEXT_BILL_CYCLE, displayName="News Pro+"),
             periodChange=AdvancedCommerceSubscriptionModifyPeriodChange(
                 effective=AdvancedCommerceEffective.NEXT_BILL_CYCLE, period=AdvancedCommercePeriod.P1Y),
             taxCode="C003-00-1"),
         ac.AdvancedCommerceSubscriptionModify(
             request_info=ours_info, transaction_id="2000000000000002", retain_billing_cycle=True, currency="USD",
             change_items=[ac.AdvancedCommerceModifyChangeItem(
                 current_sku="news", sku="news-pro", description="More news", display_name="News Pro", price=7000,
                 reason="UPGRADE", effective="IMMEDIATELY", prorated_price=wrappers_pb2.Int64Value(value=1200))],
             remove_skus=["sport"],
             descriptors=ac.AdvancedCommerceDescriptorsChange(effective="NEXT_BILL_CYCLE", display_name="News Pro+"),
             period_change=ac.AdvancedCommercePeriodChange(effective="NEXT_BILL_CYCLE", period="P1Y"),
             tax_code="C003-00-1")),
        ("reactivate_subscription",
         AdvancedCommerceSubscriptionReactivateInAppRequest(
             requestInfo=info, transactionId="2000000000000003",
             items=[AdvancedCommerceSubscriptionReactivateItem(SKU="news")], storefront="FRA"),
         ac.AdvancedCommerceSubscriptionReactivate(
             request_info=ours_info, transaction_id="2000000000000003", skus=["news"], storefront="FRA")),
    ]


@pytest.mark.parametrize("kind", ["one_time_charge", "create_subscription", "modify_subscription",
                                  "reactivate_subscription"])
def test_in_app_signature_agrees_with_apples_creator(commerce, kind):
    sim, stub, _ = commerce
    (_, apple_request, ours_request), = [case for case in in_app_cases() if case[0] == kind]
    answer = stub.CreateInAppSignature(ac.CreateInAppSignatureRequest(**{kind: ours_request}), timeout=30)
    ours = verified_claims(sim, answer.jws)
    apples = verified_claims(sim, apples_signature(sim, apple_request))
    assert set(ours) == set(apples) == {"iss", "bid", "aud", "iat", "nonce", "request"}
    for claim in ("iss", "bid", "aud"):
        assert ours[claim] == apples[claim]
    assert ours["nonce"] == answer.nonce and ours["iat"] == answer.issued_at
    assert request_claim(ours) == request_claim(apples)


def test_in_app_signature_refuses_hostile_requests_before_signing(commerce):
    _, stub, _ = commerce
    charge = ac.AdvancedCommerceOneTimeChargeCreate(
        request_info=ac.AdvancedCommerceRequestInfo(request_reference_id="not-a-uuid"), currency="usd",
        tax_code="x" * 300,
        item=ac.AdvancedCommerceOneTimeChargeItem(sku="s" * 129, description="d" * 46, display_name="n", price=-1))
    with pytest.raises(grpc.RpcError) as raised:
        stub.CreateInAppSignature(ac.CreateInAppSignatureRequest(one_time_charge=charge), timeout=30)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    fields = {v.field for v in bad_request(raised.value).field_violations}
    assert fields >= {"one_time_charge.request_info.request_reference_id", "one_time_charge.currency",
                      "one_time_charge.tax_code", "one_time_charge.item.sku", "one_time_charge.item.description",
                      "one_time_charge.item.price"}
    with pytest.raises(grpc.RpcError) as raised:
        stub.CreateInAppSignature(ac.CreateInAppSignatureRequest(), timeout=30)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def details(error):
    return status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"]).details


def bad_request(error):
    violations = error_details_pb2.BadRequest()
    assert any(detail.Unpack(violations) for detail in details(error))
    return violations


def error_info(error):
    info = error_details_pb2.ErrorInfo()
    assert any(detail.Unpack(info) for detail in details(error))
    return info


def writes(sim):
    return requests.get(sim.url + "/simulator/writes", timeout=10).json()["writes"]


def subscriptions(sim):
    customers = sim.index[sim.app["bundleId"]]["Production"]
    return [s["originalTransactionId"] for c in customers for s in c["activeSubscriptions"]]


def write_cases(subscription_ids, purchase_id):
    info = ac.AdvancedCommerceRequestInfo
    return [
        ("CancelSubscription", "cancel", ac.CancelSubscriptionRequest(
            transaction_id=subscription_ids[0], storefront="USA"), {"storefront": "USA"}),
        ("RevokeSubscription", "revoke", ac.RevokeSubscriptionRequest(
            transaction_id=subscription_ids[1], refund_risking_preference=True, refund_type="PRORATED",
            refund_reason="UNSATISFIED_WITH_PURCHASE"),
         {"refundRiskingPreference": True, "refundType": "PRORATED", "refundReason": "UNSATISFIED_WITH_PURCHASE"}),
        ("ChangeSubscriptionPrice", "changePrice", ac.ChangeSubscriptionPriceRequest(
            transaction_id=subscription_ids[2], currency="USD",
            items=[ac.AdvancedCommercePriceChangeItem(sku="news", price=6000, dependent_skus=["sport"])]),
         {"items": [{"SKU": "news", "price": 6000, "dependentSKUs": ["sport"]}], "currency": "USD"}),
        ("ChangeSubscriptionMetadata", "changeMetadata", ac.ChangeSubscriptionMetadataRequest(
            transaction_id=subscription_ids[3],
            request_info=info(consistency_token="token-from-renewal-info"),
            descriptors=ac.AdvancedCommerceDescriptorsChange(effective="IMMEDIATELY", display_name="News 2"),
            items=[ac.AdvancedCommerceMetadataItem(current_sku="news", effective="NEXT_BILL_CYCLE", sku="news2")]),
         {"descriptors": {"effective": "IMMEDIATELY", "displayName": "News 2"},
          "items": [{"currentSKU": "news", "effective": "NEXT_BILL_CYCLE", "SKU": "news2"}]}),
        ("MigrateSubscription", "migrate", ac.MigrateSubscriptionRequest(
            transaction_id=subscription_ids[4], target_product_id="com.example.generic", tax_code="C003-00-1",
            descriptors=transaction_pb2.AdvancedCommerceDescriptors(description="All news", display_name="News"),
            items=[ac.AdvancedCommerceItem(sku="news", description="Daily news", display_name="News")]),
         {"descriptors": {"description": "All news", "displayName": "News"},
          "items": [{"SKU": "news", "description": "Daily news", "displayName": "News"}],
          "targetProductId": "com.example.generic", "taxCode": "C003-00-1"}),
        ("RequestRefund", "../transaction/requestRefund", ac.RequestRefundRequest(
            transaction_id=purchase_id, refund_risking_preference=False, currency="USD",
            items=[ac.AdvancedCommerceRefundItem(sku="book-42", refund_reason="FULFILLMENT_ISSUE", refund_type="CUSTOM",
                                                 revoke=True, refund_amount=wrappers_pb2.Int64Value(value=500))]),
         {"items": [{"SKU": "book-42", "refundReason": "FULFILLMENT_ISSUE", "refundType": "CUSTOM", "revoke": True,
                     "refundAmount": 500}], "refundRiskingPreference": False, "currency": "USD"}),
    ]


def test_every_server_rpc_reaches_apples_path_with_apples_body_and_is_idempotent(commerce):
    sim, stub, verifier = commerce
    ids = subscriptions(sim)
    assert len(ids) >= 5, "the simulator's customers hold too few active subscriptions"
    purchase = sim.index[sim.app["bundleId"]]["Production"][0]["transactionId"]
    for rpc, path, request, expected in write_cases(ids, purchase):
        before = len(writes(sim))
        answer = getattr(stub, rpc)(request, timeout=30)
        reference = answer.request_reference_id
        assert str(uuid.UUID(reference)) == reference, rpc
        sent = writes(sim)[before:]
        assert len(sent) == 1, rpc
        assert sent[0]["method"] == "POST"
        assert sent[0]["path"] == os.path.normpath(f"/advancedCommerce/v1/subscription/{path}/{request.transaction_id}")
        body = json.loads(sent[0]["body"])
        assert body.pop("requestInfo")["requestReferenceId"] == reference
        assert body == expected, rpc
        assert answer.environment == common_pb2.ENVIRONMENT_PRODUCTION
        apple = verifier.verify_and_decode_signed_transaction(answer.signed_transaction_info)
        assert answer.transaction.transaction_id == apple.transactionId
        if rpc == "RequestRefund":
            assert answer.transaction.transaction_id == request.transaction_id
            assert answer.transaction.HasField("revocation_date") and not answer.signed_renewal_info
        else:
            renewal = verifier.verify_and_decode_renewal_info(answer.signed_renewal_info)
            assert answer.renewal_info.original_transaction_id == renewal.originalTransactionId
            assert answer.transaction.original_transaction_id == request.transaction_id
        if rpc in ("CancelSubscription", "RevokeSubscription"):
            assert answer.renewal_info.auto_renew_status == common_pb2.AUTO_RENEW_STATUS_OFF

        # A retry with the reference id of the first answer is the same request: the same answer, one effect.
        retry = type(request)()
        retry.CopyFrom(request)
        retry.request_info.request_reference_id = reference
        again = getattr(stub, rpc)(retry, timeout=30)
        assert again.request_reference_id == reference
        assert again.signed_transaction_info == answer.signed_transaction_info, rpc

        # The same id with another request is Apple's RepeatedRequestReferenceId.
        other = type(request)()
        other.CopyFrom(retry)
        other.storefront = "CAN"
        with pytest.raises(grpc.RpcError) as raised:
            getattr(stub, rpc)(other, timeout=30)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, rpc
        info = error_info(raised.value)
        assert info.reason == "REPEATED_REQUEST_REFERENCE_ID"
        assert info.metadata["apple_error_code"] == "4000097"


def test_server_rpcs_check_inputs_before_apple(commerce):
    sim, stub, _ = commerce
    before = len(writes(sim))
    hostile = [
        ("CancelSubscription", ac.CancelSubscriptionRequest(transaction_id="../../inApps/v1/notifications/test"),
         "transaction_id"),
        ("RevokeSubscription", ac.RevokeSubscriptionRequest(transaction_id="1", refund_type="CUSTOM",
                                                            refund_reason="OTHER"), "refund_type"),
        ("ChangeSubscriptionPrice", ac.ChangeSubscriptionPriceRequest(transaction_id="1"), "items"),
        ("ChangeSubscriptionMetadata", ac.ChangeSubscriptionMetadataRequest(
            transaction_id="1", request_info=ac.AdvancedCommerceRequestInfo(app_account_token="nope")),
         "request_info.app_account_token"),
        ("MigrateSubscription", ac.MigrateSubscriptionRequest(transaction_id="1", tax_code="t", items=[
            ac.AdvancedCommerceItem(sku="s", description="d", display_name="n")] * 101), "items"),
        ("RequestRefund", ac.RequestRefundRequest(transaction_id="1", items=[ac.AdvancedCommerceRefundItem(
            sku="s", refund_reason="BECAUSE", refund_type="FULL")]), "items[0].refund_reason"),
    ]
    for rpc, request, field in hostile:
        with pytest.raises(grpc.RpcError) as raised:
            getattr(stub, rpc)(request, timeout=30)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, rpc
        assert field in {v.field for v in bad_request(raised.value).field_violations}, rpc
    assert len(writes(sim)) == before


def test_apples_errors_keep_their_names(commerce):
    sim, stub, _ = commerce
    with pytest.raises(grpc.RpcError) as raised:
        stub.CancelSubscription(ac.CancelSubscriptionRequest(transaction_id="99999999999999999"), timeout=30)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert error_info(raised.value).reason == "TRANSACTION_ID_NOT_FOUND"
