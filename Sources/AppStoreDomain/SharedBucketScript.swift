import GatewayFoundation

/// The Lua script behind the shared budget, and the pure translation of its arguments and replies.
///
/// One script, loaded once per connection (SCRIPT LOAD) and called with EVALSHA, two operations:
/// - `take`: a token bucket in GCRA form (as `TokenBucket`): the key holds the theoretical arrival
///   time in microseconds of Redis's own clock (TIME), so the replicas' clocks do not matter. One call
///   serves a batch of reservations for one (app, endpoint, environment), in order, each with its own
///   longest acceptable wait: a replica with several callers waiting leases that many tokens in one
///   round trip, and each token is still placed on the bucket's schedule, so the shared rate holds over
///   any window. While the block key exists (Apple's Retry-After) every reservation is refused.
/// - `block`: sets the block key with a PX expiry, never shortening an existing block.
package enum SharedBucketScript {
    /// The script's source.
    package static let source = """
        if ARGV[1] == 'block' then
          local ms = tonumber(ARGV[2])
          if redis.call('PTTL', KEYS[2]) < ms then
            redis.call('SET', KEYS[2], '1', 'PX', ms)
          end
          return ms
        end
        local blocked = redis.call('PTTL', KEYS[2])
        local results = {}
        if blocked > 0 then
          for i = 4, #ARGV do results[#results + 1] = -(blocked * 1000) - 1 end
          return results
        end
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local interval = tonumber(ARGV[2])
        local tolerance = interval * (tonumber(ARGV[3]) - 1)
        local tat = tonumber(redis.call('GET', KEYS[1])) or now
        if tat < now then tat = now end
        local taken = false
        for i = 4, #ARGV do
          local wait = tat - tolerance - now
          if wait < 0 then wait = 0 end
          if wait <= tonumber(ARGV[i]) then
            tat = tat + interval
            taken = true
            results[#results + 1] = wait
          else
            results[#results + 1] = -wait - 1
          end
        end
        if taken then
          redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
        end
        return results
        """

    /// Most reservations sent in one `take` (larger batches are split), so a reply stays small.
    package static let maxBatch = 64

    /// The bucket key for `key`: `<prefix>bucket:<bundle id>:<endpoint>:<environment>`.
    package static func bucketKey(_ key: RateLimitKey, prefix: String) -> String {
        "\(prefix)bucket:\(key.bundleID):\(key.endpoint.configName):\(key.environment.rawValue)"
    }

    /// The block key for `key`: `<prefix>block:<bundle id>:<endpoint>:<environment>`.
    package static func blockKey(_ key: RateLimitKey, prefix: String) -> String {
        "\(prefix)block:\(key.bundleID):\(key.endpoint.configName):\(key.environment.rawValue)"
    }

    /// EVALSHA arguments after the sha: numkeys, keys, then `take`, the rate and each wait limit (µs).
    package static func takeArguments(
        key: RateLimitKey, rate: EndpointRate, maxWaits: [Duration], prefix: String
    ) -> [String] {
        let interval = Int64(min(max(1, (1e6 / rate.perSecond).rounded(.up)), 1e12))
        let burst = min(max(1, rate.burst), 1_000_000)
        return [
            "2", bucketKey(key, prefix: prefix), blockKey(key, prefix: prefix), "take", String(interval), String(burst),
        ]
            + maxWaits.map { String(microseconds(min(max(.zero, $0), RetryAfter.maximumDelay))) }
    }

    /// EVALSHA arguments after the sha for a block of `delay` (at least 1 ms, at most `RetryAfter.maximumDelay`).
    package static func blockArguments(key: RateLimitKey, delay: Duration, prefix: String) -> [String] {
        let capped = min(max(.milliseconds(1), delay), RetryAfter.maximumDelay)
        return [
            "2", bucketKey(key, prefix: prefix), blockKey(key, prefix: prefix), "block",
            String(capped.millisecondsRoundedUp),
        ]
    }

    /// The reservations encoded in a `take` reply (one integer per request: the wait in µs when granted,
    /// −wait−1 when refused); nil when the reply does not have one integer per request.
    package static func reservations(fromTakeReply values: [Int64], requested: Int) -> [TokenBucket.Reservation]? {
        guard values.count == requested else { return nil }
        return values.map { value in
            if value >= 0 {
                return value == 0 ? .goNow : .goAfter(.microseconds(min(value, 3_600_000_000)))
            }
            let wait = value == .min ? Int64.max : -(value + 1)
            return .refused(retryAfter: .microseconds(min(wait, 3_600_000_000)))
        }
    }

    private static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
