import AppStoreClient
import Dispatch
import GatewayFoundation
import Redis
import Synchronization

/// The store shared by every replica: one Redis stream (`<prefix>notifications`) of entries, and one key
/// per notificationUUID (`<prefix>notification:<uuid>` → stream id, expiring with the retention) that
/// makes inserts idempotent. A Lua script checks the key and appends in one step, so two replicas
/// receiving the same notification store it once. Positions are stream ids.
///
/// The stream is in arrival order; a catch-up reads by (signedDate, position). So the script also adds
/// each entry to a sorted set (`<prefix>notifications:by-date`, every score 0) whose member is
/// `WindowIndex.member`: fixed-width text that sorts like (signedDate, position). A window page is then one
/// ZRANGEBYLEX from just after the last key returned plus one pipeline of XRANGE id id, so reading a
/// whole window costs time linear in it, never a scan of the stream per page. Members whose entry was
/// pruned are removed by `prune` (and skipped, and removed, by any read that meets them). A stream
/// written before the index existed is indexed once, in XRANGE batches, by the first window read.
///
/// Durability is Redis's: the 200 follows Redis's acknowledgement, which is on disk only with
/// `appendonly yes` and `appendfsync always` (with `everysec`, a Redis crash may lose the last second).
package final class RedisNotificationStore: NotificationStore, @unchecked Sendable {
    // @unchecked: `connection` is touched only on `queue`.
    private let queue = DispatchQueue(label: "appstore-gateway.notification-store.redis")
    private let connection: RedisConnection
    private let streamKey: String
    private let uuidPrefix: String
    private let indexKey: String
    /// Set once the whole stream is in the index (entries written before the index existed included).
    private let indexedKey: String
    /// Whether this store saw `indexedKey` set (then it never looks again).
    private let indexComplete = Atomic<Bool>(false)
    private let retentionMilliseconds: Int64
    package let signal = LiveSignal()
    package var isShared: Bool { true }
    /// Stream entries read per XRANGE while scanning.
    static let scanBatch = 200
    /// The longest signedPayload stored; every other field of an entry is decoded from it, so an entry's
    /// values together are at most twice as long.
    let largestPayload: Int

    /// The largest reply is an XRANGE page: `scanBatch` entries of [id, [field, value] × 8], nested 3 deep,
    /// each entry's values at most 2 × `largestPayload` (an MGET of `NotificationStoreLimits.lookupBatch`
    /// positions and a ZRANGEBYLEX page of `scanBatch` members are smaller). The same bound holds the entries
    /// in memory once read, so a Redis cannot make a read cost more than the largest honest page.
    static func replyLimits(largestPayload: Int) -> RedisReplyLimits {
        let entryElements = 1 + 2 + 2 * 8
        return RedisReplyLimits(
            largestValue: largestPayload, valueBytes: scanBatch * 2 * largestPayload,
            elements: max(scanBatch * entryElements, NotificationStoreLimits.lookupBatch), depth: 3)
    }

    static let insertScript = """
        local existing = redis.call('GET', KEYS[2])
        if existing then return {0, existing} end
        local id = redis.call('XADD', KEYS[1], '*', 'uuid', ARGV[1], 'signedDate', ARGV[2], 'receivedAt', ARGV[3],
          'bundleId', ARGV[4], 'environment', ARGV[5], 'type', ARGV[6], 'subtype', ARGV[7], 'payload', ARGV[8])
        redis.call('SET', KEYS[2], id, 'PX', ARGV[9])
        local major, minor = string.match(id, '^(%d+)-(%d+)$')
        redis.call('ZADD', KEYS[3], 0, ARGV[10] .. string.rep('0', 20 - #major) .. major .. '-'
          .. string.rep('0', 20 - #minor) .. minor)
        return {1, id}
        """

    /// Removes the index members of entries pruned from the stream: those signed before the cutoff
    /// (ARGV[1], a member prefix) whose stream id is before the cutoff (ARGV[2], 20 digits), at most
    /// ARGV[3] looked at per call.
    static let pruneIndexScript = """
        local members = redis.call('ZRANGEBYLEX', KEYS[1], '-', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
        local removed = 0
        for _, member in ipairs(members) do
          if string.sub(member, 22, 41) < ARGV[2] then
            redis.call('ZREM', KEYS[1], member)
            removed = removed + 1
          end
        end
        return removed
        """

    /// A store in the Redis at `url` (over TLS with `tls` for `rediss://`), keys prefixed with `keyPrefix`,
    /// entries kept `retention`. `largestPayload` is the longest signedPayload it stores
    /// (`notifications.webhook.maxBodyBytes`): the replies it reads are bounded by it (`replyLimits`).
    package init(
        url: RedisURL, tls: RedisTLSFiles = RedisTLSFiles(), keyPrefix: String, timeout: Duration,
        retention: Duration, largestPayload: Int
    ) {
        self.largestPayload = max(1, largestPayload)
        connection = RedisConnection(
            url: url, timeout: timeout, limits: Self.replyLimits(largestPayload: self.largestPayload), tls: tls)
        streamKey = keyPrefix + "notifications"
        uuidPrefix = keyPrefix + "notification:"
        indexKey = keyPrefix + "notifications:by-date"
        indexedKey = keyPrefix + "notifications:by-date:complete"
        retentionMilliseconds = max(1, retention.wholeMilliseconds)
    }

    /// The scripts, run by their SHA-1s.
    static let insert = RedisScript(insertScript)
    static let pruneIndex = RedisScript(pruneIndexScript)

    /// Runs `commands` in one pipeline on the store's queue; a script they call is loaded when Redis lacks it.
    private func run<Value: Sendable>(
        _ commands: [[String]], script: RedisScript? = nil, _ read: @escaping @Sendable ([RedisReply]) -> Value?
    )
        async throws(NotificationStoreFailure) -> Value
    {
        let connection = UncheckedConnection(connection)
        let result: Result<Value, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(
                    returning: Self.execute(commands, script: script, on: connection.value, read: read))
            }
        }
        return try result.get()
    }

    private static func execute<Value>(
        _ commands: [[String]], script: RedisScript?, on connection: RedisConnection,
        read: ([RedisReply]) -> Value?
    )
        -> Result<Value, NotificationStoreFailure>
    {
        do throws(RedisConnectionFailure) {
            if !connection.isConnected { try connection.connect() }
            let replies: [RedisReply]
            if let script {
                replies = try connection.pipeline(commands, loading: script)
            } else {
                replies = try connection.pipeline(commands)
            }
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

    package func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    {
        // What is stored must be readable within `replyLimits`.
        let fields = [
            notification.uuid, notification.bundleId, notification.environment, notification.notificationType,
            notification.subtype,
        ]
        let fieldBytes = fields.reduce(0) { $0 + $1.utf8.count }
        guard notification.signedPayload.utf8.count <= largestPayload, fieldBytes <= largestPayload else {
            throw NotificationStoreFailure(
                "Redis store: a notification of \(notification.signedPayload.utf8.count + fieldBytes) bytes is "
                    + "larger than the store reads back (notifications.webhook.maxBodyBytes, \(largestPayload))")
        }
        let arguments = [
            "3", streamKey, uuidPrefix + notification.uuid, indexKey, notification.uuid,
            String(notification.signedDate), String(receivedAt), notification.bundleId, notification.environment,
            notification.notificationType, notification.subtype, notification.signedPayload,
            String(retentionMilliseconds), WindowIndex.datePrefix(notification.signedDate),
        ]
        // The script by its SHA-1; its source only when Redis does not have it yet.
        let outcome = try await run(
            [Self.insert.call(arguments)], script: Self.insert
        ) { replies -> InsertOutcome? in
            guard case .array(let parts)? = replies.first, parts.count == 2, case .integer(let stored) = parts[0],
                let id = parts[1].text, let position = Self.position(id)
            else { return nil }
            return stored == 1 ? .stored(position) : .duplicate(position)
        }
        if case .stored = outcome { signal.raise() }
        return outcome
    }

    package func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure) -> StorePage
    {
        let count = max(1, min(limit, Self.scanBatch))
        let entries = try await range(after: position, count: count)
        let matching = entries.filter { filter.accepts($0.notification) }
        return StorePage(entries: matching, through: entries.last?.position ?? position)
    }

    package func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure)
        -> StorePage
    {
        let entries = try await range(after: position, count: max(1, min(limit, Self.scanBatch)))
        return StorePage(entries: entries, through: entries.last?.position ?? position)
    }

    package func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    {
        try await ensureIndexed()
        let limit = max(1, limit)
        guard filter.start < filter.end else { return [] }
        // From just after `key` (or the window's start) to the window's end, in (signedDate, position) order.
        var lower = key.map { "(" + WindowIndex.member($0) } ?? "[" + WindowIndex.datePrefix(filter.start)
        let upper = "(" + WindowIndex.datePrefix(filter.end)
        var found: [StoredNotification] = []
        while found.count < limit {
            // As many members as entries still wanted (entries of other apps or filters take another turn).
            let batch = min(Self.scanBatch, limit - found.count)
            let members = try await run([
                ["ZRANGEBYLEX", indexKey, lower, upper, "LIMIT", "0", String(batch)]
            ]) { replies -> [String]? in
                guard case .array(let items)? = replies.first else { return nil }
                let members = items.compactMap(\.text)
                return members.count == items.count ? members : nil
            }
            guard let last = members.last else { break }
            lower = "(" + last
            var ids: [(member: String, id: String)] = []
            for member in members {
                guard let position = WindowIndex.position(member) else { continue }
                if position <= through { ids.append((member, "\(position.major)-\(position.minor)")) }
            }
            // Every member of this page may be past `through` (a later signedDate, a later position).
            let entries: [StoredNotification?] =
                ids.isEmpty
                ? []
                : try await run(
                    ids.map { ["XRANGE", streamKey, $0.id, $0.id] }
                ) { replies -> [StoredNotification?]? in
                    var entries: [StoredNotification?] = []
                    for reply in replies {
                        guard case .array(let items) = reply, items.count <= 1 else { return nil }
                        guard let item = items.first else {
                            entries.append(nil)  // pruned from the stream
                            continue
                        }
                        guard let entry = Self.entry(item) else { return nil }
                        entries.append(entry)
                    }
                    return entries
                }
            let gone = zip(ids, entries).filter { $0.1 == nil }.map(\.0.member)
            if !gone.isEmpty { _ = try await run([["ZREM", indexKey] + gone]) { _ in true } }
            for case let entry? in entries where filter.acceptsInWindow(entry.notification) && found.count < limit {
                found.append(entry)
            }
            if members.count < batch { break }
        }
        return found
    }

    /// Indexes, once, entries the stream held before the index existed: the stream in XRANGE batches of
    /// `scanBatch`, each read from just after the previous one. Entries inserted meanwhile index themselves.
    private func ensureIndexed() async throws(NotificationStoreFailure) {
        if indexComplete.load(ordering: .acquiring) { return }
        let complete = try await run([["EXISTS", indexedKey]]) { replies -> Bool? in
            guard case .integer(let exists)? = replies.first else { return nil }
            return exists == 1
        }
        if !complete {
            var cursor = StorePosition.zero
            while true {
                let batch = try await range(after: cursor, count: Self.scanBatch)
                guard let last = batch.last else { break }
                let command = ["ZADD", indexKey] + batch.flatMap { ["0", WindowIndex.member($0.key)] }
                _ = try await run([command]) { _ in true }
                cursor = last.position
                if batch.count < Self.scanBatch { break }
            }
            _ = try await run([["SET", indexedKey, "1"]]) { _ in true }
        }
        indexComplete.store(true, ordering: .releasing)
    }

    package func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition] {
        var found: [String: StorePosition] = [:]
        for start in stride(from: 0, to: uuids.count, by: NotificationStoreLimits.lookupBatch) {
            let chunk = Array(uuids[start..<min(uuids.count, start + NotificationStoreLimits.lookupBatch)])
            let values = try await run([["MGET"] + chunk.map { uuidPrefix + $0 }]) { replies -> [StorePosition?]? in
                guard case .array(let items)? = replies.first, items.count == chunk.count else { return nil }
                var values: [StorePosition?] = []
                for item in items {
                    switch item {
                    case .null: values.append(nil)
                    case .string(let bytes):
                        guard let position = Self.position(String(decoding: bytes, as: UTF8.self)) else { return nil }
                        values.append(position)
                    default: return nil
                    }
                }
                return values
            }
            for (uuid, position) in zip(chunk, values) {
                if let position { found[uuid] = position }
            }
        }
        return found
    }

    package func lastPosition() async throws(NotificationStoreFailure) -> StorePosition {
        try await run([["XREVRANGE", streamKey, "+", "-", "COUNT", "1"]]) { replies -> StorePosition? in
            guard case .array(let items)? = replies.first else { return nil }
            guard let first = items.first else { return .zero }
            return Self.entry(first)?.position
        }
    }

    package func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int {
        let cutoff = max(0, cutoff)
        let removed = try await run([["XTRIM", streamKey, "MINID", "\(cutoff)-0"]]) { replies -> Int? in
            guard case .integer(let removed)? = replies.first else { return nil }
            return Int(clamping: removed)
        }
        let arguments = ["1", indexKey, WindowIndex.datePrefix(cutoff), WindowIndex.digits(UInt64(cutoff)), "10000"]
        _ = try await run([Self.pruneIndex.call(arguments)], script: Self.pruneIndex) { replies -> Int64? in
            guard case .integer(let removed)? = replies.first else { return nil }
            return removed
        }
        return removed
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

/// The by-date index's members: `<signedDate + 2^63, 20 digits>:<major, 20 digits>-<minor, 20 digits>`,
/// so byte order is (signedDate, position) order (negative dates included).
enum WindowIndex {
    static func digits(_ value: UInt64) -> String {
        let text = String(value)
        return String(repeating: "0", count: 20 - text.utf8.count) + text
    }

    /// Every member of entries signed at `signedDate` starts with this.
    static func datePrefix(_ signedDate: Int64) -> String {
        digits(UInt64(bitPattern: signedDate) ^ (1 << 63)) + ":"
    }

    static func member(_ key: WindowKey) -> String {
        datePrefix(key.signedDate) + digits(key.position.major) + "-" + digits(key.position.minor)
    }

    /// The stream position a member names.
    static func position(_ member: String) -> StorePosition? {
        let utf8 = Array(member.utf8)
        guard utf8.count == 62, utf8[20] == UInt8(ascii: ":"), utf8[41] == UInt8(ascii: "-"),
            let major = UInt64(String(decoding: utf8[21..<41], as: UTF8.self)),
            let minor = UInt64(String(decoding: utf8[42..<62], as: UTF8.self))
        else { return nil }
        return StorePosition(major: major, minor: minor)
    }
}

/// Carries the queue-confined connection into the queue's closure.
private struct UncheckedConnection: @unchecked Sendable {
    let value: RedisConnection
    init(_ value: RedisConnection) { self.value = value }
}
