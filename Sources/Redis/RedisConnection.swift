import GatewayFoundation

/// One connection to Redis: a `RedisSocket` (with a `RedisTLSSession` over it for `rediss://`), hiredis's
/// command formatter and its reply parser behind `limits`. Each connect and each pipeline (all commands
/// written, then all replies read) has one `RedisDeadline`, `timeout` after it starts unless the caller fixed
/// one for a larger step, however the bytes trickle in. Closes on the first error, since a timed-out pipeline
/// may still deliver late replies. Not thread-safe: each user (the shared budget's thread, the Redis
/// notification store's queue) confines its own connection.
package final class RedisConnection {
    package let url: RedisURL
    package let timeout: Duration
    /// What one reply may hold.
    package let limits: RedisReplyLimits
    /// The PEM files of a `rediss://` URL (unused for `redis://`).
    package let tlsFiles: RedisTLSFiles
    /// What deadlines are read on.
    package let clock: any GatewayClock
    private var stream: (any RedisByteStream)?
    private var reader: RedisReplyReader?
    /// Where received bytes land before the reader copies them.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

    package init(
        url: RedisURL, timeout: Duration, limits: RedisReplyLimits, tls: RedisTLSFiles = RedisTLSFiles(),
        clock: any GatewayClock = SystemClock()
    ) {
        self.url = url
        self.clock = clock
        self.timeout = timeout
        self.limits = limits
        self.tlsFiles = tls
    }

    deinit { buffer.deallocate() }

    /// Whether a connection is open.
    package var isConnected: Bool { stream != nil }

    /// The deadline of an operation starting now: `timeout` from now.
    package func deadline() -> RedisDeadline { RedisDeadline(after: timeout, from: clock.monotonicNow()) }

    /// Connects, shakes hands for `rediss://`, then sends AUTH and SELECT when the URL asks for them, all
    /// before `deadline` (by default `timeout` from now). Every failure is of kind `.connect`.
    package func connect(before deadline: RedisDeadline? = nil) throws(RedisConnectionFailure) {
        let deadline = deadline ?? self.deadline()
        close()
        do {
            let socket = try RedisSocket(host: url.host, port: url.port, deadline: deadline, clock: clock)
            if url.tls {
                let context = try RedisTLSContext(files: tlsFiles)
                stream = try RedisTLSSession(socket: socket, context: context, host: url.host, deadline: deadline)
            } else {
                stream = socket
            }
            reader = try RedisReplyReader(limits: limits)
        } catch {
            close()
            throw RedisConnectionFailure(kind: .connect, message: "Redis \(url): \(error.message)")
        }
        var setup: [[String]] = []
        if let password = url.password {
            setup.append(url.username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
        }
        if url.database != 0 { setup.append(["SELECT", String(url.database)]) }
        guard !setup.isEmpty else { return }
        let replies: [RedisReply]
        do {
            replies = try pipeline(setup, before: deadline)
        } catch {
            throw RedisConnectionFailure(kind: .connect, message: "Redis \(url) setup: \(error.message)")
        }
        for reply in replies {
            if case .error(let message) = reply {
                close()
                throw RedisConnectionFailure(
                    kind: .connect, message: "Redis \(url) refused the connection setup: \(message)")
            }
        }
    }

    /// Sends `commands` in one write and reads one reply each, before `deadline` (by default `timeout` from
    /// now). Redis error replies are returned as `.error`; transport problems, a passed deadline, malformed
    /// replies and replies past `limits` throw and close the connection.
    package func pipeline(_ commands: [[String]], before deadline: RedisDeadline? = nil) throws(RedisConnectionFailure)
        -> [RedisReply]
    {
        let deadline = deadline ?? self.deadline()
        guard let stream, let reader else {
            throw RedisConnectionFailure(kind: .connect, message: "not connected")
        }
        do throws(RedisConnectionFailure) {
            var bytes: [UInt8] = []
            for command in commands {
                guard let encoded = RedisCommandEncoding.encode(command) else {
                    throw RedisConnectionFailure(kind: .protocolError, message: "cannot format a Redis command")
                }
                bytes += encoded
            }
            try stream.send(bytes, before: deadline)
            var replies: [RedisReply] = []
            replies.reserveCapacity(commands.count)
            while replies.count < commands.count {
                if let reply = try reader.next() {
                    replies.append(reply)
                    continue
                }
                let count = try stream.receive(into: buffer, before: deadline)
                try reader.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            }
            // Redis answers each command once: more bytes mean the replies are out of step with the commands.
            guard !reader.hasUnreadBytes else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis sent more replies than commands")
            }
            return replies
        } catch {
            close()
            throw error
        }
    }

    /// Closes the connection (its socket, TLS session and reader).
    package func close() {
        stream = nil
        reader = nil
    }
}
