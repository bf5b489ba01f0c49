"""Server reflection: grpcio-reflection's client (v1alpha) and a raw v1 call, with no proto files."""
import grpc
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase


def test_reflection_client_lists_and_describes_services(channel):
    database = ProtoReflectionDescriptorDatabase(channel)
    services = set(database.get_services())
    assert {"appstore.gateway.v1.AppStoreGateway", "appstore.gateway.v1.AdvancedCommerce", "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} <= services
    pool = DescriptorPool(database)
    service = pool.FindServiceByName("appstore.gateway.v1.AppStoreGateway")
    names = [m.name for m in service.methods]
    assert names[:3] == ["GetHistory", "StreamNotifications", "VerifyJWS"]
    # The App Store Server API RPCs (issue 18), described down to their messages.
    assert {"GetTransactionInfo", "GetAllSubscriptionStatuses", "LookUpOrderId", "GetRefundHistory",
            "GetAppTransactionInfo", "SendConsumptionInformation", "ExtendSubscriptionRenewalDate",
            "ExtendRenewalDatesForAllActiveSubscribers", "GetStatusOfSubscriptionRenewalDateExtensions",
            "RequestTestNotification", "GetTestNotificationStatus", "SetAppAccountToken", "FinishTransaction",
            "CreatePromotionalOfferSignature", "CreatePromotionalOfferV2Signature",
            "CreateIntroductoryOfferEligibilitySignature", "ExtractTransactionIdFromReceipt"} <= set(names)
    statuses = service.FindMethodByName("GetAllSubscriptionStatuses").output_type
    assert statuses.fields_by_name["data"].message_type.full_name == "appstore.gateway.v1.SubscriptionGroupStatus"
    verify = service.FindMethodByName("VerifyJWS")
    assert verify.input_type.full_name == "appstore.gateway.v1.VerifyJWSRequest"
    assert "jws" in verify.input_type.fields_by_name
    # Dependencies (google/protobuf/timestamp.proto) come along.
    transaction = pool.FindMessageTypeByName("appstore.gateway.v1.Transaction")
    assert transaction.fields_by_name["purchase_date"].message_type.full_name == "google.protobuf.Timestamp"


def test_v1_and_v1alpha_answer_alike_and_unknown_symbols_are_error_responses(channel):
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="no.such.Symbol"),
        reflection_pb2.ServerReflectionRequest(file_by_filename="grpc/health/v1/health.proto"),
    ]
    answers = {}
    for version in ("v1", "v1alpha"):
        call = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
        answers[version] = list(call(iter(requests), timeout=10))
    assert answers["v1"] == answers["v1alpha"]
    listed, missing, health = answers["v1"]
    assert {s.name for s in listed.list_services_response.service} == {
        "appstore.gateway.v1.AppStoreGateway", "appstore.gateway.v1.RetentionMessaging",
        "appstore.gateway.v1.AdvancedCommerce", "appstore.gateway.v1.SubscriptionState", "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection"}
    assert missing.error_response.error_code == 5 and "no.such.Symbol" in missing.error_response.error_message
    assert len(health.file_descriptor_response.file_descriptor_proto) == 1
    assert health.original_request.file_by_filename == "grpc/health/v1/health.proto"
