import AppStoreDomain
import Cryptography
import GRPC
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SubscriptionState

/// SubscriptionState.WatchSubscriptionEvents: the store's events of one app, from a resume token, from the
/// oldest retained or from now, then live as they are made, until the caller cancels. The store is the truth:
/// the stream reads it in position order (a page at a time, as the caller reads), so a stream resumed on any
/// replica sharing the store, or after any restart, continues exactly after the event whose token it carries.
struct SubscriptionEventsHandler: Sendable {
    /// Events read per page.
    static let page = 64
    /// The longest a stream waits for the store's signal before looking again (another process may have written).
    static let poll: Duration = .seconds(1)
    /// The longest `resume_token` accepted.
    static let maxTokenBytes = 1024

    let states: SubscriptionStates
    let tokens: SubscriptionEventTokenCodec

    /// A checked request: the app, the types asked for, where the stream starts and what its tokens are bound to.
    struct Call: Sendable {
        var app: App
        var types: Set<SubscriptionEventType>
        var binding: [UInt8]
        /// The position after which the stream starts; nil: the newest event when the stream starts.
        var after: Int64?
    }

    /// Checks `request` for `caller` (nil: a gateway without callers). INVALID_ARGUMENT for an unknown type, a
    /// garbled, altered or another caller's, app's or types' token.
    func prepare(_ request: WatchSubscriptionEventsRequest, caller: String?) throws(GatewayError) -> Call {
        var contract = RequestContract()
        contract.length(request.app, field: "app", max: RequestContract.maxAppBytes)
        contract.length(request.resumeToken, field: "resume_token", max: Self.maxTokenBytes)
        try contract.check()
        let app = try states.apps.app(named: request.app)
        var types = Set<SubscriptionEventType>()
        for type in request.types {
            guard case .unrecognized(let value) = type else {
                if type == .unspecified {
                    throw GatewayError.invalidArgument(
                        field: "types", problem: "holds SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED")
                }
                types.insert(type)
                continue
            }
            throw GatewayError.invalidArgument(field: "types", problem: "unknown SubscriptionEventType \(value)")
        }
        let binding = Self.binding(bundleId: app.bundleId, types: types, caller: caller)
        var after: Int64?
        if !request.resumeToken.isEmpty {
            after = try tokens.decode(request.resumeToken, binding: binding, now: states.clock.wallNow())
        } else if request.fromBeginning {
            after = 0
        }
        return Call(app: app, types: types, binding: binding, after: after)
    }

    /// Streams `call` until the caller cancels or goes away (`send` throws). A store failure ends the stream
    /// UNAVAILABLE with RetryInfo: the caller resumes with its last token.
    func run(
        _ call: Call, send: @Sendable (SubscriptionEvent, _ shutdownStatus: RPCStatus) async throws(RPCStatus) -> Void
    ) async throws(RPCStatus) {
        let store = states.store
        var position: Int64
        var prunedThrough: Int64 = 0
        do throws(NotificationStoreFailure) {
            if let after = call.after {
                position = after
                if after > 0 { prunedThrough = try await store.eventsPrunedThrough() }
            } else {
                position = try await store.lastEventPosition()
            }
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description).rpcStatus
        }
        // A token before what pruning deleted would skip events silently.
        if position > 0, position < prunedThrough {
            throw GatewayError.invalidArgument(
                field: "resume_token",
                problem: "continues after an event older than the events kept (subscriptions.eventRetention): events "
                    + "after it were deleted; start again with from_beginning and reconcile"
            ).rpcStatus
        }
        while !Task.isCancelled {
            let seen = store.eventSignal.generation
            let page: [StoredSubscriptionEvent]
            do {
                page = try await store.events(after: position, bundleId: call.app.bundleId, limit: Self.page)
            } catch {
                throw GatewayError.stateStoreUnavailable(error.description).rpcStatus
            }
            for stored in page {
                position = stored.position
                guard call.types.isEmpty || call.types.contains(stored.event.type) else { continue }
                var event = stored.event
                event.resumeToken = tokens.encode(
                    position: stored.position, binding: call.binding, issuedAt: states.nowMillis)
                // A shutdown ends the stream UNAVAILABLE with the token of the last event sent.
                let shutdown = GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                    "resume_token", event.resumeToken, domain: gatewayErrorDomain)
                try await send(event, shutdown)
            }
            if page.count == Self.page { continue }
            await store.eventSignal.wait(past: seen, timeout: Self.poll)
        }
    }

    /// What a token is bound to: the app, the types asked for and the caller.
    static func binding(bundleId: String, types: Set<SubscriptionEventType>, caller: String?) -> [UInt8] {
        let names = types.map { String($0.rawValue) }.sorted().joined(separator: ",")
        return SHA256.hash(
            Array(["subscription-events-v1", bundleId, names, "caller:" + (caller ?? "")].joined(separator: "\n").utf8))
    }
}

/// The wire form of a subscription-event resume token: base64url of
/// `version(1)=3 | issuedAt(i64) | position(i64) | binding(32) | HMAC-SHA256(32)`, integers big-endian, sealed
/// with the notification resume tokens' key ring (a version byte of its own, so no other kind passes for it).
struct SubscriptionEventTokenCodec: Sendable {
    static let version: UInt8 = 3
    private let envelope: ResumeTokenEnvelope

    /// A codec accepting tokens up to `maxAge` old (the events' retention: an older token names pruned events).
    init(ring: ResumeTokenKeyRing, maxAge: Duration) { envelope = ResumeTokenEnvelope(ring: ring, maxAge: maxAge) }

    func encode(position: Int64, binding: [UInt8], issuedAt: Int64) -> String {
        var body = TokenWriter()
        body.integer(UInt64(Self.version), width: 1)
        body.integer(UInt64(bitPattern: issuedAt), width: 8)
        body.integer(UInt64(bitPattern: position), width: 8)
        body.raw(binding)
        return envelope.seal(body)
    }

    /// The position after which the stream resumes.
    func decode(_ text: String, binding: [UInt8], now: WallTime) throws(GatewayError) -> Int64 {
        let invalid = GatewayError.invalidArgument(
            field: "resume_token",
            problem: "is not a subscription-event resume token this gateway issued to this caller for this app and "
                + "these types (garbled, altered, or signed with a key not in its notifications.resumeTokenKeyFile "
                + "ring); pass a SubscriptionEvent.resume_token unchanged with the same app and types")
        guard var reader = envelope.open(text, minimumBodyBytes: 1 + 8 + 8 + 32),
            reader.integer(1) == UInt64(Self.version), let issued = reader.integer(8),
            let position = reader.integer(8), let bound = reader.bytes(32), reader.isAtEnd,
            bound == binding
        else { throw invalid }
        try envelope.checkAge(issuedAt: Int64(bitPattern: issued), now: now, restartFrom: nil)
        return Int64(bitPattern: position)
    }
}
