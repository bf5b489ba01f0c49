import GatewayFoundation

/// Where Redis is: `redis://[[user]:password@]host[:port][/database]`, or `rediss://…` for TLS.
/// The description hides the password, so the value can be logged.
package struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// Host name or address (IPv6 without brackets); with TLS, the name the server's certificate must carry.
    package var host: String
    /// TCP port, default 6379.
    package var port: Int
    /// The logical database selected after connecting, default 0.
    package var database: Int
    /// ACL user name for AUTH, if any (percent-decoded).
    package var username: String?
    /// Password for AUTH, if any (percent-decoded).
    package var password: String?
    /// Whether the connection is TLS (`rediss://`).
    package var tls: Bool

    /// A URL with the given parts.
    package init(
        host: String, port: Int = 6379, database: Int = 0, username: String? = nil, password: String? = nil,
        tls: Bool = false
    ) {
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
        self.tls = tls
    }

    /// Parses `text`; nil unless it is a `redis://` or `rediss://` URL with a host, a port in 1...65535 and a
    /// database number in 0...65535. The user name and password are percent-decoded (a password holding
    /// `@`, `:`, `/` or `%` is written `%40`, `%3A`, `%2F`, `%25`) and must decode to UTF-8. With one
    /// credential and no colon (`redis://secret@host`), it is the password, as in `AUTH secret`.
    package init?(parsing text: String) {
        guard text.utf8.count <= 2048 else { return nil }
        let tls: Bool
        var rest: Substring
        if text.hasPrefix("rediss://") {
            tls = true
            rest = Substring(text.dropFirst("rediss://".count))
        } else if text.hasPrefix("redis://") {
            tls = false
            rest = Substring(text.dropFirst("redis://".count))
        } else {
            return nil
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = credentials[..<colon]
                if !user.isEmpty {
                    guard let decoded = Self.percentDecoded(user) else { return nil }
                    username = decoded
                }
                guard let decoded = Self.percentDecoded(credentials[credentials.index(after: colon)...]) else {
                    return nil
                }
                password = decoded
            } else {
                guard let decoded = Self.percentDecoded(credentials) else { return nil }
                password = decoded
            }
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard path.utf8.count <= 5, path.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let number = Int(path), number <= 65535
                else { return nil }
                database = number
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        var port = 6379
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int(portText), (1...65535).contains(number)
            else { return nil }
            port = number
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == "@" || $0 == " " }) else { return nil }
        self.init(
            host: String(host), port: port, database: database, username: username, password: password, tls: tls)
    }

    /// The URL with the password replaced by `***` and the user name percent-encoded as it was written.
    package var description: String {
        let user = username.map(Self.percentEncoded) ?? ""
        let credentials = password == nil ? (username == nil ? "" : "\(user)@") : "\(user):***@"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(tls ? "rediss" : "redis")://\(credentials)\(shownHost):\(port)/\(database)"
    }

    /// `text` with every `%XX` replaced by its byte; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Every byte outside RFC 3986's unreserved set as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                encoded.unicodeScalars.append("%")
                encoded.unicodeScalars.append(digits[Int(byte >> 4)])
                encoded.unicodeScalars.append(digits[Int(byte & 0x0F)])
            }
        }
        return encoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
