/// Where the webhook's notifications are kept: an append-only log with one entry per `notificationUUID`,
/// read back by position (live followers) or by `signedDate` window (a follower's catch-up).
///
/// Every call may block on I/O, so implementations run it on their own thread, never on an event loop;
/// every failure is `NotificationStoreFailure` (the webhook answers 503 and Apple retries).
package protocol NotificationStore: Sendable {
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
    package func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure)
        -> StorePage
    {
        throw NotificationStoreFailure("this store does not list every app's entries")
    }
}

/// A notification to store: what the webhook verified.
package struct NewNotification: Sendable, Hashable {
    package var uuid: String
    /// Apple's `signedDate` (UNIX ms).
    package var signedDate: Int64
    package var bundleId: String
    /// Apple's environment name ("Production", "Sandbox").
    package var environment: String
    package var notificationType: String
    package var subtype: String
    /// The notification JWS exactly as Apple sent it.
    package var signedPayload: String

    package init(
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
package struct StorePage: Sendable, Hashable {
    package var entries: [StoredNotification]
    /// Continue after this position (at least that of the last entry).
    package var through: StorePosition
    package init(entries: [StoredNotification], through: StorePosition) {
        self.entries = entries
        self.through = through
    }
}

/// A stored notification and its position.
package struct StoredNotification: Sendable, Hashable {
    package var position: StorePosition
    /// When the gateway stored it (UNIX ms).
    package var receivedAt: Int64
    package var notification: NewNotification

    package init(position: StorePosition, receivedAt: Int64, notification: NewNotification) {
        self.position = position
        self.receivedAt = receivedAt
        self.notification = notification
    }

    /// Its place in a catch-up's (signedDate, position) order.
    package var key: WindowKey { WindowKey(signedDate: notification.signedDate, position: position) }
}

/// Where an entry sits in the log: SQLite's row id (`major`, `minor` 0), or a Redis stream id
/// (`major`-`minor`). Later entries have larger positions; positions are never reused.
package struct StorePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var major: UInt64
    package var minor: UInt64
    package init(major: UInt64, minor: UInt64 = 0) {
        self.major = major
        self.minor = minor
    }
    package static let zero = StorePosition(major: 0)
    package static func < (lhs: StorePosition, rhs: StorePosition) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
    package var description: String { "\(major)-\(minor)" }
}

/// A place in a catch-up's order.
package struct WindowKey: Sendable, Hashable, Comparable {
    package var signedDate: Int64
    package var position: StorePosition
    package init(signedDate: Int64, position: StorePosition) {
        self.signedDate = signedDate
        self.position = position
    }
    package static func < (lhs: WindowKey, rhs: WindowKey) -> Bool {
        (lhs.signedDate, lhs.position) < (rhs.signedDate, rhs.position)
    }
}

/// Which entries a stream wants.
package struct StoreFilter: Sendable, Hashable {
    package var bundleId: String
    /// Apple's environment name; nil = any.
    package var environment: String?
    /// Apple's notificationType; nil = any.
    package var notificationType: String?
    /// Apple's subtype; nil = any.
    package var subtype: String?
    /// The signedDate window, UNIX ms, `start` included, `end` excluded (only `window` reads it).
    package var start: Int64
    package var end: Int64

    package init(
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
    package func accepts(_ notification: NewNotification) -> Bool {
        notification.bundleId == bundleId && (environment.map { $0 == notification.environment } ?? true)
            && (notificationType.map { $0 == notification.notificationType } ?? true)
            && (subtype.map { $0 == notification.subtype } ?? true)
    }

    /// Whether `notification` passes every filter and the window.
    package func acceptsInWindow(_ notification: NewNotification) -> Bool {
        accepts(notification) && notification.signedDate >= start && notification.signedDate < end
    }
}

/// Whether an insert stored a new entry or found the UUID already there.
package enum InsertOutcome: Sendable, Hashable {
    case stored(StorePosition)
    case duplicate(StorePosition)
}

/// The store could not do what was asked (disk, database, Redis): callers retry later, unless `kind` says
/// retrying cannot help.
package struct NotificationStoreFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Whether retrying can help.
    package enum Kind: Sendable, Hashable {
        /// The store could not be reached, read or written now (disk, database, Redis): retry later.
        case unavailable
        /// What the store holds does not read back (a damaged row): the same call fails again.
        case corrupt
        /// The call would keep or load more than the store's bounds allow (`SubscriptionStoreLimits`).
        case limitExceeded
    }

    package var message: String
    /// Whether retrying can help; `.unavailable` unless said otherwise.
    package var kind: Kind
    package init(_ message: String, kind: Kind = .unavailable) {
        self.message = message
        self.kind = kind
    }
    package var description: String { message }
}

/// Bounds shared by the stores.
package enum NotificationStoreLimits {
    /// Most UUIDs looked up in one query (`positions(ofUUIDs:)` splits longer lists).
    package static let lookupBatch = 100
}
