/// A request line (RFC 9112 §3): `method SP request-target SP HTTP-version`, one SP each, nothing else.
struct HTTP1RequestLine: Equatable {
    /// A request line refused: the status and a fixed reason (never request bytes).
    struct Refusal: Error, Equatable {
        var status: Int
        var reason: String
    }

    /// A token.
    var method: String
    /// Origin-form: path and query. An absolute-form target is reduced to this.
    var target: String
    /// The minor version of HTTP/1.x: 0 is HTTP/1.0, anything else is treated as 1.1 (RFC 9110 §2.5).
    var minorVersion: Int
    /// The authority of an absolute-form target (RFC 9112 §3.2.2: it replaces `Host`); nil for origin-form.
    var absoluteHost: String?

    static func parse(_ line: ArraySlice<UInt8>) -> Result<HTTP1RequestLine, Refusal> {
        let malformed = Refusal(status: 400, reason: "malformed request line")
        let parts = line.split(separator: HTTP1Syntax.space, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, let method = parts.first, !method.isEmpty, method.allSatisfy(HTTP1Syntax.isTokenByte)
        else { return .failure(malformed) }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: "HTTP/".utf8), HTTP1Syntax.isDigit(version[5]),
            version[6] == UInt8(ascii: "."), HTTP1Syntax.isDigit(version[7])
        else { return .failure(malformed) }
        guard version[5] == UInt8(ascii: "1") else {
            return .failure(Refusal(status: 505, reason: "only HTTP/1.x is served over this syntax"))
        }
        let minor = Int(version[7] - UInt8(ascii: "0"))
        let target = parts[1]
        guard !target.isEmpty, target.allSatisfy(HTTP1Syntax.isTargetByte) else { return .failure(malformed) }
        let methodText = String(decoding: method, as: UTF8.self)
        if target.first == UInt8(ascii: "/") {
            return .success(
                HTTP1RequestLine(
                    method: methodText, target: String(decoding: target, as: UTF8.self), minorVersion: minor))
        }
        let lowered = target.map(HTTP1Syntax.lowercased)
        guard let schemeEnd = ["http://", "https://"].first(where: { lowered.starts(with: $0.utf8) })?.utf8.count
        else {
            return .failure(Refusal(status: 400, reason: "the request target must be origin-form or absolute-form"))
        }
        let afterScheme = target.dropFirst(schemeEnd)
        let authorityEnd = afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
        let authority = afterScheme[..<(authorityEnd ?? afterScheme.endIndex)]
        // RFC 9110 §4.2.4: userinfo in an http(s) URI is an error.
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return .failure(malformed) }
        let rest = afterScheme[(authorityEnd ?? afterScheme.endIndex)...]
        let path = rest.first == UInt8(ascii: "/") ? Array(rest) : Array("/".utf8) + rest
        return .success(
            HTTP1RequestLine(
                method: methodText, target: String(decoding: path, as: UTF8.self), minorVersion: minor,
                absoluteHost: String(decoding: authority, as: UTF8.self)))
    }
}
