import AppStoreDomain
import GatewayFoundation
import HTTPServer
import Logging
import ProtoCodec
import Services
import SignedData

/// The hosted Retention Messaging realtime URL (Apple's Get Retention Message endpoint) at `path` on the
/// webhook listener: Apple POSTs `{"signedPayload": …}` (a DecodedRealtimeRequestBody signed by the App Store)
/// when a customer is about to cancel, and shows the retention message the answer names.
///
/// The request is verified like a notification (chain on the verification pool when not cached), bound to a
/// configured app (`RealtimeBinding`), checked for its age and repeats (`RealtimeReplays`), and handed to one of
/// the app's `ServeRealtimeRequests` streams (`RealtimeBroker`). The answer goes back within `timeout` of the
/// request's arrival: the stream's, or the app's configured default when no stream has room, it ends, its answer
/// is invalid or it is too slow. 200 with Apple's RealtimeResponseBody (`{}`: no choice), the same bytes again for
/// a repeat; 400 for a body that is not a realtime request Apple signed, or one signed more than `maxRequestAge`
/// ago or in the future; 403 for one of an app this gateway is not configured for, 503 when the verification pool
/// is full.
package struct RealtimeEndpoint: Sendable {
    let path: String
    let timeout: Duration
    let verifier: SignedDataVerifier
    let pool: VerificationPool
    let apps: [App]
    let defaults: [String: RealtimeDefault]
    let broker: RealtimeBroker
    let answering: RealtimeAnswering
    let metrics: RealtimeMetrics
    let replays: RealtimeReplays
    let clock: any GatewayClock
    let logger = Logger(label: "appstore-gateway.realtime")

    /// Answers one request to `path` (the caller routed it here by path).
    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let arrival = MonotonicInstant.now()
        guard request.method == "POST" else {
            metrics.reject("method")
            return HTTPResponse(status: 405, headers: [("allow", "POST")])
        }
        guard let jws = WebhookBody.signedPayload(request.body) else {
            metrics.reject("not_a_request")
            return text(400, "not a realtime request")
        }
        let verified: (App, RealtimeRequest)
        switch await verify(jws) {
        case .success(let found): verified = found
        case .failure(let refusal): return refusal.response
        }
        let (app, realtimeRequest) = verified
        let key = RealtimeReplayGuard.Key(app: app.name, requestIdentifier: realtimeRequest.requestIdentifier)
        let signedDate = realtimeRequest.signedDate == nil ? nil : realtimeRequest.signedDateMillis
        switch replays.admit(key, signedDate: signedDate, now: clock.wallNow().millisecondsSince1970) {
        case .admitted: break
        case .stale:
            metrics.reject("stale")
            return text(400, "the realtime request is older than notifications.realtime.maxRequestAge")
        case .future:
            metrics.reject("future")
            return text(400, "the realtime request is signed in the future")
        case .inFlight:
            // A repeat of one still waiting for its answer: no choice, and nothing signed for it.
            return answered(RealtimeResponseBody.none.json, app: app.name, outcome: "repeated", since: arrival)
        case .repeated(let body):
            return answered(body, app: app.name, outcome: "repeated", since: arrival)
        }
        let budget = timeout - (MonotonicInstant.now() - arrival)
        var outcome = await broker.ask(app: app.name, request: realtimeRequest, budget: budget)
        if case .answered(let given) = outcome, let why = RealtimeAnswering.mismatch(given, request: realtimeRequest) {
            outcome = .invalid(why)
        }
        let answer: RealtimeAnswer
        if case .answered(let given) = outcome {
            answer = given
        } else {
            answer = RealtimeAnswering.answer(defaults[app.name])
            if case .invalid(let why) = outcome {
                logger.warning(
                    "realtime answer invalid: default answered", metadata: ["app": "\(app.name)", "reason": "\(why)"])
            }
        }
        let body: RealtimeResponseBody
        do throws(GatewayError) {
            body = try answering.body(answer, app: app, request: realtimeRequest)
        } catch {
            // Signing failed (the key is unusable): an empty choice still lets Apple show its default.
            metrics.reject("signing")
            logger.error("realtime answer not signed", metadata: ["app": "\(app.name)", "reason": "\(error)"])
            body = .none
        }
        let bytes = body.json
        replays.answered(key, body: bytes, now: clock.wallNow().millisecondsSince1970)
        return answered(bytes, app: app.name, outcome: outcome.label, since: arrival)
    }

    /// Apple's 200 with `body`, counted for `app` under `outcome`.
    private func answered(_ body: [UInt8], app: String, outcome: String, since arrival: MonotonicInstant)
        -> HTTPResponse
    {
        metrics.record(
            app: app, outcome: outcome, seconds: Double((MonotonicInstant.now() - arrival).wholeNanoseconds) / 1e9)
        return HTTPResponse(status: 200, headers: [("content-type", "application/json")], body: body)
    }

    /// The verified, decoded request and its app, or the HTTP refusal.
    private func verify(_ jws: String) async -> Result<(App, RealtimeRequest), Refusal> {
        let verifier = self.verifier
        let result: VerificationResult
        if let cached = verifier.verifyIfChainCached(jws, kind: .realtimeRequest, requirements: .none) {
            result = cached
        } else {
            let pool = self.pool
            guard
                let validated = await verifier.verifyOnline(
                    jws, kind: .realtimeRequest, requirements: .none, running: { await pool.run($0) })
            else {
                metrics.reject("busy")
                return .failure(Refusal(text(503, "cannot verify the request now")))
            }
            result = validated
        }
        guard result.isVerified, case .realtimeRequest(let decoded)? = PayloadDecoder.decode(result) else {
            metrics.reject("verification")
            logger.debug(
                "realtime request refused", metadata: ["reason": "\(result.status.rawValue): \(result.message)"])
            return .failure(Refusal(text(400, "not a realtime request")))
        }
        guard let (app, requirements) = RealtimeBinding.app(for: decoded, among: apps) else {
            metrics.reject("unknown_app")
            logger.warning(
                "realtime request of an unconfigured app",
                metadata: [
                    "app_apple_id": "\(decoded.appAppleId)", "environment": "\(decoded.environmentRaw.prefix(64))",
                ])
            return .failure(Refusal(text(403, "not a request of a configured app")))
        }
        let bound =
            verifier.verifyIfChainCached(jws, kind: .realtimeRequest, requirements: requirements)
            ?? verifier.verify(jws, kind: .realtimeRequest, requirements: requirements)
        guard bound.isVerified else {
            metrics.reject("unknown_app")
            logger.warning("realtime request refused", metadata: ["app": "\(app.name)", "reason": "\(bound.message)"])
            return .failure(Refusal(text(403, "not a request of a configured app")))
        }
        return .success((app, decoded))
    }

    /// An HTTP refusal, as a typed error.
    struct Refusal: Error {
        let response: HTTPResponse
        init(_ response: HTTPResponse) { self.response = response }
    }

    private func text(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("content-type", "text/plain; charset=utf-8")], body: Array((body + "\n").utf8))
    }
}
