import AppStoreClient
import AppStoreDomain
import GRPC
import GatewayFoundation
import Metrics
import ProtoCodec
import SignedData

/// appstore.gateway.v1.RetentionMessaging: Apple's Retention Messaging API, one RPC per endpoint. Each runs on the
/// one call path of every Apple call (`AppleOperationHandler`): the caller's `app` authorized, the request checked,
/// Apple's rate limits, JWT, retries (writes only where Apple's semantics allow, `AppleEndpoint.isIdempotent`),
/// environment choice, deadlines and error mapping; identical reads share one upstream call.
package struct RetentionMessagingService: GRPCService {
    /// The service's full name, as health checks and reflection name it.
    package static let name = "appstore.gateway.v1.RetentionMessaging"

    private let client: AppStoreAPIClient
    private let verifier: SignedDataVerifier
    private let clock: any GatewayClock
    private let coalescing: CoalescingMetrics

    /// A service calling Apple through `client` (the gateway's, so the rate budgets are shared); reads that share
    /// an identical one in flight count in `coalescing`.
    package init(
        client: AppStoreAPIClient, verifier: SignedDataVerifier, clock: any GatewayClock = SystemClock(),
        coalescing: CoalescingMetrics = CoalescingMetrics(registry: MetricsRegistry())
    ) {
        self.client = client
        self.verifier = verifier
        self.clock = clock
        self.coalescing = coalescing
    }

    package var methods: [String: MethodHandler] {
        var methods: [String: MethodHandler] = [:]
        func add<Request, Response>(_ name: String, _ operation: AppleOperation<Request, Response>) {
            let handler = AppleOperationHandler(
                operation, client: client, verifier: verifier, clock: clock, maxPages: 1, coalescing: coalescing)
            // Runs on the call's loop, which drives the Apple request too: the task suspends, the loop never waits.
            methods["/\(Self.name)/\(name)"] = .unary(Request.self) {
                request, context throws(GatewayError) -> Response in
                let remaining = context.remaining
                return try await handler.handle(request, remaining: remaining)
            }
        }
        add("UploadImage", .uploadImage)
        add("DeleteImage", .deleteImage)
        add("GetImageList", .getImageList)
        add("UploadMessage", .uploadMessage)
        add("DeleteMessage", .deleteMessage)
        add("GetMessageList", .getMessageList)
        add("ConfigureDefaultMessage", .configureDefaultMessage)
        add("DeleteDefaultMessage", .deleteDefaultMessage)
        add("GetDefaultMessage", .getDefaultMessage)
        add("ConfigureRealtimeUrl", .configureRealtimeUrl)
        add("DeleteRealtimeUrl", .deleteRealtimeUrl)
        add("GetRealtimeUrl", .getRealtimeUrl)
        add("InitiatePerformanceTest", .initiatePerformanceTest)
        add("GetPerformanceTestResults", .getPerformanceTestResults)
        return methods
    }
}

extension AppStoreGatewayService {
    /// The Retention Messaging service over this service's Apple client (its rate budgets and JWTs shared).
    package var retentionMessaging: RetentionMessagingService {
        RetentionMessagingService(
            client: api.client, verifier: api.verifier, clock: api.clock, coalescing: api.coalescing)
    }
}
