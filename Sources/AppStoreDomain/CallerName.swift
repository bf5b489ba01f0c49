import GatewayFoundation

/// A name a caller is known by, typed by what proves it: a verified bearer JWT's `sub`, or one of the names of a
/// verified client certificate. Names of different kinds never match each other: a certificate whose URI SAN is
/// `spiffe://x` and a token whose `sub` is `spiffe://x` are two different callers, so whoever may mint tokens
/// for the JWKS cannot pose as a workload of the certificate authority, nor the other way round.
///
/// A `callers[].identity` string names exactly one name (`init(listed:)`), and every name has exactly one
/// readable spelling in that notation (`description`) that reads back as the same name.
package enum CallerName: Sendable, Hashable, CustomStringConvertible {
    /// A verified bearer JWT's `sub` (written bare, or `jwt:<sub>`).
    case subject(String)
    /// A URI subject alternative name of the client certificate, e.g. a SPIFFE id (written `scheme://…` bare,
    /// or `uri:<uri>`), compared exactly.
    case uri(String)
    /// A DNS subject alternative name of the client certificate (written `dns:<name>`), ASCII-lowercased: DNS
    /// names ignore case. A wildcard name (`*.example.com`) matches only the same wildcard entry.
    case dns(String)
    /// The client certificate's subject common name (written `cn:<name>`); a certificate proves it only with
    /// `tls.identityFromCommonName`.
    case commonName(String)

    /// Reads a `callers[].identity`: a lowercase `jwt:`, `uri:`, `dns:` or `cn:` prefix says the kind of the
    /// name after it; without one, a URI with an authority (`scheme://…`, such as `spiffe://…`) is a certificate
    /// URI SAN and any other string a JWT `sub` (so `system:serviceaccount:<ns>:<sa>` needs no prefix).
    package init(listed text: String) {
        if let rest = text.dropping(prefix: "jwt:") {
            self = .subject(rest)
        } else if let rest = text.dropping(prefix: "uri:") {
            self = .uri(rest)
        } else if let rest = text.dropping(prefix: "dns:") {
            self = .dns(Self.asciiLowercased(rest))
        } else if let rest = text.dropping(prefix: "cn:") {
            self = .commonName(rest)
        } else if Self.hasAuthorityScheme(text) {
            self = .uri(text)
        } else {
            self = .subject(text)
        }
    }

    /// The name without its kind.
    package var value: String {
        switch self {
        case .subject(let value), .uri(let value), .dns(let value), .commonName(let value): value
        }
    }

    /// The name in the `callers` notation, as short as it reads back: a `sub` and a `scheme://` URI bare (unless
    /// they would read as another kind, then `jwt:`/`uri:`), `dns:<name>`, `cn:<name>`. What logs, refusals
    /// and resume tokens show for a caller that is not listed.
    package var description: String {
        switch self {
        case .subject(let value): CallerName(listed: value) == self ? value : "jwt:" + value
        case .uri(let value): CallerName(listed: value) == self ? value : "uri:" + value
        case .dns(let value): "dns:" + value
        case .commonName(let value): "cn:" + value
        }
    }

    /// The names a verified client certificate proves, in the order they are tried against `callers`: its URI
    /// SANs, then its DNS SANs, then its subject CN only when `includeCommonName` (`tls.identityFromCommonName`).
    /// Empty names are skipped; nothing here is trusted beyond what the certificate authority signed.
    package static func certificateNames(
        uris: [String], dnsNames: [String], commonName: String?, includeCommonName: Bool
    ) -> [CallerName] {
        var names: [CallerName] = []
        for uri in uris where !uri.isEmpty { names.append(.uri(uri)) }
        for name in dnsNames where !name.isEmpty { names.append(.dns(asciiLowercased(name))) }
        if includeCommonName, let commonName, !commonName.isEmpty { names.append(.commonName(commonName)) }
        return names
    }

    /// RFC 3986 `scheme "://"`: a letter, then letters, digits, `+`, `-` or `.`, then `://`.
    static func hasAuthorityScheme(_ text: String) -> Bool {
        var bytes = text.utf8.makeIterator()
        guard let first = bytes.next(), isLetter(first) else { return false }
        while let byte = bytes.next() {
            if byte == UInt8(ascii: ":") {
                return bytes.next() == UInt8(ascii: "/") && bytes.next() == UInt8(ascii: "/")
            }
            guard
                isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return false }
        }
        return false
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Only A–Z change: DNS names are ASCII, and a Unicode case mapping could make two names meet.
    static func asciiLowercased(_ text: String) -> String {
        guard text.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return text }
        return String(
            decoding: text.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 },
            as: UTF8.self)
    }
}

extension String {
    /// The rest after `prefix`, or nil when the string does not start with it.
    fileprivate func dropping(prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
