import AppStoreClient
import AppStoreDomain
import Cryptography
import GRPC
import GatewayFoundation
import Metrics
import NotificationStore
import ProtoCodec
import SignedData

/// What a followed stream reads besides Apple: the webhook's store and the followers' metrics.
package struct LiveNotificationFeed: Sendable {
    package let store: any NotificationStore
    package let metrics: NotificationMetrics
    /// How long a follower waits for the store's signal before looking again (another replica's inserts
    /// into a shared store raise no local signal).
    let pollInterval: Duration

    /// Where the subscription state is kept beside the log (nil: a store that cannot keep it).
    package let states: (any SubscriptionStore)?
    /// The subscription state's series.
    package let stateMetrics: SubscriptionStateMetrics
    /// Where the outbound sinks keep their progress beside the log (nil: a store that cannot keep it).
    package let sinks: (any EventSinkStore)?

    package init(
        store: any NotificationStore, metrics: NotificationMetrics, states: (any SubscriptionStore)? = nil,
        stateMetrics: SubscriptionStateMetrics = SubscriptionStateMetrics(registry: nil),
        sinks: (any EventSinkStore)? = nil
    ) {
        self.store = store
        self.metrics = metrics
        self.states = states
        self.stateMetrics = stateMetrics
        self.sinks = sinks
        pollInterval = store.isShared ? .milliseconds(200) : .seconds(2)
    }
}

/// StreamNotifications with `follow`: a catch-up, then live notifications until the caller cancels.
///
/// The catch-up merges Apple's history of the window with the store's entries of that window (those
/// stored before the stream started, up to the `snapshot` position), in signedDate order, each
/// notificationUUID once. Then entries stored after the snapshot stream as they arrive. Each event
/// carries a resume token (`FollowPosition`) covering either part. The store is the follower's buffer: a
/// follower reads it at its own pace (a batch at a time, each `send` waiting for a slow client), so a slow
/// follower holds one batch in memory, never a backlog.
extension StreamNotificationsHandler {
    /// A checked followed request.
    package struct FollowPlan: Sendable {
        let plan: Plan
        let filter: StoreFilter
        let resume: FollowPosition?
        let fingerprint: [UInt8]
    }

    /// Entries read from the store per query.
    static let followBatch = 50

    /// Validates a `follow` request (before any response header is sent).
    package func prepareFollow(_ request: StreamNotificationsRequest) throws(GatewayError) -> FollowPlan {
        guard live != nil else {
            throw .invalidArgument(
                field: "follow", problem: "needs the gateway's notification webhook (notifications.webhook.listen)")
        }
        if !request.transactionId.isEmpty {
            throw .invalidArgument(field: "transaction_id", problem: "cannot be combined with follow")
        }
        if request.onlyFailures {
            throw .invalidArgument(field: "only_failures", problem: "cannot be combined with follow")
        }
        let now = clock.wallNow().millisecondsSince1970
        var checked = request
        checked.resumeToken = ""
        checked.follow = false
        if checked.endDate == nil { checked.endDate = ProtoTimestamp(unixMilliseconds: now) }
        let base = try prepare(checked)
        let fingerprint = Self.followFingerprint(
            request, bundleID: base.app.bundleId, environment: base.environment,
            caller: CallerIdentity.current?.identity)
        var resume: FollowPosition?
        var body = base.body
        body.endDate = min(body.endDate, now)
        if !request.resumeToken.isEmpty {
            let position = try followTokens.decode(request.resumeToken, now: clock.wallNow())
            guard position.bundleID == base.app.bundleId, position.filterHash == fingerprint else {
                throw .invalidArgument(
                    field: "resume_token",
                    problem:
                        "was issued for a stream with other filters; resend exactly the app, start_date, end_date, "
                        + "notification_type, notification_subtype, environment and follow of the stream it came from")
            }
            body.endDate = position.windowEnd
            resume = position
        }
        // The checked plan with the followed window: strict_verification and the paging environment carry over.
        let plan = Plan(
            app: base.app, body: body, environment: base.environment, fingerprint: fingerprint, resume: nil,
            resumeText: nil, strictVerification: base.strictVerification, pagingEnvironment: base.pagingEnvironment)
        let filter = StoreFilter(
            bundleId: base.app.bundleId,
            environment: base.environment.map(\.appleName),
            notificationType: body.notificationType, subtype: body.notificationSubtype, start: body.startDate,
            end: body.endDate)
        return FollowPlan(plan: plan, filter: filter, resume: resume, fingerprint: fingerprint)
    }

    /// SHA-256 of a followed stream's filters as the caller sent them (an absent end_date stays absent, so
    /// the same request resumes the same stream) and of the caller it was served to, as `fingerprint` binds
    /// a history stream's token to its caller.
    static func followFingerprint(
        _ request: StreamNotificationsRequest, bundleID: String, environment: AppleEnvironment?, caller: String?
    ) -> [UInt8] {
        var parts = [
            "follow-v1", bundleID, environment?.rawValue ?? "", String(request.startDate?.unixMilliseconds ?? -1),
            String(request.endDate?.unixMilliseconds ?? -1), request.notificationType, request.notificationSubtype,
        ]
        if let caller { parts.append("caller:" + caller) }
        return SHA256.hash(Array(parts.joined(separator: "\n").utf8))
    }

    /// Streams `follow` until cancelled (or the call's deadline, or a failure).
    package func runFollow(
        _ follow: FollowPlan, remaining: Duration?,
        send: @escaping @Sendable (NotificationEvent, _ shutdownStatus: RPCStatus) async throws(RPCStatus) -> Void
    ) async throws(RPCStatus) {
        guard let live else { throw GatewayError.internalBug("follow without a store", requestID: nil).rpcStatus }
        let deadline = remaining.map { clock.monotonicNow() + $0 }
        var position: FollowPosition
        if let resume = follow.resume {
            position = resume
        } else {
            do throws(NotificationStoreFailure) {
                position = FollowPosition(
                    bundleID: follow.plan.app.bundleId, filterHash: follow.fingerprint,
                    windowEnd: follow.plan.body.endDate,
                    snapshot: try await live.store.lastPosition())
            } catch {
                throw GatewayError.notificationStoreUnavailable(error.message).rpcStatus
            }
        }
        var lastToken = follow.resume == nil ? nil : Optional(followTokens.encode(position))
        /// Emits `event` with the token of `position`.
        func emit(_ event: NotificationEvent) async throws(RPCStatus) {
            var event = event
            position.issuedAt = clock.wallNow().millisecondsSince1970
            let token = followTokens.encode(position)
            event.resumeToken = token
            try await send(
                event,
                GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                    "resume_token", token, domain: gatewayErrorDomain))
            lastToken = token
        }
        func failing(_ error: GatewayError) -> RPCStatus {
            var status = error.rpcStatus
            if let lastToken {
                status = status.addingInfoMetadata("resume_token", lastToken, domain: gatewayErrorDomain)
            }
            return status
        }

        // Apple's UUIDs emitted by this call: a late copy in the store's live part is not sent again.
        var appleEmitted = Set<String>()
        if !position.live {
            typealias AppleItem = (
                event: NotificationEvent, uuid: String, signedDate: Int64, at: FollowPosition.ApplePosition,
                storedAt: StorePosition?
            )
            var paging = NotificationPaging(
                resumingAt: position.apple.map {
                    (pageToken: $0.pageToken, index: $0.index, environment: $0.environment)
                })
            var appleExhausted = position.appleDone
            var appleQueue: [AppleItem] = []
            var storeQueue: [StoredNotification] = []
            var storeExhausted = false
            catchUp: while true {
                if Task.isCancelled { throw GatewayError.cancelled.rpcStatus }
                let step = FollowMerge.next(
                    appleHead: appleQueue.first?.signedDate, appleDone: appleExhausted,
                    storeHead: storeQueue.first?.notification.signedDate, storeDone: storeExhausted)
                switch step {
                case .fetchStore:
                    do throws(NotificationStoreFailure) {
                        storeQueue = try await live.store.window(
                            matching: follow.filter, through: position.snapshot, after: position.storeKey,
                            limit: Self.followBatch)
                    } catch {
                        throw failing(.notificationStoreUnavailable(error.message))
                    }
                    storeExhausted = storeQueue.count < Self.followBatch
                case .fetchApple:
                    guard let request = paging.next else {
                        appleExhausted = true
                        continue catchUp
                    }
                    let page: NotificationHistoryPage
                    do throws(GatewayError) {
                        page = try await self.page(request, of: follow.plan, deadline: deadline)
                    } catch {
                        throw failing(error)
                    }
                    let emissions = paging.receive(page.pagingSummary, for: request)
                    var arrived: [AppleItem] = []
                    for emission in emissions {
                        let event: NotificationEvent
                        do throws(GatewayError) {
                            event = try await self.event(for: page.items[emission.index], page: page, plan: follow.plan)
                        } catch {
                            throw failing(error)
                        }
                        arrived.append(
                            (
                                event, event.notification?.notificationUuid ?? "",
                                event.notification?.signedDate?.unixMilliseconds ?? 0,
                                .init(
                                    pageToken: emission.pageToken, index: emission.index,
                                    environment: emission.environment),
                                nil
                            ))
                    }
                    // Which of the page's notifications the store holds too: one query for the whole page.
                    let stored: [String: StorePosition]
                    do throws(NotificationStoreFailure) {
                        stored = try await live.store.positions(ofUUIDs: arrived.map(\.uuid).filter { !$0.isEmpty })
                    } catch {
                        throw failing(.notificationStoreUnavailable(error.message))
                    }
                    for var item in arrived {
                        item.storedAt = stored[item.uuid]
                        appleQueue.append(item)
                    }
                    if paging.next == nil { appleExhausted = appleQueue.isEmpty }
                    if paging.ending == .missingToken {
                        throw failing(
                            .appleDataRejected(
                                app: follow.plan.app.name, environment: page.environment,
                                problem: "a notification history page has hasMore true but no paginationToken"))
                    }
                case .emitStore:
                    let entry = storeQueue.removeFirst()
                    position.storeKey = entry.key
                    let event: NotificationEvent?
                    do throws(GatewayError) {
                        event = try await storedEvent(entry, app: follow.plan.app)
                    } catch {
                        throw failing(error)
                    }
                    if let event { try await emit(event) }
                case .emitApple:
                    let item = appleQueue.removeFirst()
                    position.apple = item.at
                    if appleQueue.isEmpty && paging.next == nil {
                        appleExhausted = true
                        position.appleDone = true
                    }
                    // The store's copy (stored before the snapshot) is, or was, emitted in its place.
                    if let stored = item.storedAt, stored <= position.snapshot { continue catchUp }
                    appleEmitted.insert(item.uuid)
                    try await emit(item.event)
                case .catchUpDone:
                    break catchUp
                }
            }
            position.live = true
            position.appleDone = true
            position.liveCursor = max(position.liveCursor, position.snapshot)
        }

        live.metrics.followers?.increment()
        defer { live.metrics.followers?.decrement() }
        var filter = follow.filter
        filter.start = Int64.min
        filter.end = Int64.max
        while true {
            if Task.isCancelled { throw GatewayError.cancelled.rpcStatus }
            if let deadline, clock.monotonicNow() >= deadline {
                throw failing(.deadlineExceeded(whileDoing: "following live notifications"))
            }
            let seen = live.store.signal.generation
            let page: StorePage
            do throws(NotificationStoreFailure) {
                page = try await live.store.entries(
                    after: position.liveCursor, matching: filter, limit: Self.followBatch)
            } catch {
                throw failing(.notificationStoreUnavailable(error.message))
            }
            for entry in page.entries {
                position.liveCursor = entry.position
                guard !appleEmitted.contains(entry.notification.uuid) else { continue }
                let stored: NotificationEvent?
                do throws(GatewayError) {
                    stored = try await storedEvent(entry, app: follow.plan.app)
                } catch {
                    throw failing(error)
                }
                guard let event = stored else { continue }
                try await emit(event)
                let lag = clock.wallNow().millisecondsSince1970 - entry.receivedAt
                live.metrics.lag?.observe(Double(max(0, lag)) / 1000)
            }
            let moved = page.through > position.liveCursor
            position.liveCursor = max(position.liveCursor, page.through)
            if page.entries.isEmpty && !moved {
                var wait = live.pollInterval
                if let deadline { wait = min(wait, max(.milliseconds(1), deadline - clock.monotonicNow())) }
                await live.store.signal.wait(past: seen, timeout: wait)
            }
        }
    }

    /// A stored notification as an event, verified again and decoded; nil when it no longer verifies (the
    /// trusted roots changed since it was stored). Every follower reads the same entries, so a payload this
    /// handler verified under the same requirements within `VerifiedNotificationCache.lifetime` is not
    /// verified again. With online checks, a revocation status not cached is fetched; a responder that
    /// cannot be reached ends the stream UNAVAILABLE (to be resumed), so nothing is skipped for want of an
    /// OCSP answer.
    func storedEvent(_ entry: StoredNotification, app: App) async throws(GatewayError)
        -> NotificationEvent?
    {
        guard let environment = AppStoreEnvironment(rawValue: entry.notification.environment),
            let requirements = try? VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment)
        else { return nil }
        let payload = entry.notification.signedPayload
        let key = VerifiedNotificationCache.key(payload: payload, requirements: requirements)
        var event = NotificationEvent()
        event.signedPayload = payload
        if let notification = verifiedStored.notification(for: key, now: clock.monotonicNow()) {
            event.notification = notification
            return event
        }
        let result =
            await verifier.verifyOffLoopUnlessCached(payload, kind: .notification, requirements: requirements)
        if result.status == .retryableFailure {
            throw .revocationStatusUnavailable(app: app.name, problem: "a stored notification: \(result.message)")
        }
        guard result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result) else {
            return nil
        }
        verifiedStored.remember(notification, for: key, now: clock.monotonicNow())
        event.notification = notification
        return event
    }
}
