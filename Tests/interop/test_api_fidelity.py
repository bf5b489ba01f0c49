"""Fidelity of the App Store Server API messages (issue 18): every field Apple's Python library models for these
requests and answers has a field in the typed proto message, and every value of their enums a proto enum value.
Apple's `rawX` attributes (the raw value behind an enum) are covered by an `x_raw` field or by the enum field `x`."""
import re

import attr
import pytest
from appstoreserverlibrary.models import (AppTransactionInfoResponse, CheckTestNotificationResponse, ConsumptionRequest,
                                          DeliveryStatus, ExtendReasonCode, ExtendRenewalDateRequest,
                                          ExtendRenewalDateResponse, LastTransactionsItem,
                                          MassExtendRenewalDateRequest, MassExtendRenewalDateResponse,
                                          MassExtendRenewalDateStatusResponse, OrderLookupResponse, OrderLookupStatus,
                                          RefundHistoryResponse, RefundPreference, SendAttemptItem,
                                          SendTestNotificationResponse, Status, StatusResponse,
                                          SubscriptionGroupIdentifierItem, TransactionInfoResponse,
                                          UpdateAppAccountTokenRequest)

from appstore.gateway.v1 import (common_pb2, consumption_pb2, notification_pb2, refunds_pb2, subscriptions_pb2,
                                 test_notifications_pb2, transaction_info_pb2)

# (Apple's model, the proto message, Apple's name → proto field where the names differ)
PAIRS = [
    (TransactionInfoResponse.TransactionInfoResponse, transaction_info_pb2.GetTransactionInfoResponse, {}),
    (AppTransactionInfoResponse.AppTransactionInfoResponse, transaction_info_pb2.GetAppTransactionInfoResponse, {}),
    (OrderLookupResponse.OrderLookupResponse, transaction_info_pb2.LookUpOrderIdResponse, {}),
    (RefundHistoryResponse.RefundHistoryResponse, refunds_pb2.GetRefundHistoryResponse, {}),
    (StatusResponse.StatusResponse, subscriptions_pb2.GetAllSubscriptionStatusesResponse, {}),
    (SubscriptionGroupIdentifierItem.SubscriptionGroupIdentifierItem, subscriptions_pb2.SubscriptionGroupStatus, {}),
    (LastTransactionsItem.LastTransactionsItem, subscriptions_pb2.LastTransaction, {}),
    (ExtendRenewalDateResponse.ExtendRenewalDateResponse, subscriptions_pb2.ExtendSubscriptionRenewalDateResponse, {}),
    (MassExtendRenewalDateResponse.MassExtendRenewalDateResponse,
     subscriptions_pb2.ExtendRenewalDatesForAllActiveSubscribersResponse, {}),
    (MassExtendRenewalDateStatusResponse.MassExtendRenewalDateStatusResponse,
     subscriptions_pb2.GetStatusOfSubscriptionRenewalDateExtensionsResponse, {}),
    (SendTestNotificationResponse.SendTestNotificationResponse, test_notifications_pb2.RequestTestNotificationResponse,
     {}),
    (CheckTestNotificationResponse.CheckTestNotificationResponse,
     test_notifications_pb2.GetTestNotificationStatusResponse, {}),
    (SendAttemptItem.SendAttemptItem, notification_pb2.SendAttempt, {"sendAttemptResult": "result"}),
    (ConsumptionRequest.ConsumptionRequest, consumption_pb2.SendConsumptionInformationRequest, {}),
    (ExtendRenewalDateRequest.ExtendRenewalDateRequest, subscriptions_pb2.ExtendSubscriptionRenewalDateRequest, {}),
    (MassExtendRenewalDateRequest.MassExtendRenewalDateRequest,
     subscriptions_pb2.ExtendRenewalDatesForAllActiveSubscribersRequest, {}),
    (UpdateAppAccountTokenRequest.UpdateAppAccountTokenRequest, transaction_info_pb2.SetAppAccountTokenRequest, {}),
]

# (Apple's enum, the proto enum, its value-name prefix)
ENUMS = [
    (DeliveryStatus.DeliveryStatus, consumption_pb2.DeliveryStatus, "DELIVERY_STATUS_"),
    (RefundPreference.RefundPreference, consumption_pb2.RefundPreference, "REFUND_PREFERENCE_"),
    (ExtendReasonCode.ExtendReasonCode, subscriptions_pb2.ExtendReasonCode, "EXTEND_REASON_CODE_"),
    (OrderLookupStatus.OrderLookupStatus, transaction_info_pb2.OrderLookupStatus, "ORDER_LOOKUP_STATUS_"),
    (Status.Status, common_pb2.SubscriptionStatus, "SUBSCRIPTION_STATUS_"),
]


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize("model, message, renames", PAIRS, ids=lambda p: getattr(p, "__name__", ""))
def test_every_field_apple_models_is_in_the_proto(model, message, renames):
    fields = set(message.DESCRIPTOR.fields_by_name)
    missing = []
    for name in (a.name for a in attr.fields(model)):
        if name.startswith("raw") and name[3:4].isupper():
            main = name[3].lower() + name[4:]
            covered = snake(renames.get(main, main)) + "_raw" in fields or snake(renames.get(main, main)) in fields
        else:
            covered = snake(renames.get(name, name)) in fields
        if not covered:
            missing.append(name)
    assert not missing, f"{message.DESCRIPTOR.name} lacks {missing} of Apple's {model.__name__}"


@pytest.mark.parametrize("apple, proto, prefix", ENUMS, ids=lambda p: getattr(p, "__name__", ""))
def test_every_enum_value_apple_models_is_in_the_proto(apple, proto, prefix):
    names = set(proto.keys())
    missing = [value.name for value in apple if prefix + value.name not in names]
    assert not missing, f"{prefix}* lacks {missing}"
