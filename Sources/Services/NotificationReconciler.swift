import AppStoreClient
import AppStoreDomain
import GRPC
import GatewayFoundation
import Logging
import Metrics
import NotificationStore
import ProtoCodec
import SignedData

/// Nothing lost: every `interval`, compares Apple's notification history of the last `window` with the
/// store, and stores (backfills) what Apple sent while the receiver was down or failing; also prunes
/// entries older than the retention, even when comparisons are off (`Schedule`). Followers see backfilled
/// entries as live ones; a notification signed before the retention is never backfilled (it could be one
/// already pruned, which followers would see again).
package struct NotificationReconciler: Sendable {
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let apps: [App]
    let feed: LiveNotificationFeed
    let clock: any GatewayClock
    let window: Duration
    let retention: NotificationRetention
    let logger = Logger(label: "appstore-gateway.reconciler")

    /// When the reconciler works: a pass every `interval`, each pruning the store and, when `reconciles`,
    /// comparing with Apple first.
    package struct Schedule: Sendable, Hashable {
        package var interval: Duration
        package var reconciles: Bool
        /// How often the store is pruned when comparisons are off.
        package static let pruneOnlyInterval = Duration.seconds(600)

        /// The schedule of `notifications.store.reconcileInterval`: nil (0 in the key) turns comparisons off;
        /// the store is still pruned every `pruneOnlyInterval`.
        package init(reconcileInterval: Duration?) {
            reconciles = reconcileInterval != nil
            interval = reconcileInterval ?? Self.pruneOnlyInterval
        }
    }

    init(
        client: AppStoreAPIClient, verifier: SignedDataVerifier, apps: [App],
        feed: LiveNotificationFeed, clock: any GatewayClock, window: Duration, retention: NotificationRetention
    ) {
        self.client = client
        self.verifier = verifier
        self.apps = apps
        self.feed = feed
        self.clock = clock
        self.window = window
        self.retention = retention
    }

    /// The fleet lease of the reconciler: one replica of a fleet compares with Apple and prunes the shared store.
    static let lease = "notification-reconciler"

    /// Runs a `pass` at once and then every `schedule.interval` until the task is cancelled, while this replica
    /// holds the reconciler's lease in `fleet` (a replica that takes the lease over passes at once).
    package func run(_ schedule: Schedule, fleet: FleetLease = .soleReplica) async {
        await fleet.run(Self.lease) {
            while !Task.isCancelled {
                await pass(reconciling: schedule.reconciles)
                try? await Task.sleep(for: schedule.interval)
            }
        }
    }

    /// One pass: `reconcileOnce` when `reconciling`, then `prune`.
    package func pass(reconciling: Bool) async {
        if reconciling { _ = await reconcileOnce() }
        _ = await prune()
    }

    /// Deletes the entries that arrived longer ago than the retention; returns how many went (0 when the
    /// store fails: logged, tried again at the next pass).
    @discardableResult
    package func prune() async -> Int {
        let cutoff = retention.pruneCutoff(now: clock.wallNow().millisecondsSince1970)
        do throws(NotificationStoreFailure) {
            let pruned = try await feed.store.prune(receivedBefore: cutoff)
            if pruned > 0 { logger.info("pruned notifications past retention", metadata: ["count": "\(pruned)"]) }
            return pruned
        } catch {
            logger.warning("cannot prune the notification store", metadata: ["error": "\(error.message)"])
            return 0
        }
    }

    /// One pass over every app and environment; returns how many notifications were backfilled.
    @discardableResult
    package func reconcileOnce() async -> Int {
        var backfilled = 0
        for app in apps {
            for environment in Self.environments(app) {
                do throws(GatewayError) {
                    backfilled += try await reconcile(app, environment)
                } catch {
                    logger.warning(
                        "cannot reconcile with Apple's notification history",
                        metadata: [
                            "app": "\(app.name)", "environment": "\(environment.rawValue)",
                            "error": "\(error.rpcStatus.message)",
                        ])
                }
            }
        }
        return backfilled
    }

    static func environments(_ app: App) -> [AppleEnvironment] {
        switch app.environment {
        case .production: app.appAppleId == nil ? [] : [.production]
        case .sandbox: [.sandbox]
        case .auto: app.appAppleId == nil ? [.sandbox] : [.production, .sandbox]
        case .xcode: []  // Apple keeps no history of Xcode data
        }
    }

    private func reconcile(_ app: App, _ environment: AppleEnvironment) async throws(GatewayError)
        -> Int
    {
        let now = clock.wallNow()
        let oldest = now - NotificationHistoryRequestBody.retention(in: environment) + .seconds(60)
        // Nothing signed before the store's retention: it could be a notification already pruned.
        let kept = WallTime(millisecondsSince1970: retention.pruneCutoff(now: now.millisecondsSince1970))
        let start = max(now - window, oldest, kept)
        let body = NotificationHistoryRequestBody(
            startDate: start.millisecondsSince1970, endDate: now.millisecondsSince1970)
        let requirements: VerificationRequirements
        do {
            requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId,
                environment: AppStoreEnvironment(environment))
        } catch {
            return 0
        }
        var token: String?
        var backfilled = 0
        var pages = 0
        repeat {
            let page = try await client.notificationHistory(
                body: body, paginationToken: token, app: app, environment: environment, deadline: nil)
            pages += 1
            for item in page.items {
                let result =
                    await verifier.verifyOnline(item.signedPayload, kind: .notification, requirements: requirements)
                guard result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result),
                    !notification.notificationUuid.isEmpty, let signed = notification.signedDate?.unixMilliseconds
                else { continue }
                if retention.isStale(signedDate: signed, now: clock.wallNow().millisecondsSince1970) {
                    feed.metrics.stale?.labels(app.name, "backfill").increment()
                    continue
                }
                let entry = NewNotification(
                    uuid: notification.notificationUuid, signedDate: signed, bundleId: app.bundleId,
                    environment: result.environment?.rawValue ?? environment.appleName,
                    notificationType: notification.notificationTypeRaw, subtype: notification.subtypeRaw,
                    signedPayload: item.signedPayload)
                do throws(NotificationStoreFailure) {
                    if case .stored = try await feed.store.insert(
                        entry, receivedAt: clock.wallNow().millisecondsSince1970)
                    {
                        backfilled += 1
                        feed.metrics.backfilled?.labels(app.name).increment()
                        feed.metrics.stored?.labels(app.name, "backfill").increment()
                        logger.notice(
                            "backfilled a notification the webhook missed",
                            metadata: [
                                "app": "\(app.name)", "notification_uuid": "\(entry.uuid)",
                                "notification_type": "\(entry.notificationType)",
                            ])
                    }
                } catch {
                    throw GatewayError.notificationStoreUnavailable(error.message)
                }
            }
            token = page.hasMore && !page.paginationToken.isEmpty ? page.paginationToken : nil
        } while token != nil && pages < 500 && !Task.isCancelled
        return backfilled
    }
}
