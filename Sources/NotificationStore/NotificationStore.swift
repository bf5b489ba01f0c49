/// Where the webhook's notifications are kept: an append-only log with one entry per `notificationUUID`,
/// read back by position (live followers) or by `signedDate` window (a follower's catch-up).
///
/// Every call may block on I/O, so implementations run it on their own thread, never on an event loop;
/// every failure is `NotificationStoreFailure` (the webhook answers 503 and Apple retries).
public protocol NotificationStore: Sendable {
    /// Stores `notification` durably unless its UUID is already stored; returns where it is either way.
    func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    /// Entries after `position`, oldest first, at most `limit`, matching `filter` (its window aside), and
    /// how far the log was read: the position to continue after, even when nothing matched.
    func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure)
        -> StorePage
    /// Every app's entries after `position`, oldest first, at most `limit`, and how far the log was read (the
    /// subscription state's projection reads the whole log in order).
    func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure) -> StorePage
    /// Entries with `signedDate` in `filter`'s window and `position <= through`, ordered by (signedDate,
    /// position), strictly after `key` when given, at most `limit`.
    func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    /// The positions of the stored notifications among `uuids` (absent ones are left out), in one round trip
    /// per `NotificationStoreLimits.lookupBatch` UUIDs.
    func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition]
    /// The newest position (`.zero` when empty): everything stored so far is at or before it.
    func lastPosition() async throws(NotificationStoreFailure) -> StorePosition
    /// Deletes entries received before `cutoff` (UNIX ms); returns how many went.
    func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int
    /// Whether other processes may add entries (followers must poll; the local signal does not see them).
    var isShared: Bool { get }
    /// Raised after every local insert, so followers wake without polling.
    var signal: LiveSignal { get }
}

extension NotificationStore {
    /// A store that cannot list every app's entries at once (test doubles): a failure.
    public func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure)
        -> StorePage
    {
        throw NotificationStoreFailure("this store does not list every app's entries")
    }
}

/// A notification to store: what the webhook verified.
public struct NewNotification: Sendable, Hashable {
    public var uuid: String
    /// Apple's `signedDate` (UNIX ms).
    public var signedDate: Int64
    public var bundleId: String
    /// Apple's environment name ("Production", "Sandbox").
    public var environment: String
    public var notificationType: String
    public var subtype: String
    /// The notification JWS exactly as Apple sent it.
    public var signedPayload: String

    public init(
        uuid: String, signedDate: Int64, bundleId: String, environment: String, notificationType: String,
        subtype: String, signedPayload: String
    ) {
        self.uuid = uuid
        self.signedDate = signedDate
        self.bundleId = bundleId
        self.environment = environment
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedPayload = signedPayload
    }
}

/// Entries read after a position, and the position the read reached.
public struct StorePage: Sendable, Hashable {
    public var entries: [StoredNotification]
    /// Continue after this position (at least that of the last entry).
    public var through: StorePosition
    public init(entries: [StoredNotification], through: StorePosition) {
        self.entries = entries
        self.through = through
    }
}

/// A stored notification and its position.
public struct StoredNotification: Sendable, Hashable {
    public var position: StorePosition
    /// When the gateway stored it (UNIX ms).
    public var receivedAt: Int64
    public var notification: NewNotification

    public init(position: StorePosition, receivedAt: Int64, notification: NewNotification) {
        self.position = position
        self.receivedAt = receivedAt
        self.notification = notification
    }

    /// Its place in a catch-up's (signedDate, position) order.
    public var key: WindowKey { WindowKey(signedDate: notification.signedDate, position: position) }
}

/// Where an entry sits in the log: SQLite's row id (`major`, `minor` 0), or a Redis stream id
/// (`major`-`minor`). Later entries have larger positions; positions are never reused.
public struct StorePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: UInt64
    public var minor: UInt64
    public init(major: UInt64, minor: UInt64 = 0) {
        self.major = major
        self.minor = minor
    }
    public static let zero = StorePosition(major: 0)
    public static func < (lhs: StorePosition, rhs: StorePosition) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
    public var description: String { "\(major)-\(minor)" }
}

/// A place in a catch-up's order.
public struct WindowKey: Sendable, Hashable, Comparable {
    public var signedDate: Int64
    public var position: StorePosition
    public init(signedDate: Int64, position: StorePosition) {
        self.signedDate = signedDate
        self.position = position
    }
    public static func < (lhs: WindowKey, rhs: WindowKey) -> Bool {
        (lhs.signedDate, lhs.position) < (rhs.signedDate, rhs.position)
    }
}

/// Which entries a stream wants.
public struct StoreFilter: Sendable, Hashable {
    public var bundleId: String
    /// Apple's environment name; nil = any.
    public var environment: String?
    /// Apple's notificationType; nil = any.
    public var notificationType: String?
    /// Apple's subtype; nil = any.
    public var subtype: String?
    /// The signedDate window, UNIX ms, `start` included, `end` excluded (only `window` reads it).
    public var start: Int64
    public var end: Int64

    public init(
        bundleId: String, environment: String? = nil, notificationType: String? = nil, subtype: String? = nil,
        start: Int64 = 0, end: Int64 = Int64.max
    ) {
        self.bundleId = bundleId
        self.environment = environment
        self.notificationType = notificationType
        self.subtype = subtype
        self.start = start
        self.end = end
    }

    /// Whether `notification` passes every filter but the window.
    public func accepts(_ notification: NewNotification) -> Bool {
        notification.bundleId == bundleId && (environment.map { $0 == notification.environment } ?? true)
            && (notificationType.map { $0 == notification.notificationType } ?? true)
            && (subtype.map { $0 == notification.subtype } ?? true)
    }

    /// Whether `notification` passes every filter and the window.
    public func acceptsInWindow(_ notification: NewNotification) -> Bool {
        accepts(notification) && notification.signedDate >= start && notification.signedDate < end
    }
}

/// Whether an insert stored a new entry or found the UUID already there.
public enum InsertOutcome: Sendable, Hashable {
    case stored(StorePosition)
    case duplicate(StorePosition)
}

/// The store could not do what was asked (disk, database, Redis): callers retry later, unless `kind` says
/// retrying cannot help.
public struct NotificationStoreFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Whether retrying can help.
    public enum Kind: Sendable, Hashable {
        /// The store could not be reached, read or written now (disk, database, Redis): retry later.
        case unavailable
        /// What the store holds does not read back (a damaged row): the same call fails again.
        case corrupt
        /// The call would keep or load more than the store's bounds allow (`SubscriptionStoreLimits`).
        case limitExceeded
    }

    public var message: String
    /// Whether retrying can help; `.unavailable` unless said otherwise.
    public var kind: Kind
    public init(_ message: String, kind: Kind = .unavailable) {
        self.message = message
        self.kind = kind
    }
    public var description: String { message }
}

/// Bounds shared by the stores.
public enum NotificationStoreLimits {
    /// Most UUIDs looked up in one query (`positions(ofUUIDs:)` splits longer lists).
    public static let lookupBatch = 100
}
