import GRPC
import ProtoCodec

/// The RPCs over the rest of Apple's App Store Server API and the offer signatures, for the `fuzz-api-handlers`
/// target and the tests replaying its corpus: an input's first byte picks the method (modulo their number), the
/// rest is the serialized request.
extension ServiceHarness {
    /// One fuzzed method: its gRPC path and whether bytes decode as its response.
    package struct APIMethod: Sendable {
        package var path: String
        var decodes: @Sendable ([UInt8]) -> Bool
    }

    private static func method<Response: ProtoMessage>(
        _ name: String, _ response: Response.Type, service: String = "appstore.gateway.v1.AppStoreGateway"
    ) -> APIMethod {
        APIMethod(path: "/\(service)/\(name)") { bytes in
            (try? Response(serializedBytes: bytes)) != nil
        }
    }

    /// The methods, in the order the first input byte selects them (append only: the corpus depends on it).
    package static let apiMethods: [APIMethod] = [
        method("GetTransactionInfo", GetTransactionInfoResponse.self),
        method("GetAllSubscriptionStatuses", GetAllSubscriptionStatusesResponse.self),
        method("LookUpOrderId", LookUpOrderIdResponse.self),
        method("GetRefundHistory", GetRefundHistoryResponse.self),
        method("GetAppTransactionInfo", GetAppTransactionInfoResponse.self),
        method("SendConsumptionInformation", SendConsumptionInformationResponse.self),
        method("ExtendSubscriptionRenewalDate", ExtendSubscriptionRenewalDateResponse.self),
        method("ExtendRenewalDatesForAllActiveSubscribers", ExtendRenewalDatesForAllActiveSubscribersResponse.self),
        method(
            "GetStatusOfSubscriptionRenewalDateExtensions", GetStatusOfSubscriptionRenewalDateExtensionsResponse.self),
        method("RequestTestNotification", RequestTestNotificationResponse.self),
        method("GetTestNotificationStatus", GetTestNotificationStatusResponse.self),
        method("SetAppAccountToken", SetAppAccountTokenResponse.self),
        method("FinishTransaction", FinishTransactionResponse.self),
        method("CreatePromotionalOfferSignature", CreatePromotionalOfferSignatureResponse.self),
        method("CreatePromotionalOfferV2Signature", SignedJWSResponse.self),
        method("CreateIntroductoryOfferEligibilitySignature", SignedJWSResponse.self),
        method("ExtractTransactionIdFromReceipt", ExtractTransactionIdFromReceiptResponse.self),
        method("GetSubscription", GetSubscriptionResponse.self, service: "appstore.gateway.v1.SubscriptionState"),
        method("GetCustomer", GetCustomerResponse.self, service: "appstore.gateway.v1.SubscriptionState"),
        method(
            "ApplySignedTransaction", ApplySignedTransactionResponse.self,
            service: "appstore.gateway.v1.SubscriptionState"),
        method(
            "RefreshSubscription", RefreshSubscriptionResponse.self, service: "appstore.gateway.v1.SubscriptionState"),
    ]

    /// Runs a `fuzz-api-handlers` input and checks the answer as `fuzz(_:input:)` does: no INTERNAL or UNKNOWN
    /// status, and an OK answer decodes as the method's response.
    @discardableResult
    package func fuzzAPI(input: [UInt8]) -> Outcome {
        Self.blocking { await self.fuzzAPI(input: input) }
    }

    /// `fuzzAPI(input:)` for tests, awaited rather than blocking a thread.
    @discardableResult
    package func fuzzAPI(input: [UInt8]) async -> Outcome {
        guard let selector = input.first else { return Outcome(status: .ok, responses: []) }
        let method = Self.apiMethods[Int(selector) % Self.apiMethods.count]
        let outcome = await call(method.path, request: Array(input.dropFirst()))
        precondition(
            outcome.status.code != .internal && outcome.status.code != .unknown,
            "\(method.path) answered \(outcome.status) to a \(input.count)-byte input")
        for response in outcome.responses {
            precondition(method.decodes(response), "\(method.path) sent a response that does not decode")
        }
        return outcome
    }
}
