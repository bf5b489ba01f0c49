import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer

/// A fake of Apple's App Store Server API, indistinguishable for the gateway except by its trust roots:
/// same paths, query and body semantics, JSON shapes, error bodies, JWT checks and rate limits, with
/// generated histories signed by `pki`. Serve it with any `HTTPRequestHandler` server, or call `handle`.
///
/// Each request is: route (unknown → 404, empty body) → injected faults (header `x-simulator-fault` and
/// configured rules) → JWT (→ 401) → rate limit (→ 429 + `Retry-After`) → endpoint. The newest requests'
/// trace headers are listed at `GET /simulator/requests` (for tests of trace propagation).
package final class AppStoreSimulator: HTTPRequestHandler {
    package let configuration: SimulatorConfiguration
    /// The PKI whose root verifies every JWS the simulator returns.
    package let pki: SimulatorPKI
    private let store: SimulatedStore
    private let authenticator: RequestAuthenticator
    private let rateLimits: SimulatorRateLimits
    private let faults: FaultInjector
    private let callLog = SimulatorCallLog()
    private let history = TransactionHistoryEndpoint()
    private let notifications: NotificationHistoryEndpoint
    private let subscriptions = SubscriptionEndpoints()
    private let testNotifications: TestNotificationEndpoints
    private let recorder = RequestRecorder()
    private let purchases: PurchaseEndpoints
    private let extensions = RenewalExtensionEndpoints()
    private let advancedCommerce = AdvancedCommerceEndpoints()
    private let writes = SimulatorWriteLog()
    private let retention: RetentionMessagingEndpoints
    private let onlinePKI = Lock<OnlineSimulatorPKI?>(nil)
    let signatures = SignatureMemo()
    /// Scripted subscription lifecycles (`/simulator/lifecycles`, AppStoreSimulator+Lifecycles).
    let lifecycles: LifecycleRegistry
    /// Where lifecycles deliver when neither the request nor `configuration.webhookURL` names a webhook.
    let fallbackWebhookURL = Lock<URL?>(nil)

    /// The path of the OCSP responder (POST, RFC 6960 appendix A), served once `enableOCSP` was called.
    package static let ocspPath = "/ocsp"

    /// Generates every app's histories (both environments) from `configuration` and signs with `pki`.
    package init(configuration: SimulatorConfiguration, pki: SimulatorPKI) {
        self.configuration = configuration
        self.pki = pki
        store = SimulatedStore(
            apps: configuration.apps, seed: configuration.seed, customersPerApp: configuration.customersPerApp,
            referenceTime: configuration.referenceTime.millisecondsSince1970)
        authenticator = RequestAuthenticator(apps: configuration.apps, allowedClockSkew: configuration.allowedClockSkew)
        rateLimits = SimulatorRateLimits(
            scale: configuration.rateLimitScale, window: configuration.rateLimitWindow,
            sandboxFactor: configuration.sandboxRateFactor, clock: configuration.clock)
        faults = FaultInjector(rules: configuration.faults, seed: configuration.seed)
        notifications = NotificationHistoryEndpoint(
            tokens: PaginationTokenCodec(secret: "notification-history/\(configuration.seed)"),
            tokenLifetime: configuration.paginationTokenLifetime)
        testNotifications = TestNotificationEndpoints(
            seed: configuration.seed, lifetime: configuration.paginationTokenLifetime)
        purchases = PurchaseEndpoints(revisions: PaginationTokenCodec(secret: "refund-history/\(configuration.seed)"))
        lifecycles = LifecycleRegistry(limits: configuration.lifecycleLimits)
        // Without a sender of its own, a performance test calls the realtime URL with this simulator's signed
        // requests; the simulator is reached through a weak reference set once it exists (a strong one would keep
        // it alive through its own endpoints).
        let reference = Lock(WeakSimulator())
        retention = RetentionMessagingEndpoints(
            directory: configuration.retentionDirectory, seed: configuration.seed,
            sender: configuration.performanceTestSender ?? { plan in
                guard let simulator = reference.withLock({ $0.simulator }) else { return [] }
                return await simulator.performanceTest(plan)
            })
        reference.withLock { $0.simulator = self }
    }

    /// A snapshot of one app's generated data in one environment (nil for an unknown bundle id).
    package func dataset(bundleId: String, environment: AppleEnvironment) -> SimulatedDataset? {
        store.dataset(bundleId, environment)
    }

    /// Refunds a transaction now, as a customer's refund would: the record changes (so it reappears at the
    /// end of an ascending history) and a REFUND notification is recorded. False if unknown or revoked.
    @discardableResult
    package func refund(transactionId: String, bundleId: String, environment: AppleEnvironment, prorated: Bool = false)
        -> Bool
    {
        let now = configuration.clock.wallNow().millisecondsSince1970
        var random = DeterministicRandom(seed: configuration.seed, stream: "refund/\(transactionId)/\(now)")
        let uuid = random.uuid()
        return store.update(bundleId, environment) {
            $0.refund(transactionId: transactionId, at: now, prorated: prorated, notificationUUID: uuid)
        } ?? false
    }

    /// Makes the PKI online, as Apple's is: from now on payloads are signed by certificates naming
    /// `responderURL` (this simulator's base URL + `ocspPath`) as their OCSP responder, which answers at
    /// `ocspPath`; fault `revoked-signer` signs with a leaf it reports revoked.
    package func enableOCSP(responderURL: String) throws(CryptographyError) {
        let online = try pki.online(responderURL: responderURL)
        onlinePKI.withLock { $0 = online }
    }

    /// The signing PKI now: online once `enableOCSP` was called, with the revoked leaf when asked.
    func signingPKI(revoked: Bool) -> SimulatorPKI {
        guard let online = onlinePKI.withLock({ $0 }) else { return pki }
        return revoked ? online.revoked : online.signing
    }

    /// Adds a notification sent now to an app's history.
    func recordNotification(_ notification: SimulatedNotification, bundleId: String, environment: AppleEnvironment) {
        _ = store.update(bundleId, environment) { $0.record(notification) }
    }

    /// Adds a delivery attempt to a recorded notification.
    func recordAttempt(uuid: String, attempt: SimulatedSendAttempt, bundleId: String, environment: AppleEnvironment) {
        _ = store.update(bundleId, environment) { $0.recordAttempt(uuid: uuid, attempt: attempt) }
    }

    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if request.method == "GET" && request.path == RequestRecorder.path { return recorder.response() }
        if request.path == Self.ocspPath, let online = onlinePKI.withLock({ $0 }) {
            guard request.method == "POST" else { return HTTPResponse(status: 405) }
            let now = Date(timeIntervalSince1970: Double(configuration.clock.wallNow().millisecondsSince1970) / 1000)
            return HTTPResponse(
                status: 200, headers: [("content-type", "application/ocsp-response")],
                body: online.ocspResponse(to: request.body, now: now))
        }
        recorder.record(request)
        if request.path.hasPrefix("/simulator/") { return await control(request) }
        guard let route = SimulatorRoute(request) else { return SimulatorResponse.notFound() }
        var injected = faults.faults(for: route.endpoint, environment: route.environment)
        if configuration.allowsFaultHeader, let header = request.header(FaultHeader.name) {
            guard let parsed = FaultHeader.parse(header) else {
                return SimulatorResponse.badControlHeader(FaultHeader.name)
            }
            injected += parsed
        }
        for case .latency(let duration) in injected { await configuration.sleep(duration) }
        if injected.contains(.resetConnection) { return HTTPResponse(status: 500, delivery: .resetConnection) }
        if injected.contains(.htmlBadGateway) { return SimulatorResponse.htmlBadGateway() }
        for case .appleError(let code) in injected {
            return SimulatorResponse.error(
                code,
                AppleErrorCode(rawValue: code).name.map { "Simulated \($0)." }
                    ?? "Simulated error.")
        }
        let now = configuration.clock.wallNow()
        let app: SimulatedApp
        do {
            app = try authenticator.authenticate(authorization: request.header("authorization"), now: now)
        } catch {
            return SimulatorResponse.unauthenticated()
        }
        var entry = SimulatorCallLog.Entry(
            atMilliseconds: now.millisecondsSince1970, bundleId: app.bundleId, endpoint: route.endpoint,
            environment: route.environment, status: 429)
        if let throttle = callLog.takeThrottle() {
            let retryAt = now + .milliseconds(throttle)
            rateLimits.block(
                bundleId: app.bundleId, endpoint: route.endpoint, environment: route.environment, until: retryAt)
            callLog.record(entry)
            return SimulatorResponse.rateLimited(retryAt: retryAt)
        }
        if let retryAt = rateLimits.admit(
            bundleId: app.bundleId, endpoint: route.endpoint, environment: route.environment)
        {
            callLog.record(entry)
            return SimulatorResponse.rateLimited(retryAt: retryAt)
        }
        entry.status = 200
        callLog.record(entry)
        if !route.endpoint.isRead {
            writes.record(request, endpoint: route.endpoint, environment: route.environment)
        }
        var response = respond(
            request, route: route, app: app, now: now, revokedSigner: injected.contains(.revokedSigner),
            forgedPosition: injected.lazy.compactMap {
                if case .forgedNotification(let position) = $0 { position } else { nil }
            }.first)
        if injected.contains(.truncatedBody) { response.body = Array(response.body.prefix(response.body.count / 2)) }
        for case .slowBody(let chunks, let interval) in injected {
            response.delivery = .slowBody(chunks: chunks, interval: max(.zero, interval))
        }
        return response
    }

    /// The test-harness endpoints: `GET /simulator/calls`, `POST /simulator/throttle` (`SimulatorCallLog`),
    /// `POST /simulator/notifications` (new notifications delivered to a webhook, `deliverNotifications`) and
    /// `/simulator/lifecycles…` (scripted subscription lifecycles, `lifecycleControl`).
    private func control(_ request: HTTPRequest) async -> HTTPResponse {
        if request.path == Self.lifecyclesPath || request.path.hasPrefix(Self.lifecyclesPath + "/") {
            return await lifecycleControl(request)
        }
        func number(_ name: String) -> Int64? {
            request.queryItems.first { $0.name == name }.flatMap { Int64($0.value) }
        }
        switch (request.method, request.path) {
        case ("GET", "/simulator/calls"):
            return SimulatorResponse.json(callLog.json(since: number("since") ?? 0))
        case ("GET", SimulatorWriteLog.path):
            return SimulatorResponse.json(writes.json)
        case ("POST", "/simulator/throttle"):
            callLog.armThrottle(milliseconds: number("ms") ?? 1000)
            return SimulatorResponse.json(.object([("armed", .bool(true))]))
        case ("POST", "/simulator/notifications"):
            return await deliverNotifications(request)
        case ("POST", "/simulator/realtime"):
            return await realtimeRequests(request)
        default:
            return SimulatorResponse.notFound()
        }
    }

    private func respond(
        _ request: HTTPRequest, route: SimulatorRoute, app: SimulatedApp, now: WallTime, revokedSigner: Bool,
        forgedPosition: Int?
    ) -> HTTPResponse {
        guard let dataset = store.dataset(app.bundleId, route.environment) else {
            return SimulatorResponse.error(4_040_003, "App not found.")
        }
        if route.endpoint.isRetentionMessaging {
            return retention.respond(request, route: route, app: app, dataset: dataset)
        }
        let signer = SignedPayloads(
            pki: signingPKI(revoked: revokedSigner), app: app, environment: route.environment, memo: signatures)
        let parameter = route.parameters.first ?? ""
        do throws(AppleRejection) {
            let body: OrderedJSON
            switch route.endpoint {
            case .getTransactionHistory, .getTransactionHistoryV1:
                body = try history.respond(
                    transactionId: parameter, query: request.queryItems,
                    version1: route.endpoint == .getTransactionHistoryV1, dataset: dataset, signer: signer, now: now)
            case .getNotificationHistory:
                let token = request.queryItems.first { $0.name == "paginationToken" }?.value
                body = try notifications.respond(
                    body: request.body, paginationToken: token, dataset: dataset, signer: signer, now: now,
                    forgedPosition: forgedPosition)
            case .getTransactionInfo:
                if let lifecycle = lifecycles.state(
                    owning: parameter, bundleId: app.bundleId, environment: route.environment)
                {
                    body = try subscriptions.transactionInfo(
                        transactionId: parameter, lifecycle: lifecycle, signer: signer)
                } else {
                    body = try subscriptions.transactionInfo(
                        transactionId: parameter, dataset: dataset, signer: signer, now: now)
                }
            case .getAllSubscriptionStatuses:
                if let lifecycle = lifecycles.state(
                    owning: parameter, bundleId: app.bundleId, environment: route.environment)
                {
                    body = try subscriptions.statuses(
                        transactionId: parameter, query: request.queryItems, lifecycle: lifecycle, signer: signer)
                } else {
                    body = try subscriptions.statuses(
                        transactionId: parameter, query: request.queryItems, dataset: dataset, signer: signer,
                        now: now)
                }
            case .requestTestNotification:
                body = testNotifications.request(app: app, environment: route.environment, now: now)
                if let url = configuration.webhookURL.flatMap(URL.init(string:)),
                    case .object(let members) = body, case .string(let token)? = members.first?.1,
                    let jws = testNotifications.signedPayload(token: token, signer: signer)
                {
                    let delivery = WebhookDelivery(timeFactor: configuration.webhookTimeFactor)
                    Task.detached {
                        _ = await delivery.deliver(jws, to: url, retries: true, record: { _, _ in }, now: { 0 })
                    }
                }
            case .getTestNotificationStatus:
                body = try testNotifications.status(token: parameter, signer: signer, now: now)
            case .getAppTransactionInfo:
                body = try purchases.appTransaction(
                    transactionId: parameter, dataset: dataset, signer: signer, now: now)
            case .lookUpOrderId:
                body = try purchases.lookUpOrder(orderId: parameter, dataset: dataset, signer: signer, now: now)
            case .getRefundHistory:
                body = try purchases.refundHistory(
                    transactionId: parameter, query: request.queryItems, dataset: dataset, signer: signer, now: now)
            case .extendSubscriptionRenewalDate:
                body = try extensions.extend(
                    originalTransactionId: parameter, body: request.body, store: store, bundleId: app.bundleId,
                    environment: route.environment)
            case .extendRenewalDatesForAllActiveSubscribers:
                body = try extensions.extendAll(body: request.body, dataset: dataset, now: now)
            case .getStatusOfSubscriptionRenewalDateExtensions:
                body = try extensions.status(
                    productId: parameter, requestIdentifier: route.parameters.dropFirst().first ?? "", dataset: dataset)
            case .sendConsumptionInformation:
                try purchases.consumption(transactionId: parameter, body: request.body, dataset: dataset)
                return HTTPResponse(status: 202)
            case .setAppAccountToken:
                let token = try purchases.appAccountToken(
                    transactionId: parameter, body: request.body, dataset: dataset)
                store.update(app.bundleId, route.environment) {
                    $0.setAppAccountToken(token, originalTransactionId: parameter)
                }
                return HTTPResponse(status: 200)
            case .finishTransaction:
                guard TransactionIdentifier.isWellFormed(parameter) else { throw AppleRejection.invalidTransactionId() }
                let finished = store.update(app.bundleId, route.environment) { $0.finish(transactionId: parameter) }
                guard finished == true else {
                    throw AppleRejection.transactionIdNotFound()
                }
                return HTTPResponse(status: 200)
            case .cancelSubscription, .revokeSubscription, .changeSubscriptionPrice, .changeSubscriptionMetadata,
                .migrateSubscription, .requestTransactionRefund:
                body = try advancedCommerce.respond(
                    route.endpoint, transactionId: parameter, body: request.body, store: store, dataset: dataset,
                    signer: signer, now: now)
            default:
                return SimulatorResponse.notFound()
            }
            return SimulatorResponse.json(body)
        } catch {
            return SimulatorResponse.error(error)
        }
    }
}

/// The simulator as its performance tests reach it: weakly, so the endpoints it owns do not keep it alive.
private struct WeakSimulator {
    weak var simulator: AppStoreSimulator?
}
