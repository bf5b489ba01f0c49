import AppStoreClient
import AppStoreDomain
import Foundation
import GRPC
import GatewayFoundation
import ProtoCodec
import SignedData

/// appstore.gateway.v1.AdvancedCommerce: the in-app request signature and the Advanced Commerce API's server
/// endpoints, on the gateway's Apple client (its rate limits, JWTs, retries, environment fallback and verifier).
package struct AdvancedCommerceService: GRPCService {
    /// The service's full name, as reflection names it.
    package static let name = "appstore.gateway.v1.AdvancedCommerce"

    private let api: AppStoreAPIMethods

    init(api: AppStoreAPIMethods) { self.api = api }

    package var methods: [String: MethodHandler] {
        var methods: [String: MethodHandler] = [:]
        func add<Request: AdvancedCommerceWrite>(_ name: String, _ type: Request.Type, _ endpoint: AppleEndpoint) {
            let handler = AppleOperationHandler(
                AppleOperation<Request, AdvancedCommerceResponse>.advancedCommerce(endpoint), client: api.client,
                verifier: api.verifier, clock: api.clock, maxPages: 1, coalescing: api.coalescing, feed: api.feed)
            // Runs on the call's loop, which drives the Apple request too: the task suspends, the loop never waits.
            methods["/\(Self.name)/\(name)"] = .unary(Request.self) {
                request, context throws(GatewayError) -> AdvancedCommerceResponse in
                let remaining = context.remaining
                return try await handler.handle(request, remaining: remaining)
            }
        }
        add("CancelSubscription", CancelSubscriptionRequest.self, .cancelSubscription)
        add("RevokeSubscription", RevokeSubscriptionRequest.self, .revokeSubscription)
        add("ChangeSubscriptionPrice", ChangeSubscriptionPriceRequest.self, .changeSubscriptionPrice)
        add("ChangeSubscriptionMetadata", ChangeSubscriptionMetadataRequest.self, .changeSubscriptionMetadata)
        add("MigrateSubscription", MigrateSubscriptionRequest.self, .migrateSubscription)
        add("RequestRefund", RequestRefundRequest.self, .requestTransactionRefund)
        let signing = InAppSignatureHandler(client: api.client)
        // One ECDSA signature: a Swift task keeps it off the event loop.
        methods["/\(Self.name)/CreateInAppSignature"] = .unary(CreateInAppSignatureRequest.self) {
            request, _ throws(GatewayError) in try signing.sign(request)
        }
        return methods
    }
}

extension AppStoreGatewayService {
    /// The Advanced Commerce service on this service's Apple client and verifier.
    package var advancedCommerce: AdvancedCommerceService { AdvancedCommerceService(api: api) }
}
