import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import Redis

extension GatewayConfiguration {
    /// The `redis` keys: the shared rate budget's own settings.
    package typealias Redis = SharedRateBudget.Settings

    /// Reads the `redis` keys.
    static func redis(_ reader: ConfigurationReader) throws(ConfigurationError) -> Redis {
        var redis = Redis()
        if let text = try reader.string("redis.url"), !text.isEmpty {
            guard let url = RedisURL(parsing: text) else {
                throw ConfigurationError(
                    key: "redis.url",
                    problem:
                        "must be redis[s]://[[user]:password@]host[:port][/db] (user and password percent-encoded), "
                        + "got '\(RedisURL.redacted(text))'")
            }
            redis.url = url
        }
        try tlsFiles(reader, into: &redis)
        if let prefix = try reader.string("redis.keyPrefix") {
            guard prefix.utf8.count <= 256, !prefix.contains(where: { $0 == " " || $0 == "\n" || $0 == "\r" }) else {
                throw ConfigurationError(key: "redis.keyPrefix", problem: "must be at most 256 bytes without spaces")
            }
            redis.keyPrefix = prefix
        }
        if let v = try reader.milliseconds("redis.timeout") {
            guard (1...10_000).contains(v) else {
                throw ConfigurationError(key: "redis.timeout", problem: "must be between 1ms and 10s")
            }
            redis.timeout = .milliseconds(v)
        }
        if let text = try reader.string("redis.fallbackShare") {
            guard let share = fraction(text), share >= 0.001, share <= 1 else {
                throw ConfigurationError(
                    key: "redis.fallbackShare",
                    problem: "must be a number or fraction in [0.001, 1] such as 0.25 or 1/3, got '\(text)'")
            }
            redis.fallbackShare = share
        }
        return redis
    }
}

/// `redis.caFile`, `certFile` and `keyFile`: only for a `rediss://` URL; the certificate and key together.
private func tlsFiles(_ reader: ConfigurationReader, into redis: inout GatewayConfiguration.Redis)
    throws(ConfigurationError)
{
    redis.caFile = try reader.string("redis.caFile") ?? ""
    redis.certFile = try reader.string("redis.certFile") ?? ""
    redis.keyFile = try reader.string("redis.keyFile") ?? ""
    for (key, value) in [("redis.caFile", redis.caFile), ("redis.certFile", redis.certFile)] where !value.isEmpty {
        guard redis.url?.tls == true else {
            throw ConfigurationError(key: key, problem: "needs a rediss:// redis.url (TLS)")
        }
    }
    guard redis.certFile.isEmpty == redis.keyFile.isEmpty else {
        throw ConfigurationError(key: "redis.keyFile", problem: "redis.certFile and redis.keyFile go together")
    }
}

/// "0.25" or "1/3" as a finite number; nil otherwise.
private func fraction(_ text: String) -> Double? {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false).map {
        $0.trimmingCharacters(in: " ")
    }
    guard parts.count <= 2, let numerator = Double(parts[0]), numerator.isFinite else { return nil }
    guard parts.count == 2 else { return numerator }
    guard let denominator = Double(parts[1]), denominator.isFinite, denominator > 0 else { return nil }
    return numerator / denominator
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var view = self
        while view.first == set { view.removeFirst() }
        while view.last == set { view.removeLast() }
        return String(view)
    }
}

extension RedisURL {
    /// `text` with anything between "://" and "@" hidden, for error messages.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let scheme = text.range(of: "://") else { return text }
        return String(text[..<scheme.upperBound]) + "***" + String(text[at...])
    }
}
