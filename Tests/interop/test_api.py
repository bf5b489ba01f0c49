"""The App Store Server API RPCs (issue 18) end to end: grpcio → gateway → the simulator, each answer checked
against what Apple's own Python client (app-store-server-library) gets from the same simulator, each write checked
against the exact request Apple's client sends (as the simulator recorded it), and the offer signatures checked with
Apple's documented verification."""
import base64
import json
import tempfile
import time
import uuid

import grpc
import jwt
import pytest
from appstoreserverlibrary.api_client import APIException
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.ExtendReasonCode import ExtendReasonCode
from appstoreserverlibrary.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserverlibrary.models.MassExtendRenewalDateRequest import MassExtendRenewalDateRequest
from appstoreserverlibrary.models.RefundPreference import RefundPreference
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.models.UpdateAppAccountTokenRequest import UpdateAppAccountTokenRequest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from google.rpc import error_details_pb2, status_pb2

from appstore.gateway.v1 import (common_pb2, consumption_pb2, gateway_pb2_grpc, refunds_pb2, signing_pb2,
                                 subscriptions_pb2, test_notifications_pb2, transaction_info_pb2)
from conftest import Gateway
from test_simulator import Simulator

PRODUCTION = common_pb2.ENVIRONMENT_PRODUCTION


@pytest.fixture(scope="module")
def api():
    directory = tempfile.mkdtemp(prefix="api-simulator-")
    import os
    os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(directory, "tls", "ca.pem")
    sim = Simulator(directory)
    gw = Gateway(["--config", os.path.join(directory, "gateway.yaml")])
    channel = grpc.insecure_channel(gw.address)
    yield sim, gateway_pb2_grpc.AppStoreGatewayStub(channel), sim.client(Environment.PRODUCTION), \
        sim.verifier(Environment.PRODUCTION)
    channel.close()
    gw.stop()
    sim.stop()
    os.environ.pop("REQUESTS_CA_BUNDLE", None)


def production(sim):
    return [c for c in sim.index[sim.app["bundleId"]]["Production"] if c["transactionId"]]


def writes(sim):
    import requests

    return requests.get(sim.url + "/simulator/writes", timeout=10).json()["writes"]


def error_info(error):
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    for detail in status.details:
        if detail.Unpack(info):
            return info
    raise AssertionError("no ErrorInfo in the status details")


def same_transaction(typed, apple):
    """The gateway's typed Transaction carries what Apple's library decoded (signedDate aside: each call signs anew)."""
    assert typed.transaction_id == apple.transactionId
    assert typed.original_transaction_id == apple.originalTransactionId
    assert typed.product_id == apple.productId
    assert typed.bundle_id == apple.bundleId
    assert typed.purchase_date.ToMilliseconds() == apple.purchaseDate
    assert typed.quantity == apple.quantity
    assert typed.storefront == apple.storefront
    assert typed.price_milliunits == (apple.price or 0)
    assert typed.app_account_token == (apple.appAccountToken or "")
    revoked = typed.revocation_date.ToMilliseconds() if typed.HasField("revocation_date") else None
    assert revoked == apple.revocationDate
    assert json.loads(typed.raw_json)["transactionId"] == apple.transactionId


def payload(jws):
    """A JWS payload as JSON, signedDate left out (each answer is signed anew)."""
    part = jws.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    decoded.pop("signedDate", None)
    return decoded


def test_get_transaction_info_equals_apple_client(api):
    sim, stub, client, verifier = api
    customer = production(sim)[0]
    answer = stub.GetTransactionInfo(transaction_info_pb2.GetTransactionInfoRequest(
        transaction_id=customer["transactionId"]), timeout=30)
    apple_jws = client.get_transaction_info(customer["transactionId"]).signedTransactionInfo
    apple = verifier.verify_and_decode_signed_transaction(apple_jws)
    assert answer.environment == PRODUCTION
    same_transaction(answer.transaction, apple)
    raw = json.loads(answer.transaction.raw_json)
    raw.pop("signedDate", None)
    assert raw == payload(apple_jws)  # every field Apple's client decodes, the same
    same_transaction(answer.transaction, verifier.verify_and_decode_signed_transaction(answer.signed_transaction_info))


def test_get_all_subscription_statuses_equals_apple_client_with_status_filter(api):
    sim, stub, client, verifier = api
    customer = next(c for c in production(sim) if c["activeSubscriptions"])
    answer = stub.GetAllSubscriptionStatuses(subscriptions_pb2.GetAllSubscriptionStatusesRequest(
        transaction_id=customer["transactionId"], status=[common_pb2.SUBSCRIPTION_STATUS_ACTIVE]), timeout=30)
    apple = client.get_all_subscription_statuses(customer["transactionId"], [Status.ACTIVE])
    assert answer.bundle_id == apple.bundleId and answer.app_apple_id == apple.appAppleId
    assert [g.subscription_group_identifier for g in answer.data] == [g.subscriptionGroupIdentifier for g in apple.data]
    for group, apple_group in zip(answer.data, apple.data):
        assert len(group.last_transactions) == len(apple_group.lastTransactions)
        for last, apple_last in zip(group.last_transactions, apple_group.lastTransactions):
            assert last.status == common_pb2.SUBSCRIPTION_STATUS_ACTIVE and last.status_raw == apple_last.rawStatus
            assert last.original_transaction_id == apple_last.originalTransactionId
            same_transaction(last.transaction, verifier.verify_and_decode_signed_transaction(
                apple_last.signedTransactionInfo))
            renewal = verifier.verify_and_decode_renewal_info(apple_last.signedRenewalInfo)
            assert last.renewal_info.auto_renew_product_id == renewal.autoRenewProductId
            assert last.renewal_info.original_transaction_id == renewal.originalTransactionId
            renewal_raw = json.loads(last.renewal_info.raw_json)
            renewal_raw.pop("signedDate", None)
            assert renewal_raw == payload(apple_last.signedRenewalInfo)
    active = {s["originalTransactionId"] for s in customer["activeSubscriptions"]}
    assert {t.original_transaction_id for g in answer.data for t in g.last_transactions} == active


def test_look_up_order_id_equals_apple_client(api):
    sim, stub, client, verifier = api
    customer = production(sim)[0]
    answer = stub.LookUpOrderId(transaction_info_pb2.LookUpOrderIdRequest(order_id=customer["orderId"]), timeout=30)
    apple = client.look_up_order_id(customer["orderId"])
    assert answer.status == transaction_info_pb2.ORDER_LOOKUP_STATUS_VALID and apple.rawStatus == answer.status_raw == 0
    assert [t.transaction_id for t in answer.transactions] == [
        verifier.verify_and_decode_signed_transaction(s).transactionId for s in apple.signedTransactions]
    unknown = stub.LookUpOrderId(transaction_info_pb2.LookUpOrderIdRequest(order_id="MTNOSUCHORDER1"), timeout=30)
    assert unknown.status == transaction_info_pb2.ORDER_LOOKUP_STATUS_INVALID and not unknown.transactions
    assert client.look_up_order_id("MTNOSUCHORDER1").rawStatus == 1


def test_get_refund_history_all_pages_equals_apple_client_paging(api):
    sim, stub, client, verifier = api
    customer = max(production(sim), key=lambda c: c["refunds"])
    assert customer["refunds"] > 0, "the seed gives some customer a refund"
    answer = stub.GetRefundHistory(refunds_pb2.GetRefundHistoryRequest(
        transaction_id=customer["transactionId"], all_pages=True), timeout=30)
    revision, apple_ids = None, []
    while True:
        page = client.get_refund_history(customer["transactionId"], revision)
        apple_ids += [verifier.verify_and_decode_signed_transaction(s).transactionId for s in page.signedTransactions]
        if not page.hasMore:
            break
        revision = page.revision
    assert [t.transaction_id for t in answer.transactions] == apple_ids
    assert len(apple_ids) == customer["refunds"] and not answer.has_more
    assert all(t.HasField("revocation_date") for t in answer.transactions)


def test_get_app_transaction_info_equals_apple_client(api):
    sim, stub, client, verifier = api
    customer = production(sim)[0]
    answer = stub.GetAppTransactionInfo(transaction_info_pb2.GetAppTransactionInfoRequest(
        transaction_id=customer["transactionId"]), timeout=30)
    apple = verifier.verify_and_decode_app_transaction(
        client.get_app_transaction_info(customer["transactionId"]).signedAppTransactionInfo)
    typed = answer.app_transaction
    ours, apples = json.loads(typed.raw_json), payload(client.get_app_transaction_info(
        customer["transactionId"]).signedAppTransactionInfo)
    for moving in ("signedDate", "receiptCreationDate"):  # stamped at each answer
        ours.pop(moving, None)
        apples.pop(moving, None)
    assert ours == apples
    assert typed.app_transaction_id == apple.appTransactionId == customer["appTransactionId"]
    assert typed.bundle_id == apple.bundleId and typed.app_apple_id == apple.appAppleId
    assert typed.original_purchase_date.ToMilliseconds() == apple.originalPurchaseDate
    assert typed.original_application_version == apple.originalApplicationVersion
    assert typed.receipt_type == PRODUCTION and typed.original_platform == common_pb2.ORIGINAL_PLATFORM_IOS


def last_write(sim, endpoint):
    return [w for w in writes(sim) if w["endpoint"] == endpoint][-1]


def test_send_consumption_information_sends_apples_exact_request(api):
    sim, stub, client, _ = api
    transaction_id = production(sim)[0]["transactionId"]
    stub.SendConsumptionInformation(consumption_pb2.SendConsumptionInformationRequest(
        transaction_id=transaction_id, customer_consented=True, sample_content_provided=False,
        delivery_status=consumption_pb2.DELIVERY_STATUS_DELIVERED, consumption_percentage=25000,
        refund_preference=consumption_pb2.REFUND_PREFERENCE_GRANT_PRORATED), timeout=30)
    ours = last_write(sim, "sendConsumptionInformation")
    client.send_consumption_information(transaction_id, ConsumptionRequest(
        customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
        consumptionPercentage=25000, refundPreference=RefundPreference.GRANT_PRORATED))
    apples = last_write(sim, "sendConsumptionInformation")
    assert (ours["method"], ours["path"]) == (apples["method"], apples["path"]) == (
        "PUT", f"/inApps/v2/transactions/consumption/{transaction_id}")
    assert json.loads(ours["body"]) == json.loads(apples["body"])
    assert ours["contentType"] == "application/json"
    # Apple's refusal (no consent) is INVALID_ARGUMENT named after Apple's error.
    with pytest.raises(grpc.RpcError) as info:
        stub.SendConsumptionInformation(consumption_pb2.SendConsumptionInformationRequest(
            transaction_id=transaction_id, customer_consented=False,
            delivery_status=consumption_pb2.DELIVERY_STATUS_DELIVERED), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(info.value).metadata["apple_error_code"] == "4000035"


def test_extend_subscription_renewal_date_sends_apples_exact_request(api):
    sim, stub, client, _ = api
    subscription = next(c for c in production(sim) if c["activeSubscriptions"])["activeSubscriptions"][0]
    original = subscription["originalTransactionId"]
    identifier = str(uuid.uuid4())
    answer = stub.ExtendSubscriptionRenewalDate(subscriptions_pb2.ExtendSubscriptionRenewalDateRequest(
        transaction_id=original, extend_by_days=7,
        extend_reason_code=subscriptions_pb2.EXTEND_REASON_CODE_CUSTOMER_SATISFACTION,
        request_identifier=identifier), timeout=30)
    assert answer.success and answer.original_transaction_id == original and answer.request_identifier == identifier
    ours = last_write(sim, "extendSubscriptionRenewalDate")
    apple = client.extend_subscription_renewal_date(original, ExtendRenewalDateRequest(
        extendByDays=7, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION, requestIdentifier=identifier))
    apples = last_write(sim, "extendSubscriptionRenewalDate")
    assert ours["path"] == apples["path"] == f"/inApps/v1/subscriptions/extend/{original}"
    assert json.loads(ours["body"]) == json.loads(apples["body"])
    assert apple.effectiveDate == answer.effective_date.ToMilliseconds() + 7 * 86_400_000
    generated = stub.ExtendSubscriptionRenewalDate(subscriptions_pb2.ExtendSubscriptionRenewalDateRequest(
        transaction_id=original, extend_by_days=1), timeout=30)
    assert uuid.UUID(generated.request_identifier)
    with pytest.raises(grpc.RpcError) as info:
        stub.ExtendSubscriptionRenewalDate(subscriptions_pb2.ExtendSubscriptionRenewalDateRequest(
            transaction_id=original, extend_by_days=91), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_mass_extension_and_its_status_equal_apple_client(api):
    sim, stub, client, _ = api
    product = next(c for c in production(sim) if c["activeSubscriptions"])["activeSubscriptions"][0]["productId"]
    identifier = str(uuid.uuid4())
    answer = stub.ExtendRenewalDatesForAllActiveSubscribers(
        subscriptions_pb2.ExtendRenewalDatesForAllActiveSubscribersRequest(
            extend_by_days=3, extend_reason_code=subscriptions_pb2.EXTEND_REASON_CODE_SERVICE_ISSUE_OR_OUTAGE,
            request_identifier=identifier, product_id=product, storefront_country_codes=["USA", "FRA"]), timeout=30)
    assert answer.request_identifier == identifier
    ours = last_write(sim, "extendRenewalDatesForAllActiveSubscribers")
    time.sleep(1.1)  # Apple allows these endpoints once a second, and so does the simulator
    client.extend_renewal_date_for_all_active_subscribers(MassExtendRenewalDateRequest(
        extendByDays=3, extendReasonCode=ExtendReasonCode.SERVICE_ISSUE_OR_OUTAGE, requestIdentifier=identifier,
        productId=product, storefrontCountryCodes=["USA", "FRA"]))
    apples = last_write(sim, "extendRenewalDatesForAllActiveSubscribers")
    assert (ours["method"], ours["path"]) == (apples["method"], apples["path"])
    assert json.loads(ours["body"]) == json.loads(apples["body"])
    status = stub.GetStatusOfSubscriptionRenewalDateExtensions(
        subscriptions_pb2.GetStatusOfSubscriptionRenewalDateExtensionsRequest(
            product_id=product, request_identifier=identifier), timeout=30)
    time.sleep(1.1)
    apple = client.get_status_of_subscription_renewal_date_extensions(identifier, product)
    assert status.request_identifier == apple.requestIdentifier == identifier
    assert status.complete == apple.complete and status.succeeded_count == apple.succeededCount
    assert status.complete_date.ToMilliseconds() == apple.completeDate
    time.sleep(1.1)
    with pytest.raises(grpc.RpcError) as info:
        stub.GetStatusOfSubscriptionRenewalDateExtensions(
            subscriptions_pb2.GetStatusOfSubscriptionRenewalDateExtensionsRequest(
                product_id=product, request_identifier=str(uuid.uuid4())), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_test_notification_round_trip_equals_apple_client(api):
    sim, stub, client, verifier = api
    requested = stub.RequestTestNotification(test_notifications_pb2.RequestTestNotificationRequest(), timeout=30)
    assert requested.environment == PRODUCTION and requested.test_notification_token
    assert last_write(sim, "requestTestNotification")["path"] == "/inApps/v1/notifications/test"
    status = stub.GetTestNotificationStatus(test_notifications_pb2.GetTestNotificationStatusRequest(
        test_notification_token=requested.test_notification_token, environment=requested.environment), timeout=30)
    time.sleep(1.1)  # Apple allows these endpoints once a second, and so does the simulator
    apple = client.get_test_notification_status(requested.test_notification_token)
    decoded = verifier.verify_and_decode_notification(apple.signedPayload)
    assert status.notification.notification_uuid == decoded.notificationUUID
    assert status.notification.notification_type == common_pb2.NOTIFICATION_TYPE_TEST
    assert [a.result_raw for a in status.send_attempts] == [a.rawSendAttemptResult for a in apple.sendAttempts]
    with pytest.raises(grpc.RpcError) as info:
        stub.GetTestNotificationStatus(test_notifications_pb2.GetTestNotificationStatusRequest(
            test_notification_token="../../history"), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_set_app_account_token_sends_apples_request_and_takes_effect(api):
    sim, stub, client, _ = api
    customer = production(sim)[1]
    original = customer["transactionId"]
    token = str(uuid.uuid4())
    stub.SetAppAccountToken(transaction_info_pb2.SetAppAccountTokenRequest(
        transaction_id=original, app_account_token=token), timeout=30)
    ours = last_write(sim, "setAppAccountToken")
    client.set_app_account_token(original, UpdateAppAccountTokenRequest(appAccountToken=token))
    apples = last_write(sim, "setAppAccountToken")
    assert (ours["method"], ours["path"]) == (apples["method"], apples["path"]) == (
        "PUT", f"/inApps/v1/transactions/{original}/appAccountToken")
    assert json.loads(ours["body"]) == json.loads(apples["body"])
    info = stub.GetTransactionInfo(transaction_info_pb2.GetTransactionInfoRequest(transaction_id=original), timeout=30)
    assert info.transaction.app_account_token == token
    with pytest.raises(grpc.RpcError) as refused:
        stub.SetAppAccountToken(transaction_info_pb2.SetAppAccountTokenRequest(
            transaction_id=original, app_account_token="not-a-uuid"), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_finish_transaction_and_its_errors(api):
    sim, stub, client, _ = api
    transaction_id = production(sim)[2]["transactionId"]
    answer = stub.FinishTransaction(transaction_info_pb2.FinishTransactionRequest(
        transaction_id=transaction_id), timeout=30)
    assert answer.environment == PRODUCTION
    ours = last_write(sim, "finishTransaction")
    client.finish_transaction(transaction_id)
    apples = last_write(sim, "finishTransaction")
    assert (ours["method"], ours["path"]) == (apples["method"], apples["path"])
    with pytest.raises(grpc.RpcError) as info:
        stub.FinishTransaction(transaction_info_pb2.FinishTransactionRequest(
            transaction_id="999999999999"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(APIException):
        client.finish_transaction("999999999999")


def app_public_key(sim):
    key = serialization.load_pem_private_key(open(sim.app["privateKeyFile"], "rb").read(), password=None)
    return key.public_key()


def test_promotional_offer_signature_verifies_by_apples_procedure(api):
    sim, stub, _, _ = api
    nonce = str(uuid.uuid4()).upper()
    answer = stub.CreatePromotionalOfferSignature(signing_pb2.CreatePromotionalOfferSignatureRequest(
        product_id="com.example.monthly", offer_id="WINBACK50", application_username="User-42", nonce=nonce,
        timestamp=1_700_000_000_000), timeout=30)
    assert answer.key_id == sim.app["keyId"] and answer.nonce == nonce.lower()
    # The payload Apple's PromotionalOfferSignatureCreator signs, verified with the key's public half.
    payload = "\u2063".join([sim.app["bundleId"], sim.app["keyId"], "com.example.monthly", "WINBACK50", "user-42",
                             nonce.lower(), "1700000000000"])
    app_public_key(sim).verify(base64.b64decode(answer.signature), payload.encode(), ec.ECDSA(hashes.SHA256()))
    fresh = stub.CreatePromotionalOfferSignature(signing_pb2.CreatePromotionalOfferSignatureRequest(
        product_id="com.example.monthly", offer_id="WINBACK50"), timeout=30)
    assert uuid.UUID(fresh.nonce) and abs(fresh.timestamp - time.time() * 1000) < 60_000


def decode_jws(sim, token, audience):
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and header["kid"] == sim.app["keyId"]
    return jwt.decode(token, app_public_key(sim), algorithms=["ES256"], audience=audience)


def test_promotional_offer_v2_jws_has_apples_claims(api):
    from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator

    sim, stub, _, _ = api
    answer = stub.CreatePromotionalOfferV2Signature(signing_pb2.CreatePromotionalOfferV2SignatureRequest(
        product_id="com.example.monthly", offer_identifier="WINBACK50", transaction_id="2000000123456789"), timeout=30)
    ours = decode_jws(sim, answer.jws, "promotional-offer")
    key = open(sim.app["privateKeyFile"], "rb").read()
    apples = decode_jws(sim, PromotionalOfferV2SignatureCreator(
        key, sim.app["keyId"], sim.app["issuerId"], sim.app["bundleId"]).create_signature(
        "com.example.monthly", "WINBACK50", "2000000123456789"), "promotional-offer")
    assert set(ours) == set(apples)
    for claim in ("iss", "bid", "aud", "productId", "offerIdentifier", "transactionId"):
        assert ours[claim] == apples[claim]
    assert ours["nonce"] == answer.nonce and ours["iat"] == answer.issued_at
    bare = decode_jws(sim, stub.CreatePromotionalOfferV2Signature(signing_pb2.CreatePromotionalOfferV2SignatureRequest(
        product_id="p", offer_identifier="o"), timeout=30).jws, "promotional-offer")
    assert "transactionId" not in bare


def test_introductory_offer_eligibility_jws_has_apples_claims(api):
    from appstoreserverlibrary.jws_signature_creator import IntroductoryOfferEligibilitySignatureCreator

    sim, stub, _, _ = api
    answer = stub.CreateIntroductoryOfferEligibilitySignature(
        signing_pb2.CreateIntroductoryOfferEligibilitySignatureRequest(
            product_id="com.example.monthly", allow_introductory_offer=False, transaction_id="2000000123456789"),
        timeout=30)
    ours = decode_jws(sim, answer.jws, "introductory-offer-eligibility")
    key = open(sim.app["privateKeyFile"], "rb").read()
    apples = decode_jws(sim, IntroductoryOfferEligibilitySignatureCreator(
        key, sim.app["keyId"], sim.app["issuerId"], sim.app["bundleId"]).create_signature(
        "com.example.monthly", False, "2000000123456789"), "introductory-offer-eligibility")
    assert set(ours) == set(apples)
    for claim in ("iss", "bid", "aud", "productId", "allowIntroductoryOffer", "transactionId"):
        assert ours[claim] == apples[claim]
    with pytest.raises(grpc.RpcError) as info:
        stub.CreateIntroductoryOfferEligibilitySignature(
            signing_pb2.CreateIntroductoryOfferEligibilitySignatureRequest(product_id="p"), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_reads_fall_back_to_sandbox_and_hostile_ids_are_refused(api):
    sim, stub, _, _ = api
    sandbox = [c for c in sim.index[sim.app["bundleId"]]["Sandbox"] if c["transactionId"]][0]
    answer = stub.GetTransactionInfo(transaction_info_pb2.GetTransactionInfoRequest(
        transaction_id=sandbox["transactionId"]), timeout=30)
    assert answer.environment == common_pb2.ENVIRONMENT_SANDBOX
    for bad in ("..", "1/2", "12a", "1" * 21):
        with pytest.raises(grpc.RpcError) as info:
            stub.GetTransactionInfo(transaction_info_pb2.GetTransactionInfoRequest(transaction_id=bad), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Production answers 4040005 (OriginalTransactionIdNotFound) for a sandbox purchase: auto asks sandbox next,
    # which extends it or refuses it on its own terms.
    try:
        extended = stub.ExtendSubscriptionRenewalDate(subscriptions_pb2.ExtendSubscriptionRenewalDateRequest(
            transaction_id=sandbox["transactionId"], extend_by_days=1), timeout=30)
        assert extended.environment == common_pb2.ENVIRONMENT_SANDBOX
    except grpc.RpcError as error:
        metadata = error_info(error).metadata
        assert metadata.get("environments_tried") == "production,sandbox" or metadata["environment"] == "sandbox"
    with pytest.raises(grpc.RpcError) as info:
        stub.LookUpOrderId(transaction_info_pb2.LookUpOrderIdRequest(order_id="MT/../x"), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
