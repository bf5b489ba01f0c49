import AppStoreDomain
import GatewayFoundation
import HTTPServer
import Logging
import Metrics
import NotificationStore
import ProtoCodec
import Services
import SignedData

/// The App Store Server Notifications V2 receiver: Apple POSTs `{"signedPayload": …}` to `path`.
///
/// 200 only once the notification is durably stored (or was already: deduplicated by notificationUUID), or
/// when it was signed longer ago than the store's retention (`NotificationRetention`: not stored, counted);
/// 400 for a body that is not a notification Apple signed; 403 for a genuine notification of an app (bundle
/// id, appAppleId, environment) this gateway is not configured for; 503 when the store (or the
/// verification pool) cannot take it now, so Apple retries. Chain validation runs on the verification pool
/// and the store on its own thread: the handler only awaits them.
package struct NotificationWebhook: HTTPRequestHandler {
    let path: String
    let verifier: SignedDataVerifier
    let pool: VerificationPool
    let apps: [App]
    let store: any NotificationStore
    let clock: any GatewayClock
    let metrics: NotificationMetrics
    /// The store's retention: a notification signed before it is not stored.
    let retention: NotificationRetention
    let logger = Logger(label: "appstore-gateway.webhook")
    /// Where the SERVER span of each delivery and the CLIENT span of its store commit go.
    package var tracer: any Tracer = SilentTracer()
    /// The hosted realtime URL on the same listener (`notifications.realtime.path`); nil = none.
    package var realtime: RealtimeEndpoint?
    /// Where each stored notification's verified, decoded data is handed to this replica's subscription
    /// projector (nil: no state kept here).
    package var deliveries: VerifiedDeliveries?

    /// The outcome of one delivery, before it becomes an HTTP answer (tests read it directly).
    enum Outcome: Equatable {
        case stored(app: String, uuid: String)
        case duplicate(app: String, uuid: String)
        /// Genuine, but signed before the retention: not stored, answered 200 (Apple must not retry it).
        case stale(app: String, uuid: String)
        case notANotification(String)
        case unknownApp(String)
        case unavailable(String)
    }

    init(
        path: String, verifier: SignedDataVerifier, pool: VerificationPool, apps: [App],
        store: any NotificationStore, clock: any GatewayClock, metrics: NotificationMetrics,
        retention: NotificationRetention = NotificationRetention(
            milliseconds: NotificationStoreSettings().retention.wholeMilliseconds)
    ) {
        self.path = path
        self.verifier = verifier
        self.pool = pool
        self.apps = apps
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.retention = retention
    }

    /// Error answers are fixed texts: they never echo the configured path (which would tell a scanner where
    /// the receiver is) nor request bytes; the detail goes to the log.
    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if let realtime, request.path == realtime.path { return await realtime.handle(request) }
        guard request.path == path else {
            metrics.reject("path")
            return text(404, "not found")
        }
        metrics.received?.increment()
        guard request.method == "POST" else {
            metrics.reject("method")
            return HTTPResponse(status: 405, headers: [("allow", "POST")])
        }
        // Anyone on the internet can send a traceparent: a delivery is the root of a trace of its own (the
        // gateway's sampler decides, not the sender's flags), and a sender's context is only a link from it.
        let trace = TraceContext(traceparent: nil, tracestate: nil)
        var span = tracer.span(of: trace, name: "POST webhook", kind: .server)
        if span != nil, let link = Self.senderLink(request) { span?.links.append(link) }
        let response = respond(to: await receive(request.body, trace: span == nil ? nil : trace))
        if span != nil {
            span?.set("http.request.method", "POST")
            span?.set("http.response.status_code", response.status)
            if response.status >= 500 { span?.status = .error("HTTP \(response.status)") }
            tracer.end(span)
        }
        return response
    }

    /// The sender's span, from a well-formed `traceparent` (and its `tracestate`), as a link; nil without one.
    static func senderLink(_ request: HTTPRequest) -> SpanRecord.Link? {
        TraceContext(traceparent: request.header("traceparent"), tracestate: request.header("tracestate"))
            .callerSpanLink
    }

    /// The HTTP answer to a delivery's outcome, logged.
    private func respond(to outcome: Outcome) -> HTTPResponse {
        switch outcome {
        case .stored(let app, let uuid):
            logger.info("notification stored", metadata: ["app": "\(app)", "notification_uuid": "\(uuid)"])
            return text(200, "stored")
        case .duplicate(let app, let uuid):
            logger.info("notification already stored", metadata: ["app": "\(app)", "notification_uuid": "\(uuid)"])
            return text(200, "already stored")
        case .stale(let app, let uuid):
            logger.notice(
                "notification signed before the store's retention: not stored",
                metadata: ["app": "\(app)", "notification_uuid": "\(uuid)"])
            return text(200, "not stored: signed longer ago than the store's retention")
        case .notANotification(let why):
            // Debug only: anyone who can reach the port can send garbage; the metric counts it.
            logger.debug("webhook request refused", metadata: ["reason": "\(why)"])
            return text(400, "not an App Store Server Notification")
        case .unknownApp(let why):
            logger.warning("webhook notification of an unconfigured app", metadata: ["reason": "\(why)"])
            return text(403, "not a notification of a configured app")
        case .unavailable(let why):
            logger.error("webhook cannot store now", metadata: ["reason": "\(why)"])
            return HTTPResponse(
                status: 503, headers: [("content-type", "text/plain; charset=utf-8"), ("retry-after", "10")],
                body: Array("cannot store the notification now\n".utf8))
        }
    }

    /// Verifies, binds and stores one body; the store's commit is a span of `trace` when one is given.
    func receive(_ body: [UInt8], trace: TraceContext? = nil) async -> Outcome {
        guard let jws = WebhookBody.signedPayload(body) else {
            metrics.reject("not_a_notification")
            return .notANotification("the body must be a JSON object with a signedPayload string")
        }
        // Signature and chain first, bound to no app: a forgery is a 400 whatever it claims to be.
        let verifier = self.verifier
        let result: VerificationResult
        if let cached = verifier.verifyIfChainCached(jws, kind: .notification, requirements: .none) {
            result = cached
        } else {
            // Chain validation on the pool; with online checks, OCSP fetches awaited here, on no thread.
            let pool = self.pool
            guard
                let validated = await verifier.verifyOnline(
                    jws, kind: .notification, requirements: .none, running: { await pool.run($0) })
            else {
                metrics.reject("busy")
                return .unavailable("every verification worker is busy")
            }
            result = validated
        }
        if result.status == .retryableFailure {
            // Apple retries a 503: the revocation status may be known by then.
            metrics.reject("revocation_status_unavailable")
            return .unavailable(result.message)
        }
        guard result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result) else {
            metrics.reject("verification")
            return .notANotification("\(result.status.rawValue): \(result.message)")
        }
        let uuid = notification.notificationUuid
        guard (1...128).contains(uuid.utf8.count), let signedDate = notification.signedDate?.unixMilliseconds,
            let environment = result.environment
        else {
            metrics.reject("not_a_notification")
            return .notANotification("the notification has no notificationUUID, signedDate or environment")
        }
        // Then the binding: a configured app with this bundle id, its appAppleId, an environment its policy takes.
        let bundleID = Self.bundleID(of: notification)
        guard let app = apps.first(where: { $0.bundleId == bundleID }) else {
            metrics.reject("unknown_app")
            return .unknownApp("no configured app has the bundle id '\(bundleID.prefix(256))'")
        }
        let bound: VerificationResult
        do {
            let requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId,
                acceptedEnvironments: VerifyJWSHandler.accepted(by: app.environment))
            // The facts the verification read, checked against the app: nothing is parsed or verified again.
            bound =
                verifier.bind(result, to: requirements)
                ?? verifier.verifyIfChainCached(jws, kind: .notification, requirements: requirements)
                ?? verifier.verify(jws, kind: .notification, requirements: requirements)
        } catch {
            metrics.reject("unknown_app")
            return .unknownApp("app \(app.name): \(error.description)")
        }
        guard bound.isVerified else {
            metrics.reject("unknown_app")
            return .unknownApp("app \(app.name): \(bound.message)")
        }
        metrics.verified?.increment()
        let now = clock.wallNow().millisecondsSince1970
        if retention.isStale(signedDate: signedDate, now: now) {
            metrics.stale?.labels(app.name, "webhook").increment()
            return .stale(app: app.name, uuid: uuid)
        }
        let entry = NewNotification(
            uuid: uuid, signedDate: signedDate, bundleId: app.bundleId, environment: environment.rawValue,
            notificationType: notification.notificationTypeRaw, subtype: notification.subtypeRaw, signedPayload: jws)
        var span = tracer.childSpan(of: trace, name: "notification store insert", kind: .client)
        span?.set("appstore.app", app.name)
        defer { tracer.end(span) }
        // Offered before the insert commits: the projector, woken by the commit, finds it.
        if let data = notification.data { deliveries?.offer(uuid: uuid, signedPayload: jws, data: data) }
        do throws(NotificationStoreFailure) {
            switch try await store.insert(entry, receivedAt: now) {
            case .stored:
                metrics.stored?.labels(app.name, "webhook").increment()
                return .stored(app: app.name, uuid: uuid)
            case .duplicate:
                deliveries?.withdraw(uuid: uuid)
                metrics.duplicates?.labels(app.name).increment()
                return .duplicate(app: app.name, uuid: uuid)
            }
        } catch {
            deliveries?.withdraw(uuid: uuid)
            span?.status = .error("the store is unavailable")
            metrics.reject("store_unavailable")
            return .unavailable(error.message)
        }
    }

    /// The bundle id a notification names, wherever its type puts it.
    static func bundleID(of notification: AppStoreNotification) -> String {
        if let data = notification.data, !data.bundleId.isEmpty { return data.bundleId }
        if let summary = notification.summary, !summary.bundleId.isEmpty { return summary.bundleId }
        if let token = notification.externalPurchaseToken, !token.bundleId.isEmpty { return token.bundleId }
        if let appData = notification.appData, !appData.bundleId.isEmpty { return appData.bundleId }
        return ""
    }

    /// The transport of the webhook port: POST bodies up to `maxBodyBytes`, a whole request within
    /// `timeout`, idle keep-alive connections closed after 30 s, no maximum age, at most `maxConnections`
    /// connections. No call is ever "admitted" here (that is the gRPC guard's word), so the gRPC port's
    /// `unauthenticatedIdleTimeout` does not apply: the request deadline and the idle timeout bound a connection.
    package static func transportLimits(_ webhook: NotificationWebhook.Settings) -> HTTP2Configuration {
        var configuration = HTTP2Configuration()
        configuration.maxConnectionAge = nil
        configuration.unauthenticatedIdleTimeout = nil
        configuration.maxConnections = webhook.maxConnections
        configuration.http1.allowedMethods = ["POST"]
        configuration.http1.maxBodyBytes = webhook.maxBodyBytes
        configuration.http1.maxHeadBytes = 16 * 1024
        configuration.http1.headerTimeout = webhook.requestTimeout
        configuration.http1.idleTimeout = .seconds(30)
        configuration.maxHeaderListSize = 16 * 1024
        configuration.maxConcurrentStreams = 16
        configuration.initialWindowSize = UInt32(clamping: max(65_535, webhook.maxBodyBytes))
        configuration.maxBufferedBytesPerConnection = 4 * webhook.maxBodyBytes
        configuration.maxBufferedBytes = 64 * webhook.maxBodyBytes
        return configuration
    }

    private func text(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("content-type", "text/plain; charset=utf-8")], body: Array((body + "\n").utf8))
    }
}
