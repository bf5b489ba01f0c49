internal import CHiredis
import GatewayCore

/// One Redis reply, copied out of hiredis (bounded: see `RedisConnection.maxElements`).
package enum RedisReply: Sendable, Hashable {
    case integer(Int64)
    case string([UInt8])
    case status(String)
    case error(String)
    case array([RedisReply])
    case null

    /// The integers of an array reply; nil for anything else.
    package var integers: [Int64]? {
        guard case .array(let items) = self else { return nil }
        var values: [Int64] = []
        values.reserveCapacity(items.count)
        for item in items {
            guard case .integer(let value) = item else { return nil }
            values.append(value)
        }
        return values
    }

    /// The text of a bulk-string reply.
    package var text: String? {
        guard case .string(let bytes) = self else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why a pipeline failed; the connection is closed after any of these.
package struct RedisConnectionFailure: Error, Sendable {
    package var kind: RedisFailureKind
    package var message: String
}

/// The owner of one hiredis `redisContext`: connects with `timeout`, applies it to every command, sends
/// pipelines (all commands written, then all replies read) and closes on the first error, since a
/// timed-out pipeline may still deliver late replies. Not thread-safe: each user (the shared budget's
/// thread, the Redis notification store's queue) confines its own connection.
package final class RedisConnection {
    /// Most elements accepted in one array reply (the script answers at most `SharedBucketScript.maxBatch`).
    static let maxElements = 4096
    /// Longest bulk string copied out.
    static let maxStringBytes = 1 << 16

    package let url: RedisURL
    package let timeout: Duration
    private var context: UnsafeMutablePointer<redisContext>?

    package init(url: RedisURL, timeout: Duration) {
        self.url = url
        self.timeout = timeout
    }

    deinit { close() }

    /// Whether a connection is open.
    package var isConnected: Bool { context != nil }

    /// Connects (within `timeout`), then AUTH and SELECT when the URL asks for them.
    package func connect() throws(RedisConnectionFailure) {
        close()
        let tv = timeval(
            tv_sec: Int(timeout.components.seconds),
            tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        guard let created = redisConnectWithTimeout(url.host, Int32(url.port), tv) else {
            throw RedisConnectionFailure(kind: .connect, message: "cannot allocate a Redis context")
        }
        if created.pointee.err != 0 {
            let message = Self.errorText(created)
            redisFree(created)
            throw RedisConnectionFailure(kind: .connect, message: "cannot connect to \(url): \(message)")
        }
        guard redisSetTimeout(created, tv) == REDIS_OK else {
            redisFree(created)
            throw RedisConnectionFailure(kind: .connect, message: "cannot set the Redis command timeout")
        }
        context = created
        var setup: [[String]] = []
        if let password = url.password {
            setup.append(url.username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
        }
        if url.database != 0 { setup.append(["SELECT", String(url.database)]) }
        guard !setup.isEmpty else { return }
        for reply in try pipeline(setup) {
            if case .error(let message) = reply {
                close()
                throw RedisConnectionFailure(kind: .connect, message: "Redis refused the connection setup: \(message)")
            }
        }
    }

    /// Sends `commands` in one write and reads one reply each. Redis error replies are returned as
    /// `.error`; transport problems throw and close the connection.
    package func pipeline(_ commands: [[String]]) throws(RedisConnectionFailure) -> [RedisReply] {
        guard let context else { throw RedisConnectionFailure(kind: .connect, message: "not connected") }
        for command in commands {
            guard append(command, to: context) else { throw fail(context, reading: false, errorNumber: 0) }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutablePointer<redisReply>?
            var errorNumber: Int32 = 0
            guard chiredis_get_reply(context, &raw, &errorNumber) == REDIS_OK, let raw else {
                throw fail(context, reading: true, errorNumber: errorNumber)
            }
            defer { freeReplyObject(raw) }
            guard let reply = Self.copy(raw, depth: 0) else {
                close()
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis sent an oversized or unknown reply")
            }
            replies.append(reply)
        }
        return replies
    }

    /// Frees the context.
    package func close() {
        if let context { redisFree(context) }
        context = nil
    }

    private func append(_ command: [String], to context: UnsafeMutablePointer<redisContext>) -> Bool {
        let arguments = command.map { Array($0.utf8) }
        var pointers: [UnsafeMutablePointer<CChar>] = []
        defer { pointers.forEach { $0.deallocate() } }
        for argument in arguments {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, argument.count))
            argument.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    if let base = chars.baseAddress { buffer.update(from: base, count: chars.count) }
                }
            }
            pointers.append(buffer)
        }
        var argv: [UnsafePointer<CChar>?] = pointers.map { UnsafePointer($0) }
        var lengths = arguments.map { $0.count }
        // hiredis formats the command into its output buffer at once, so the copies may be freed after.
        return redisAppendCommandArgv(context, Int32(arguments.count), &argv, &lengths) == REDIS_OK
    }

    /// `errorNumber`: the errno of the failed socket call (0 when none), which tells a timeout apart.
    private func fail(
        _ context: UnsafeMutablePointer<redisContext>, reading: Bool, errorNumber: Int32
    ) -> RedisConnectionFailure {
        let code = context.pointee.err
        let message = Self.errorText(context)
        close()
        let timedOut = code == REDIS_ERR_IO && chiredis_is_timeout(errorNumber) != 0
        return RedisConnectionFailure(
            kind: timedOut ? .timeout : .protocolError,
            message: "Redis \(reading ? "read" : "write") failed: \(message)")
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix(while: { $0 != 0 })
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func copy(_ reply: UnsafeMutablePointer<redisReply>, depth: Int) -> RedisReply? {
        let value = reply.pointee
        func bytes() -> [UInt8]? {
            guard value.len <= maxStringBytes else { return nil }
            guard let str = value.str else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: value.len))
        }
        switch value.type {
        case REDIS_REPLY_INTEGER: return .integer(Int64(value.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_STRING: return bytes().map { .string($0) }
        case REDIS_REPLY_STATUS: return bytes().map { .status(String(decoding: $0, as: UTF8.self)) }
        case REDIS_REPLY_ERROR: return bytes().map { .error(String(decoding: $0, as: UTF8.self)) }
        case REDIS_REPLY_ARRAY:
            guard depth < 4, value.elements <= maxElements else { return nil }
            var items: [RedisReply] = []
            items.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                guard let child = chiredis_element(reply, index), let item = copy(child, depth: depth + 1) else {
                    return nil
                }
                items.append(item)
            }
            return .array(items)
        default: return nil
        }
    }
}
