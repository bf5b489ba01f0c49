import ProtoCodec
import SubscriptionState

/// (temporary stand-in until the store branch lands)
public protocol SubscriptionStore: Sendable {
    func apply(_ change: SubscriptionChange) async throws(NotificationStoreFailure) -> AppliedChange
    func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord?
    func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView
    func projectedThrough(bundleId: String) async throws(NotificationStoreFailure) -> StorePosition
    func setProjectedThrough(_ position: StorePosition, bundleId: String) async throws(NotificationStoreFailure)
    func recordCount() async throws(NotificationStoreFailure) -> Int
    func removeAll() async throws(NotificationStoreFailure)
}

public struct SubscriptionChange: Sendable {
    public var key: SubscriptionKey
    public var transaction: SignedTransaction?
    public var renewalInfo: SignedRenewalInfo?
    public var source: SnapshotSource
    public var nowMillis: Int64
    public init(
        key: SubscriptionKey, transaction: SignedTransaction?, renewalInfo: SignedRenewalInfo?,
        source: SnapshotSource, nowMillis: Int64
    ) {
        self.key = key
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.source = source
        self.nowMillis = nowMillis
    }
}

public struct AppliedChange: Sendable {
    public var record: SubscriptionRecord?
    public var purchase: SignedTransaction?
    public var changed: Bool
}

extension SQLiteNotificationStore {
    public var subscriptions: (any SubscriptionStore)? { nil }
}
