import AppStoreClient
import Dispatch
import GatewayCore

/// The store shared by every replica: one Redis stream (`<prefix>notifications`) of entries, and one key
/// per notificationUUID (`<prefix>notification:<uuid>` → stream id, expiring with the retention) that
/// makes inserts idempotent. A Lua script checks the key and appends in one step, so two replicas
/// receiving the same notification store it once. Positions are stream ids.
///
/// Durability is Redis's: the 200 follows Redis's acknowledgement, which is on disk only with
/// `appendonly yes` and `appendfsync always` (with `everysec`, a Redis crash may lose the last second).
public final class RedisNotificationStore: NotificationStore, @unchecked Sendable {
    // @unchecked: `connection` is touched only on `queue`.
    private let queue = DispatchQueue(label: "appstore-gateway.notification-store.redis")
    private let connection: RedisConnection
    private let streamKey: String
    private let uuidPrefix: String
    private let retentionMilliseconds: Int64
    public let signal = LiveSignal()
    public var isShared: Bool { true }
    /// Stream entries read per XRANGE while scanning.
    static let scanBatch = 200

    static let insertScript = """
        local existing = redis.call('GET', KEYS[2])
        if existing then return {0, existing} end
        local id = redis.call('XADD', KEYS[1], '*', 'uuid', ARGV[1], 'signedDate', ARGV[2], 'receivedAt', ARGV[3],
          'bundleId', ARGV[4], 'environment', ARGV[5], 'type', ARGV[6], 'subtype', ARGV[7], 'payload', ARGV[8])
        redis.call('SET', KEYS[2], id, 'PX', ARGV[9])
        return {1, id}
        """

    /// A store in the Redis at `url`, keys prefixed with `keyPrefix`, entries kept `retention`.
    public init(url: RedisURL, keyPrefix: String, timeout: Duration, retention: Duration) {
        connection = RedisConnection(url: url, timeout: timeout)
        streamKey = keyPrefix + "notifications"
        uuidPrefix = keyPrefix + "notification:"
        retentionMilliseconds = max(1, retention.wholeMilliseconds)
    }

    private func run<Value: Sendable>(_ commands: [[String]], _ read: @escaping @Sendable ([RedisReply]) -> Value?)
        async throws(NotificationStoreFailure) -> Value
    {
        let connection = UncheckedConnection(connection)
        let result: Result<Value, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Self.execute(commands, on: connection.value, read: read))
            }
        }
        return try result.get()
    }

    private static func execute<Value>(
        _ commands: [[String]], on connection: RedisConnection, read: ([RedisReply]) -> Value?
    )
        -> Result<Value, NotificationStoreFailure>
    {
        do throws(RedisConnectionFailure) {
            if !connection.isConnected { try connection.connect() }
            let replies = try connection.pipeline(commands)
            for case .error(let message) in replies {
                return .failure(NotificationStoreFailure("Redis store: \(message)"))
            }
            guard let value = read(replies) else {
                connection.close()
                return .failure(NotificationStoreFailure("Redis store: an unexpected reply"))
            }
            return .success(value)
        } catch {
            return .failure(NotificationStoreFailure("Redis store: \(error.message)"))
        }
    }

    public func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    {
        let command = [
            "EVAL", Self.insertScript, "2", streamKey, uuidPrefix + notification.uuid, notification.uuid,
            String(notification.signedDate), String(receivedAt), notification.bundleId, notification.environment,
            notification.notificationType, notification.subtype, notification.signedPayload,
            String(retentionMilliseconds),
        ]
        let outcome = try await run([command]) { replies -> InsertOutcome? in
            guard case .array(let parts)? = replies.first, parts.count == 2, case .integer(let stored) = parts[0],
                let id = parts[1].text, let position = Self.position(id)
            else { return nil }
            return stored == 1 ? .stored(position) : .duplicate(position)
        }
        if case .stored = outcome { signal.raise() }
        return outcome
    }

    public func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure) -> StorePage
    {
        let count = max(1, min(limit, Self.scanBatch))
        let entries = try await range(after: position, count: count)
        let matching = entries.filter { filter.accepts($0.notification) }
        return StorePage(entries: matching, through: entries.last?.position ?? position)
    }

    public func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    {
        // The stream is in arrival order: scan it all (it holds the retention period) for the window.
        var cursor = StorePosition.zero
        var found: [StoredNotification] = []
        scanning: while true {
            let batch = try await range(after: cursor, count: Self.scanBatch)
            for entry in batch {
                if entry.position > through { break scanning }
                if filter.acceptsInWindow(entry.notification), key.map({ entry.key > $0 }) ?? true {
                    found.append(entry)
                }
            }
            guard let last = batch.last, batch.count == Self.scanBatch else { break }
            cursor = last.position
            // Keep memory bounded: only the `limit` smallest keys matter.
            if found.count > 4 * max(1, limit) {
                found.sort { $0.key < $1.key }
                found.removeLast(found.count - max(1, limit))
            }
        }
        found.sort { $0.key < $1.key }
        return Array(found.prefix(max(1, limit)))
    }

    public func position(ofUUID uuid: String) async throws(NotificationStoreFailure) -> StorePosition? {
        try await run([["GET", uuidPrefix + uuid]]) { replies -> StorePosition?? in
            switch replies.first {
            case .null?: return .some(nil)
            case .string(let bytes)?: return Self.position(String(decoding: bytes, as: UTF8.self)).map { .some($0) }
            default: return nil
            }
        }
    }

    public func lastPosition() async throws(NotificationStoreFailure) -> StorePosition {
        try await run([["XREVRANGE", streamKey, "+", "-", "COUNT", "1"]]) { replies -> StorePosition? in
            guard case .array(let items)? = replies.first else { return nil }
            guard let first = items.first else { return .zero }
            return Self.entry(first)?.position
        }
    }

    public func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int {
        try await run([["XTRIM", streamKey, "MINID", "\(max(0, cutoff))-0"]]) { replies -> Int? in
            guard case .integer(let removed)? = replies.first else { return nil }
            return Int(clamping: removed)
        }
    }

    private func range(after position: StorePosition, count: Int) async throws(NotificationStoreFailure)
        -> [StoredNotification]
    {
        try await run([["XRANGE", streamKey, "(\(position.major)-\(position.minor)", "+", "COUNT", String(count)]]) {
            replies -> [StoredNotification]? in
            guard case .array(let items)? = replies.first else { return nil }
            var entries: [StoredNotification] = []
            for item in items {
                guard let entry = Self.entry(item) else { return nil }
                entries.append(entry)
            }
            return entries
        }
    }

    /// "1700000000000-3" → position.
    static func position(_ id: String) -> StorePosition? {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = UInt64(parts[0]), let minor = UInt64(parts[1]) else { return nil }
        return StorePosition(major: major, minor: minor)
    }

    /// One XRANGE item: [id, [field, value, …]].
    static func entry(_ item: RedisReply) -> StoredNotification? {
        guard case .array(let pair) = item, pair.count == 2, let id = pair[0].text, let position = position(id),
            case .array(let flat) = pair[1], flat.count % 2 == 0
        else { return nil }
        var fields: [String: String] = [:]
        for index in stride(from: 0, to: flat.count, by: 2) {
            guard let name = flat[index].text, let value = flat[index + 1].text else { return nil }
            fields[name] = value
        }
        guard let uuid = fields["uuid"], let signed = fields["signedDate"].flatMap({ Int64($0) }),
            let received = fields["receivedAt"].flatMap({ Int64($0) }), let bundle = fields["bundleId"],
            let environment = fields["environment"], let type = fields["type"], let payload = fields["payload"]
        else { return nil }
        return StoredNotification(
            position: position, receivedAt: received,
            notification: NewNotification(
                uuid: uuid, signedDate: signed, bundleId: bundle, environment: environment, notificationType: type,
                subtype: fields["subtype"] ?? "", signedPayload: payload))
    }
}

/// Carries the queue-confined connection into the queue's closure.
private struct UncheckedConnection: @unchecked Sendable {
    let value: RedisConnection
    init(_ value: RedisConnection) { self.value = value }
}
