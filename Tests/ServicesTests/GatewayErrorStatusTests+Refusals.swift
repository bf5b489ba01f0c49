import AppStoreDomain
import GRPC
import Services
import Testing

/// Refusals from the layers below gRPC (caller policy, configuration, online checks, rate limits) reach the
/// caller through the one mapping.
@Suite struct RefusalStatusTests {
    @Test func callerRefusalsMapToTheirStatusCodes() {
        let unauthenticated = GatewayError.unauthenticated(.expired).rpcStatus
        #expect(unauthenticated.code == .unauthenticated)
        #expect(unauthenticated.details?.info?.reason == "UNAUTHENTICATED")
        #expect(unauthenticated.details?.info?.metadata["cause"] == "expired")
        let denied = GatewayError.permissionDenied(.appNotAllowed(identity: "b", app: "x")).rpcStatus
        #expect(denied.code == .permissionDenied && denied.details?.info?.reason == "APP_NOT_ALLOWED")
        let unknown = GatewayError.permissionDenied(.unknownCaller(identity: String(repeating: "z", count: 5000)))
            .rpcStatus
        #expect(unknown.code == .permissionDenied && unknown.message.utf8.count < 400)
        let notGranted = GatewayError.permissionDenied(
            .permissionNotGranted(identity: "reader", permission: .write, method: "/a.B/Finish")
        ).rpcStatus
        #expect(notGranted.code == .permissionDenied)
        #expect(notGranted.details?.info?.reason == "PERMISSION_NOT_GRANTED")
        #expect(notGranted.details?.info?.metadata["permission"] == "write")
        #expect(notGranted.details?.info?.metadata["caller"] == "reader")
        #expect(notGranted.message.contains("/a.B/Finish"))
    }

    @Test func everyGuardedMethodNeedsExactlyOnePermission() {
        let services = [
            AppStoreGatewayService.name, AdvancedCommerceService.name, RetentionMessagingService.name,
            SubscriptionStateService.name,
        ]
        #expect(MethodPermissions.table.count >= 40)
        for (path, permission) in MethodPermissions.table {
            #expect(services.contains { path.hasPrefix("/\($0)/") }, "\(path)")
            #expect(CallerPermissions.named.contains { $0.permission == permission }, "\(path): \(permission)")
        }
        #expect(MethodPermissions.required(forMethod: "/\(AppStoreGatewayService.name)/VerifyJWS") == .read)
        #expect(
            MethodPermissions.required(forMethod: "/\(AppStoreGatewayService.name)/ServeRealtimeRequests") == .realtime)
        // A path the table does not list needs every permission (fail closed).
        #expect(MethodPermissions.required(forMethod: "/\(AppStoreGatewayService.name)/NotYetListed") == .all)
    }

    @Test func unknownAppStatusDoesNotRepeatAHugeName() {
        let status = GatewayError.unknownApp(String(repeating: "a", count: 100_000)).rpcStatus
        #expect(status.code == .notFound)
        #expect(status.message.utf8.count < 400)
        #expect((status.details?.info?.metadata["app"] ?? "").utf8.count < 200)
    }

    @Test func unknownRevocationStatusIsUnavailableWithRetryInfo() {
        let status = GatewayError.revocationStatusUnavailable(app: "example", problem: "responder down").rpcStatus
        #expect(status.code == .unavailable)
        #expect(status.details?.info?.reason == "REVOCATION_STATUS_UNAVAILABLE")
        #expect(status.details?.retryDelayMilliseconds == 1000)
    }

    @Test func rateLimitRefusalsBecomeResourceExhaustedWithRetryInfo() {
        let refusal = RateLimitRefusal(
            source: .localBucket, retryAfter: .milliseconds(250), app: "example", endpoint: "getTransactionHistory",
            environment: .sandbox)
        let status = GatewayError.rateLimited(refusal).rpcStatus
        #expect(status.code == .resourceExhausted && status.details?.retryDelayMilliseconds == 250)
    }

    @Test func everyContractViolationIsAFieldViolation() {
        let status = GatewayError.badRequest([
            InvalidField(field: "product_types", problem: "must hold at most 100 values (got 101)"),
            InvalidField(field: "app", problem: "is required"),
        ]).rpcStatus
        #expect(status.code == .invalidArgument)
        #expect(status.details?.fieldViolations.map(\.field) == ["product_types", "app"])
        #expect(status.details?.info?.metadata["field"] == "product_types")
        // A single invalid argument is a one-violation BadRequest too.
        let single = GatewayError.invalidArgument(field: "app", problem: "is required").rpcStatus
        #expect(single.details?.fieldViolations == [FieldViolation(field: "app", description: "is required")])
    }
}

/// The subscription state's own refusals: their codes and reasons, RetryInfo where a retry helps.
@Suite struct SubscriptionStateStatusTests {
    @Test func notFoundUnavailableAndNotKeptCarryTheirReasons() {
        let missing = GatewayError.subscriptionNotFound(originalTransactionId: String(repeating: "9", count: 500))
            .rpcStatus
        #expect(missing.code == .notFound && missing.details?.info?.reason == "SUBSCRIPTION_NOT_FOUND")
        #expect(missing.message.utf8.count < 400)
        let down = GatewayError.stateStoreUnavailable("disk I/O error").rpcStatus
        #expect(down.code == .unavailable && down.details?.info?.reason == "STATE_STORE_UNAVAILABLE")
        #expect(down.details?.retryDelayMilliseconds == 1000)
        let none = GatewayError.stateNotKept("needs notifications.webhook").rpcStatus
        #expect(none.code == .failedPrecondition && none.details?.info?.reason == "SUBSCRIPTION_STATE_NOT_KEPT")
    }
}
