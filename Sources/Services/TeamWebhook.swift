import AppStoreClient
import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation
import ProtoCodec

/// A team's webhook (`subscriptions.webhooks[i]`): the subscription events of its apps and types, POSTed as JSON
/// and signed with the team's secret (docs/subscription-events.md, "Webhooks to teams").
package enum TeamWebhook {
    /// One `subscriptions.webhooks` entry.
    package struct Settings: Sendable, Hashable {
        /// `url`: where events are POSTed (http or https, with a host). The sink's identity: its progress and
        /// dead letters are kept under it.
        package var url: String
        /// `secretFile`: one secret per non-empty line (surrounding spaces trimmed); each signs every delivery
        /// (one `v1=` per secret, in file order), so a rotation adds the new line beside the old one.
        package var secretFile: String
        /// `apps`: configured app names whose events go out; empty: every app's.
        package var apps: [String] = []
        /// `types`: event types that go out; empty: every type.
        package var types: [SubscriptionEventType] = []
        /// `timeout`, `maxBackoff`, `maxAge`.
        package var retries = DeliveryRetries()

        package init(url: String, secretFile: String) {
            self.url = url
            self.secretFile = secretFile
        }

        /// Whether the event goes to this webhook.
        package func accepts(_ event: SubscriptionEvent) -> Bool {
            (apps.isEmpty || apps.contains(event.app)) && (types.isEmpty || types.contains(event.type))
        }
    }

    /// The header that carries the signature.
    package static let signatureHeader = "appstore-gateway-signature"
    /// The header that carries the event's id.
    package static let eventIDHeader = "appstore-gateway-event-id"
    /// The largest secret file read.
    package static let maximumFileBytes = 64 * 1024

    /// `t=<unixSeconds>,v1=<hex>[,v1=<hex>…]`: the lowercase hex HMAC-SHA256 of `<t>.<body>` under each secret, in
    /// order.
    package static func signature(secrets: [[UInt8]], unixSeconds: Int64, body: [UInt8]) -> String {
        let prefix = Array("\(unixSeconds).".utf8)
        var header = "t=\(unixSeconds)"
        let message = prefix + body
        for secret in secrets {
            header += ",v1=" + hex(HMACSHA256.authenticationCode(key: secret, message: message))
        }
        return header
    }

    /// Reads the secrets of `path` (the key `key` names it in problems). It holds secrets, so it is judged like the
    /// apps' `.p8` keys (`KeyFileAccess`, unless `allowReadableFile`); missing, unreadable, not UTF-8 or without a
    /// non-empty line: refused. A problem never quotes the file's content.
    package static func loadSecrets(path: String, key: String, allowReadableFile: Bool) throws(ConfigurationError)
        -> [[UInt8]]
    {
        guard !path.isEmpty else { throw ConfigurationError(key: key, problem: "is required") }
        try KeyFileAccess.check(path, key: key, allowReadableFile: allowReadableFile)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(key: key, problem: "cannot read '\(path)'")
        }
        defer { try? handle.close() }
        let bytes = [UInt8](handle.readData(ofLength: maximumFileBytes + 1))
        guard bytes.count <= maximumFileBytes else {
            throw ConfigurationError(key: key, problem: "'\(path)' is larger than 64 KiB")
        }
        return try parseSecrets(bytes, path: path, key: key)
    }

    /// The secrets of a file's bytes: each non-empty line, spaces around it trimmed, in order.
    package static func parseSecrets(_ bytes: [UInt8], path: String, key: String) throws(ConfigurationError)
        -> [[UInt8]]
    {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(key: key, problem: "'\(path)' is not UTF-8 text")
        }
        var secrets: [[UInt8]] = []
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let trimmed = line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
            if !trimmed.isEmpty { secrets.append(Array(String(trimmed).utf8)) }
        }
        guard !secrets.isEmpty else {
            throw ConfigurationError(key: key, problem: "'\(path)' holds no secret (one secret per non-empty line)")
        }
        return secrets
    }

    /// The event type a configuration names: `RENEWAL` or `SUBSCRIPTION_EVENT_TYPE_RENEWAL` (case-insensitive);
    /// nil for an unknown name and for UNSPECIFIED.
    package static func eventType(named text: String) -> SubscriptionEventType? {
        var name = text.uppercased()
        let prefix = "SUBSCRIPTION_EVENT_TYPE_"
        if name.hasPrefix(prefix) { name.removeFirst(prefix.count) }
        guard let type = SubscriptionEventBody.eventTypeNames.first(where: { $0.value == prefix + name })?.key,
            type != .unspecified
        else { return nil }
        return type
    }

    /// What a sink is named in metrics and logs: its URL without user information, query or fragment.
    package static func label(of url: String) -> String {
        var rest = Substring(url)
        var scheme = ""
        if let range = rest.range(of: "://") {
            scheme = String(rest[..<range.upperBound])
            rest = rest[range.upperBound...]
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        if let at = rest[..<authorityEnd].lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return scheme + rest
    }

    /// Why `text` is not a webhook URL (http or https, with a host, no spaces), or nil when it is one.
    package static func urlProblem(_ text: String) -> String? {
        let lower = text.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            return "must be an http(s) URL, got '\(label(of: text))'"
        }
        guard !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
        else { return "must not contain spaces or control characters" }
        let afterScheme = text[text.range(of: "://")!.upperBound...]
        var authority = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return "has an unclosed IPv6 address" }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            let port = host[host.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCII), let number = Int(port), (1...65_535).contains(number)
            else { return "has an invalid port" }
            host = host[..<colon]
        }
        guard !host.isEmpty else { return "must name a host" }
        return nil
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The relay of Apple's notifications (`notifications.forward[i]`): each stored notification POSTed as Apple sent
/// it, `{"signedPayload":"<JWS>"}`, in log order (docs/subscription-events.md, "Relay").
package enum NotificationRelay {
    /// One `notifications.forward` entry.
    package struct Settings: Sendable, Hashable {
        /// `url`: where notifications are POSTed (http or https, with a host); the sink's identity.
        package var url: String
        /// `timeout`, `maxBackoff`, `maxAge`.
        package var retries = DeliveryRetries()

        package init(url: String) {
            self.url = url
        }
    }

    /// The header that carries the notification's UUID.
    package static let uuidHeader = "appstore-gateway-notification-uuid"

    /// The body Apple POSTs: `{"signedPayload":"<JWS>"}`.
    package static func body(signedPayload: String) -> [UInt8] {
        var out = Array("{\"signedPayload\":".utf8)
        JSONString.append(signedPayload, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
