import AppStoreDomain
import GRPC
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// appstore.gateway.v1.SubscriptionState: "is this customer entitled right now?" from the gateway's own state.
/// Every RPC is app-scoped (authorized as every other, `read`); reads never call Apple for what the state holds.
package struct SubscriptionStateService: GRPCService {
    /// The service's full name, as reflection names it.
    package static let name = "appstore.gateway.v1.SubscriptionState"

    let states: SubscriptionStates?
    let events: SubscriptionEventsHandler?
    /// Why the state is not kept on this gateway (nil when it is): every call fails FAILED_PRECONDITION with it.
    package let unavailable: String?

    init(states: SubscriptionStates, events: SubscriptionEventsHandler) {
        self.states = states
        self.events = events
        self.unavailable = nil
    }

    init(unavailable reason: String) {
        self.states = nil
        self.events = nil
        self.unavailable = reason
    }

    package var methods: [String: MethodHandler] {
        let states = self.states
        let events = self.events
        let unavailable = self.unavailable
        @Sendable func require() throws(GatewayError) -> SubscriptionStates {
            guard let states else {
                throw GatewayError.stateNotKept(unavailable ?? "no store for it is configured")
            }
            return states
        }
        return [
            "/\(Self.name)/GetSubscription": .unary(GetSubscriptionRequest.self) {
                request, context throws(GatewayError) -> FramedMessage in
                let remaining = context.remaining
                return try await require().framedSubscription(request, remaining: remaining)
            },
            "/\(Self.name)/GetCustomer": .unary(GetCustomerRequest.self) {
                request, _ throws(GatewayError) -> GetCustomerResponse in
                try await require().getCustomer(request)
            },
            "/\(Self.name)/ApplySignedTransaction": .unary(ApplySignedTransactionRequest.self) {
                request, _ throws(GatewayError) -> ApplySignedTransactionResponse in
                try await require().applySigned(request)
            },
            "/\(Self.name)/RefreshSubscription": .unary(RefreshSubscriptionRequest.self) {
                request, context throws(GatewayError) -> RefreshSubscriptionResponse in
                let remaining = context.remaining
                return try await require().refresh(request, remaining: remaining)
            },
            // A Swift task reading the store's events as the caller reads; validation errors go out before any
            // header.
            "/\(Self.name)/WatchSubscriptionEvents": .serverStreaming(
                WatchSubscriptionEventsRequest.self, SubscriptionEvent.self
            ) { request, context, stream throws(RPCStatus) in
                let call: SubscriptionEventsHandler.Call
                let handler: SubscriptionEventsHandler
                do throws(GatewayError) {
                    _ = try require()
                    guard let events else { throw GatewayError.stateNotKept(unavailable ?? "no store") }
                    handler = events
                    call = try handler.prepare(request, caller: context.caller?.displayName)
                } catch {
                    throw error.rpcStatus
                }
                if !request.resumeToken.isEmpty {
                    // Ended by a shutdown before the first event: continue from where the caller came from.
                    await stream.setShutdownStatus(
                        GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                            "resume_token", request.resumeToken, domain: gatewayErrorDomain))
                }
                try await handler.run(call) { event, shutdownStatus throws(RPCStatus) in
                    try await stream.send(event, shutdownStatus: shutdownStatus)
                }
            },
        ]
    }
}

extension SubscriptionStates {
    /// The checked app of a request, and its environment (an unknown enum value is INVALID_ARGUMENT).
    private func resolve(app name: String, environment: Environment) throws(GatewayError) -> App {
        var contract = RequestContract()
        contract.length(name, field: "app", max: RequestContract.maxAppBytes)
        try contract.check()
        let app = try apps.app(named: name)
        switch environment {
        case .unspecified, .production, .sandbox, .xcode, .localTesting: break
        case .unrecognized(let value):
            throw GatewayError.invalidArgument(field: "environment", problem: "unknown Environment \(value)")
        }
        return app
    }

    private static func checkID(_ id: String, field: String) throws(GatewayError) {
        var contract = RequestContract()
        contract.transactionID(id, field: field, required: true)
        try contract.check()
    }

    /// GetSubscription's answer as it is sent (`SubscriptionStates.framedSubscription`: kept while it holds).
    func framedSubscription(_ request: GetSubscriptionRequest, remaining: Duration?) async throws(GatewayError)
        -> FramedMessage
    {
        let app = try resolve(app: request.app, environment: request.environment)
        try Self.checkID(request.originalTransactionId, field: "original_transaction_id")
        return try await framedSubscription(
            app: app, originalTransactionId: request.originalTransactionId, environment: request.environment,
            remaining: remaining)
    }

    func refresh(_ request: RefreshSubscriptionRequest, remaining: Duration?) async throws(GatewayError)
        -> RefreshSubscriptionResponse
    {
        let app = try resolve(app: request.app, environment: request.environment)
        try Self.checkID(request.originalTransactionId, field: "original_transaction_id")
        guard
            let record = try await readFromApple(
                app: app, originalTransactionId: request.originalTransactionId, environment: request.environment,
                remaining: remaining, forCaller: true)
        else {
            throw Self.notInAppleAnswer(request.originalTransactionId)
        }
        var response = RefreshSubscriptionResponse()
        response.subscription = subscriptionMessage(record, app: app, stale: false)
        return response
    }

    static func notInAppleAnswer(_ id: String) -> GatewayError {
        .subscriptionNotFound(originalTransactionId: id)
    }

    func getCustomer(_ request: GetCustomerRequest) async throws(GatewayError) -> GetCustomerResponse {
        let app = try resolve(app: request.app, environment: request.environment)
        let view: CustomerView
        switch request.key {
        case .appAccountToken(let token)?:
            var contract = RequestContract()
            contract.uuid(token, field: "app_account_token", required: true)
            try contract.check()
            view = try await customer(app: app, environment: request.environment) {
                store, environment throws(NotificationStoreFailure) in
                try await store.customer(
                    bundleId: app.bundleId, environment: environment, appAccountToken: token.lowercased())
            }
        case .originalTransactionId(let id)?:
            try Self.checkID(id, field: "original_transaction_id")
            view = try await customer(app: app, environment: request.environment) {
                store, environment throws(NotificationStoreFailure) in
                try await store.customer(
                    SubscriptionKey(bundleId: app.bundleId, environment: environment, originalTransactionId: id))
            }
        case nil:
            throw GatewayError.invalidArgument(
                field: "key", problem: "set app_account_token or original_transaction_id")
        }
        let now = nowMillis
        let policy = policy(of: app)
        var response = GetCustomerResponse()
        response.subscriptions = view.subscriptions
            .sorted {
                ($0.currentTransaction?.payload.subscriptionGroupIdentifier ?? "", $0.key.originalTransactionId)
                    < ($1.currentTransaction?.payload.subscriptionGroupIdentifier ?? "", $1.key.originalTransactionId)
            }
            .map { Subscription($0, app: app.name, state: $0.state(at: now, policy: policy), stale: false) }
        response.entitlements = Self.allEntitlements(view.entitlements(at: now, policy: policy), policy: policy)
        response.purchases = view.purchases.map(\.payload)
        return response
    }

    /// Every configured entitlement of the app, those the customer holds no source of included as inactive.
    static func allEntitlements(
        _ held: [EntitlementGrant], policy: SubscriptionPolicy
    ) -> [ProtoCodec.Entitlement] {
        var byName: [String: ProtoCodec.Entitlement] = [:]
        for name in policy.entitlements.keys {
            var empty = ProtoCodec.Entitlement()
            empty.name = name
            byName[name] = empty
        }
        for entitlement in held { byName[entitlement.name] = ProtoCodec.Entitlement(entitlement) }
        return byName.values.sorted { $0.name < $1.name }
    }

    /// The first environment (in the read order) where the customer holds anything.
    private func customer(
        app: App, environment: Environment,
        _ read: (any SubscriptionStore, Environment) async throws(NotificationStoreFailure) -> CustomerView
    ) async throws(GatewayError) -> CustomerView {
        let candidates = Self.environments(environment, of: app)
        var last = CustomerView(subscriptions: [], purchases: [])
        for candidate in candidates {
            do {
                last = try await read(store, candidate)
            } catch {
                throw GatewayError.stateStoreUnavailable(error.description)
            }
            if !last.subscriptions.isEmpty || !last.purchases.isEmpty { return last }
        }
        return last
    }

    func applySigned(_ request: ApplySignedTransactionRequest) async throws(GatewayError)
        -> ApplySignedTransactionResponse
    {
        let app = try resolve(app: request.app, environment: .unspecified)
        var contract = RequestContract()
        contract.length(request.signedTransactionInfo, field: "signed_transaction_info", max: 65_536)
        contract.length(request.signedRenewalInfo, field: "signed_renewal_info", max: 65_536)
        if request.signedTransactionInfo.isEmpty { contract.refuse("signed_transaction_info", "is required") }
        try contract.check()
        let transaction = try await verified(
            request.signedTransactionInfo, kind: .transaction, field: "signed_transaction_info", app: app)
        guard case .transaction(let payload) = transaction.decoded else {
            throw GatewayError.invalidArgument(field: "signed_transaction_info", problem: "is not a transaction")
        }
        var renewal: SignedRenewalInfo?
        if !request.signedRenewalInfo.isEmpty {
            let verifiedRenewal = try await verified(
                request.signedRenewalInfo, kind: .renewalInfo, field: "signed_renewal_info", app: app)
            guard case .renewalInfo(let info) = verifiedRenewal.decoded else {
                throw GatewayError.invalidArgument(field: "signed_renewal_info", problem: "is not a renewal info")
            }
            guard info.originalTransactionId == payload.originalTransactionId else {
                throw GatewayError.invalidArgument(
                    field: "signed_renewal_info", problem: "belongs to another subscription than the transaction")
            }
            renewal = SignedRenewalInfo(jws: request.signedRenewalInfo, payload: info)
        }
        let signed = SignedTransaction(jws: request.signedTransactionInfo, payload: payload)
        var response = ApplySignedTransactionResponse()
        guard
            let applied = try await apply(
                transaction: signed, renewal: renewal, source: .appPosted, app: app,
                cause: SubscriptionEventContext.appPosted)
        else {
            throw GatewayError.invalidArgument(
                field: "signed_transaction_info", problem: "names no original transaction id of this app")
        }
        metrics.made(applied.events)
        if let record = applied.record {
            if applied.changed { metrics.changed(app: app.name, source: "app_posted") }
            response.subscription = subscriptionMessage(record, app: app, stale: false)
        }
        return response
    }

    /// A caller's JWS verified as VerifyJWS verifies it for `app` (bound to its bundle id and environments); a
    /// JWS that does not verify is INVALID_ARGUMENT naming the field, an unreachable revocation check UNAVAILABLE.
    private func verified(
        _ jws: String, kind: SignedDataKind, field: String, app: App
    ) async throws(GatewayError) -> (result: VerificationResult, decoded: DecodedPayload?) {
        let requirements: VerificationRequirements
        do {
            requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId,
                acceptedEnvironments: VerifyJWSHandler.accepted(by: app.environment))
        } catch {
            throw GatewayError.invalidArgument(field: "app", problem: "\(error)")
        }
        let result = await verifier.verifyOffLoopUnlessCached(jws, kind: kind, requirements: requirements)
        if result.status == .retryableFailure {
            throw .revocationStatusUnavailable(app: app.name, problem: result.message)
        }
        guard result.isVerified else {
            metrics.rejected(reason: "unverified")
            throw GatewayError.invalidArgument(field: field, problem: "did not verify: \(result.message)")
        }
        return (result, PayloadDecoder.decode(result))
    }
}
