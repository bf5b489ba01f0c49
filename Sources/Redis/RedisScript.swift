import Cryptography

/// A Lua script run by its SHA-1 (EVALSHA): Redis is sent its source only when it lacks it (restarted,
/// flushed, or a new connection to a fresh server). The one way the gateway runs scripts on Redis.
package struct RedisScript: Sendable {
    package let source: String
    /// The SHA-1 Redis names the script by.
    package let sha: String

    package init(_ source: String) {
        self.source = source
        sha = SHA1.hex(Array(source.utf8))
    }

    /// The command running the script: `arguments` are numkeys, the keys, then the script's arguments.
    package func call(_ arguments: [String]) -> [String] { ["EVALSHA", sha] + arguments }
}

extension RedisReply {
    /// Redis's NOSCRIPT error: the script cache lacks the script. An error reply starts with its error
    /// code, one word in capitals (the protocol's convention), so the code is compared, not the message.
    package var isNoScript: Bool {
        guard case .error(let message) = self else { return false }
        return message.split(separator: " ", maxSplits: 1).first == "NOSCRIPT"
    }
}

extension RedisConnection {
    /// `commands` in one pipeline; when one answers NOSCRIPT, `script` is loaded and the pipeline sent once
    /// more (a command that answered NOSCRIPT did nothing). The replies are those of `commands`. Both
    /// round trips end by one `deadline` (by default `timeout` from now).
    package func pipeline(
        _ commands: [[String]], loading script: RedisScript, before deadline: RedisDeadline? = nil
    ) throws(RedisConnectionFailure) -> [RedisReply] {
        let deadline = deadline ?? self.deadline()
        let replies = try pipeline(commands, before: deadline)
        guard replies.contains(where: \.isNoScript) else { return replies }
        return Array(try pipeline([["SCRIPT", "LOAD", script.source]] + commands, before: deadline).dropFirst())
    }

    /// Loads `script` into Redis's cache now (e.g. once per connection, so calls need not wait for NOSCRIPT),
    /// before `deadline` (by default `timeout` from now).
    package func load(_ script: RedisScript, before deadline: RedisDeadline? = nil) throws(RedisConnectionFailure) {
        let replies = try pipeline([["SCRIPT", "LOAD", script.source]], before: deadline)
        guard replies.first?.text == script.sha else {
            close()
            throw RedisConnectionFailure(kind: .redisError, message: "SCRIPT LOAD failed: \(replies)")
        }
    }
}
