import AppStoreDomain
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// `appstore-gateway state export`: every subscription record and one-time purchase the state holds, one row each
/// (`columns`), for a warehouse load (docs/subscription-state.md, "Export").
///
/// Each row is derived at one instant, the export's, by the functions the RPCs answer with: a record's state by
/// `SubscriptionRecord.state(at:policy:)` under its app's policy, as GetSubscription derives it from a stored
/// record, and a purchase's grant by `CustomerView.grant(of:policy:)`, as GetCustomer does. Apple is never asked:
/// where GetSubscription would first ask Apple to confirm a record past its expiry, the row says `stale`, as
/// GetSubscription's answer does when Apple cannot confirm in time.
///
/// The store is read through `SubscriptionStore` one page at a time (`recordKeys(after:limit:)` and `record(_:)`,
/// then `purchases(after:limit:)`), so memory stays bounded by a page whatever the state's size; a record or
/// purchase written during the export may or may not be in it. Records and purchases of a bundle id no app is
/// configured with any more are left out and counted (`skipped`): no app gives their policy, and no RPC answers
/// for them either.
package struct SubscriptionStateExport: Sendable {
    /// The columns, in order: the header row.
    package static let columns = [
        "kind", "app", "bundle_id", "environment", "original_transaction_id", "transaction_id",
        "subscription_group_identifier", "product_id", "status", "status_name", "entitled", "entitlements",
        "expires_date", "grace_period_expires_date", "auto_renew", "auto_renew_product_id", "in_billing_retry",
        "revocation_date", "ownership_type", "app_account_token", "stale", "version", "updated_at", "source",
    ]

    /// Keys (or purchases) read from the store per page.
    package static let pageSize = 256

    /// The instant every row is derived at (UNIX ms).
    package let nowMillis: Int64
    /// Subscription rows returned so far.
    package private(set) var subscriptions = 0
    /// Purchase rows returned so far.
    package private(set) var purchases = 0
    /// Records and purchases left out so far: their bundle id is no configured app's.
    package private(set) var skipped = 0

    private let states: SubscriptionStates
    private let bundleId: String?
    private let environment: Environment?
    private var phase = Phase.records(after: nil)

    private enum Phase {
        case records(after: SubscriptionKey?)
        case purchases(after: PurchaseKey?)
        case done
    }

    /// An export of `states` at `nowMillis`: every app's (or only `bundleId`'s), every environment's (or only
    /// `environment`'s).
    init(states: SubscriptionStates, bundleId: String?, environment: Environment?, nowMillis: Int64) {
        self.states = states
        self.bundleId = bundleId
        self.environment = environment
        self.nowMillis = nowMillis
    }

    /// The next rows (at least one), each with `columns.count` fields: the subscriptions in key order, then the
    /// purchases in key order; nil once every row was returned. A store failure is `.stateStoreUnavailable`.
    package mutating func nextRows() async throws(GatewayError) -> [[String]]? {
        while true {
            let rows: [[String]]
            switch phase {
            case .records(let after):
                rows = try await recordRows(after: after)
            case .purchases(let after):
                rows = try await purchaseRows(after: after)
            case .done:
                return nil
            }
            if !rows.isEmpty { return rows }
        }
    }

    /// Whether a stored key belongs to the export.
    private func selects(bundleId: String, environment: Environment) -> Bool {
        (self.bundleId.map { $0 == bundleId } ?? true) && (self.environment.map { $0 == environment } ?? true)
    }

    /// One page of record keys, the selected ones read and derived; moves the phase on.
    private mutating func recordRows(after: SubscriptionKey?) async throws(GatewayError) -> [[String]] {
        let keys: [SubscriptionKey]
        do {
            keys = try await states.store.recordKeys(after: after, limit: Self.pageSize)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        phase = keys.last.map { .records(after: $0) } ?? .purchases(after: nil)
        var rows: [[String]] = []
        for key in keys where selects(bundleId: key.bundleId, environment: key.environment) {
            guard let app = states.apps.app(bundleId: key.bundleId) else {
                skipped += 1
                continue
            }
            // Gone since its key was read (a rebuild under way): not in the state any more.
            guard let record = try await states.storedRecord(key, remember: false) else { continue }
            rows.append(Self.row(record, state: record.state(at: nowMillis, policy: states.policy(of: app)), app: app))
        }
        subscriptions += rows.count
        return rows
    }

    /// One page of purchases, the selected ones derived; moves the phase on.
    private mutating func purchaseRows(after: PurchaseKey?) async throws(GatewayError) -> [[String]] {
        let page: [StoredPurchase]
        do {
            page = try await states.store.purchases(after: after, limit: Self.pageSize)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        phase = page.last.map { .purchases(after: $0.key) } ?? .done
        var rows: [[String]] = []
        for stored in page where selects(bundleId: stored.key.bundleId, environment: stored.key.environment) {
            guard let app = states.apps.app(bundleId: stored.key.bundleId) else {
                skipped += 1
                continue
            }
            let grant = CustomerView.grant(of: stored.purchase, policy: states.policy(of: app))
            rows.append(Self.row(stored, grant: grant, app: app))
        }
        purchases += rows.count
        return rows
    }

    /// A subscription's row: its state at the export's instant.
    static func row(_ record: SubscriptionRecord, state: DerivedSubscription, app: App) -> [String] {
        [
            "subscription", app.name, record.key.bundleId, AppleNames.environment(record.key.environment),
            record.key.originalTransactionId, state.transaction?.payload.transactionId ?? "",
            state.subscriptionGroupIdentifier, state.productId, String(state.status.rawValue),
            statusName(state.status), flag(state.entitled), state.entitlements.joined(separator: ";"),
            time(state.expiresDateMillis), time(state.gracePeriodExpiresDateMillis), flag(state.autoRenew),
            state.autoRenewProductId, flag(state.inBillingRetry), time(state.revocationDateMillis),
            state.transaction.map { AppleNames.ownership($0.payload) } ?? "", state.appAccountToken,
            flag(state.needsConfirmation), String(record.version),
            time(record.updatedAtMillis > 0 ? record.updatedAtMillis : nil), record.source?.rawValue ?? "",
        ]
    }

    /// A one-time purchase's row: what it grants. Apple's status, the period, renewal and version columns are
    /// a subscription's: empty.
    static func row(_ stored: StoredPurchase, grant: PurchaseGrant, app: App) -> [String] {
        let payload = stored.purchase.payload
        return [
            "purchase", app.name, payload.bundleId, AppleNames.environment(payload.environment),
            payload.originalTransactionId, payload.transactionId, payload.subscriptionGroupIdentifier,
            payload.productId, "", "", flag(grant.entitled), grant.entitlements.joined(separator: ";"), "", "", "",
            "", "", time(grant.revocationDateMillis), AppleNames.ownership(payload), payload.appAccountToken,
            flag(false), "", time(stored.updatedAtMillis), stored.source.rawValue,
        ]
    }

    /// The analysts' view's names of Apple's statuses (`subscription_state.status_name`).
    static func statusName(_ status: SubscriptionStatus) -> String {
        switch status {
        case .active: "active"
        case .expired: "expired"
        case .billingRetry: "billing_retry"
        case .billingGracePeriod: "billing_grace_period"
        case .revoked: "revoked"
        case .unspecified, .unrecognized: "none"
        }
    }

    static func flag(_ value: Bool) -> String { value ? "true" : "false" }

    /// RFC 3339 in UTC with milliseconds; empty when absent.
    static func time(_ millis: Int64?) -> String { millis.map { RFC3339.string(milliseconds: $0) } ?? "" }
}

extension SubscriptionStateService {
    /// `appstore-gateway state export`: the state's rows at this instant, of every app or only `app` (a configured
    /// name or bundle id: `.unknownApp` otherwise), of every environment or only `environment`. Throws
    /// `.stateNotKept` on a gateway that keeps no state.
    package func export(app: String?, environment: AppleEnvironment?) throws(GatewayError) -> SubscriptionStateExport {
        guard let states else { throw GatewayError.stateNotKept(unavailable ?? "no store for it is configured") }
        let bundleId = try app.map { name throws(GatewayError) in try states.apps.app(named: name).bundleId }
        return SubscriptionStateExport(
            states: states, bundleId: bundleId, environment: environment?.protoEnvironment,
            nowMillis: states.nowMillis)
    }
}
