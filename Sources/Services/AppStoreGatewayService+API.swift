import AppStoreClient
import AppStoreDomain
import GRPC
import GatewayFoundation
import ProtoCodec
import SignedData

/// The RPCs over the rest of Apple's App Store Server API and the offer signatures: one `AppleOperationHandler`
/// per endpoint, each registered the same way.
struct AppStoreAPIMethods: Sendable {
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let clock: any GatewayClock
    let maxPages: Int
    let maxResponseBytes: Int
    /// Where the reads that joined an identical one in flight count.
    let coalescing: CoalescingMetrics
    /// Where the transactions and renewal infos the handlers verify for their callers go: the subscription state
    /// (nil: the gateway keeps none).
    var feed: AppleReadFeed? = nil

    /// The methods by gRPC path.
    func methods(service: String) -> [String: MethodHandler] {
        var methods: [String: MethodHandler] = [:]
        func add<Request, Response>(_ name: String, _ operation: AppleOperation<Request, Response>) {
            let handler = AppleOperationHandler(
                operation, client: client, verifier: verifier, clock: clock, maxPages: maxPages,
                maxResponseBytes: maxResponseBytes, coalescing: coalescing, feed: feed)
            // Runs on the call's loop, which drives the Apple request too: the task suspends, the loop never waits.
            methods["/\(service)/\(name)"] = .unary(Request.self) { request, context throws(GatewayError) -> Response in
                let remaining = context.remaining
                return try await handler.handle(request, remaining: remaining)
            }
        }
        add("GetTransactionInfo", .getTransactionInfo)
        add("GetAllSubscriptionStatuses", .getAllSubscriptionStatuses)
        add("LookUpOrderId", .lookUpOrderId)
        add("GetRefundHistory", .getRefundHistory)
        add("GetAppTransactionInfo", .getAppTransactionInfo)
        add("SendConsumptionInformation", .sendConsumptionInformation)
        add("ExtendSubscriptionRenewalDate", .extendSubscriptionRenewalDate)
        add("ExtendRenewalDatesForAllActiveSubscribers", .extendRenewalDatesForAllActiveSubscribers)
        add("GetStatusOfSubscriptionRenewalDateExtensions", .getStatusOfSubscriptionRenewalDateExtensions)
        add("RequestTestNotification", .requestTestNotification)
        add("GetTestNotificationStatus", .getTestNotificationStatus)
        add("SetAppAccountToken", .setAppAccountToken)
        add("FinishTransaction", .finishTransaction)

        let signing = OfferSigningHandler(client: client)
        // One ECDSA signature (tens of microseconds, like VerifyJWS's): on the call's loop.
        methods["/\(service)/CreatePromotionalOfferSignature"] = .unary(CreatePromotionalOfferSignatureRequest.self) {
            request, _ throws(GatewayError) in try signing.promotionalOffer(request)
        }
        methods["/\(service)/CreatePromotionalOfferV2Signature"] = .unary(
            CreatePromotionalOfferV2SignatureRequest.self
        ) { request, _ throws(GatewayError) in try signing.promotionalOfferV2(request)
        }
        methods["/\(service)/CreateIntroductoryOfferEligibilitySignature"] = .unary(
            CreateIntroductoryOfferEligibilitySignatureRequest.self
        ) { request, _ throws(GatewayError) in try signing.introductoryOfferEligibility(request)
        }
        // A receipt of up to 4 MB: parsed on the call's loop when small, off it (one hop each way) when not.
        methods["/\(service)/ExtractTransactionIdFromReceipt"] = .unary(ExtractTransactionIdFromReceiptRequest.self) {
            request, _ throws(GatewayError) in
            guard ReceiptHandler.holdsTheLoop(request) else { return try ReceiptHandler.answer(request) }
            return try await offLoop { () throws(GatewayError) in try ReceiptHandler.answer(request) }
        }
        return methods
    }
}
