/// Parses HTTP/1.1 requests by RFC 9112, strictly: a request another parser could frame differently (a
/// proxy in front, say) is refused rather than guessed at, so no bytes of it can become a second request.
///
/// Refused with 400: a bare LF or bare CR anywhere in the head; an obs-fold (a line starting with SP or
/// HTAB, RFC 9112 §5.2); a header name that is not a token, or whitespace before its colon (§5.1); control
/// characters in a field value; a `Content-Length` that is not digits only (no sign, list or inner space),
/// two `Content-Length` fields even with equal values (§6.3 lets a recipient merge equal ones; this one does
/// not, so no two parsers can disagree), `Content-Length` with `Transfer-Encoding` (§6.1), `Transfer-Encoding`
/// in HTTP/1.0; a request line that is not `method SP target SP HTTP/d.d` with a token method and an
/// origin-form or absolute-form target (§3); an HTTP/1.1 request without exactly one `Host` (§3.2). Other
/// statuses: 431 for a head over `maxHeadBytes`, 413 for a body over `maxBodyBytes`, 501 for
/// `Transfer-Encoding` (chunked request bodies are not supported), 505 for a major version other than 1.
///
/// A value with state: it remembers how far the head was searched and, once a head is parsed, the head while
/// its body arrives, so bytes trickling in cost no re-parse. The caller closes the connection after any
/// failure and reads nothing more from it.
struct HTTP1RequestParser {
    /// What `parse` found at the front of the buffer.
    enum Outcome {
        case incomplete
        case request(HTTPRequest, keepAlive: Bool)
        case failure(status: Int, reason: String)
    }

    /// A parsed head whose body is still arriving.
    private struct Head {
        var request: HTTPRequest
        var keepAlive: Bool
        /// Bytes of the head, its final empty line included: the body starts there.
        var length: Int
        var bodyLength: Int
    }

    /// Largest request head (request line and fields, without the final empty line).
    let maxHeadBytes: Int
    /// Largest request body.
    let maxBodyBytes: Int
    /// The buffer's first `searched` bytes hold no end of head and no bare LF.
    private var searched = 0
    /// The one empty line allowed before this request's line was dropped.
    private var skippedEmptyLine = false
    private var head: Head?

    init(maxHeadBytes: Int, maxBodyBytes: Int) {
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// Takes one complete request off the front of `buffer`, which holds the connection's unparsed bytes
    /// (the same buffer, grown, on every call until a request or a failure comes out).
    mutating func parse(_ buffer: inout [UInt8]) -> Outcome {
        if head == nil {
            // RFC 9112 §2.2: one empty line before the request line is ignored (a client's stray CRLF after a body).
            if !skippedEmptyLine, searched == 0, buffer.count >= 2, buffer[0] == HTTP1Syntax.cr,
                buffer[1] == HTTP1Syntax.lf
            {
                buffer.removeFirst(2)
                skippedEmptyLine = true
            }
            switch findHeadEnd(buffer) {
            case .none:
                return buffer.count > maxHeadBytes + 4
                    ? .failure(status: 431, reason: "request head too large") : .incomplete
            case .bareLF:
                return .failure(status: 400, reason: "bare LF in the request head")
            case .end(let end):
                searched = 0
                guard end - 4 <= maxHeadBytes else { return .failure(status: 431, reason: "request head too large") }
                switch Self.parseHead(buffer[..<(end - 4)], maxBodyBytes: maxBodyBytes) {
                case .failure(let status, let reason):
                    return .failure(status: status, reason: reason)
                case .head(let request, let keepAlive, let bodyLength):
                    head = Head(request: request, keepAlive: keepAlive, length: end, bodyLength: bodyLength)
                }
            }
        }
        guard var complete = head, buffer.count >= complete.length + complete.bodyLength else { return .incomplete }
        head = nil
        skippedEmptyLine = false
        complete.request.body = Array(buffer[complete.length..<(complete.length + complete.bodyLength)])
        buffer.removeFirst(complete.length + complete.bodyLength)
        return .request(complete.request, keepAlive: complete.keepAlive)
    }

    private enum HeadEnd {
        case none
        case bareLF
        /// The index just past the head's final CRLF CRLF.
        case end(Int)
    }

    /// Looks for CRLF CRLF from where the last call stopped; every LF on the way must follow a CR.
    private mutating func findHeadEnd(_ buffer: [UInt8]) -> HeadEnd {
        var index = searched
        while index < buffer.count {
            if buffer[index] == HTTP1Syntax.lf {
                guard index > 0, buffer[index - 1] == HTTP1Syntax.cr else { return .bareLF }
                if index >= 3, buffer[index - 2] == HTTP1Syntax.lf, buffer[index - 3] == HTTP1Syntax.cr {
                    return .end(index + 1)
                }
            }
            index += 1
        }
        // The last three bytes may be the start of the end: searched again with the next bytes.
        searched = max(0, buffer.count - 3)
        return .none
    }

    private enum ParsedHead {
        case head(HTTPRequest, keepAlive: Bool, bodyLength: Int)
        case failure(status: Int, reason: String)
    }

    /// Parses a head (without its final empty line) whose every LF follows a CR.
    private static func parseHead(_ bytes: ArraySlice<UInt8>, maxBodyBytes: Int) -> ParsedHead {
        var lines = HTTP1HeadLines(bytes)
        guard let requestLine = lines.next() else { return .failure(status: 400, reason: "malformed request line") }
        let parsed: HTTP1RequestLine
        switch HTTP1RequestLine.parse(requestLine) {
        case .success(let line): parsed = line
        case .failure(let error): return .failure(status: error.status, reason: error.reason)
        }
        var headers: [(name: String, value: String)] = []
        var contentLengths: [ArraySlice<UInt8>] = []
        var hosts = 0
        var transferEncoding = false
        var connectionOptions: [String] = []
        while let line = lines.next() {
            if line.contains(HTTP1Syntax.cr) { return .failure(status: 400, reason: "bare CR in the request head") }
            guard let first = line.first, first != HTTP1Syntax.space, first != HTTP1Syntax.tab else {
                return .failure(status: 400, reason: "obs-fold (a field line starting with whitespace) is refused")
            }
            guard let colon = line.firstIndex(of: HTTP1Syntax.colon), colon > line.startIndex,
                line[..<colon].allSatisfy(HTTP1Syntax.isTokenByte)
            else {
                return .failure(status: 400, reason: "malformed header line")
            }
            let value = HTTP1Syntax.trimmingWhitespace(line[(colon + 1)...])
            guard value.allSatisfy(HTTP1Syntax.isFieldValueByte) else {
                return .failure(status: 400, reason: "control character in a header value")
            }
            let name = String(decoding: line[..<colon].map(HTTP1Syntax.lowercased), as: UTF8.self)
            switch name {
            case "content-length": contentLengths.append(value)
            case "transfer-encoding": transferEncoding = true
            case "host":
                hosts += 1
                guard value.allSatisfy(HTTP1Syntax.isHostByte) else {
                    return .failure(status: 400, reason: "malformed host header")
                }
            default: break
            }
            if name == "connection" { connectionOptions += HTTP1Syntax.lowercasedListElements(value) }
            let text = String(decoding: value, as: UTF8.self)
            headers.append((name, text))
        }
        // RFC 9112 §3.2: every HTTP/1.1 request has one (even with an absolute-form target); HTTP/1.0 may lack it.
        if hosts > 1 || (hosts == 0 && parsed.minorVersion >= 1) {
            return .failure(status: 400, reason: "an HTTP/1.1 request needs exactly one host header")
        }
        if let host = parsed.absoluteHost {
            // RFC 9112 §3.2.2: the absolute-form's authority replaces the host field.
            headers.removeAll { $0.name == "host" }
            headers.append(("host", host))
        }
        var length = 0
        if !contentLengths.isEmpty {
            guard contentLengths.count == 1, let digits = contentLengths.first, !digits.isEmpty,
                digits.allSatisfy(HTTP1Syntax.isDigit)
            else {
                return .failure(status: 400, reason: "bad content-length: one field of digits only")
            }
            if transferEncoding {
                return .failure(status: 400, reason: "content-length and transfer-encoding together are refused")
            }
            // Digits only: too many of them is just a very large length.
            let significant = digits.drop { $0 == UInt8(ascii: "0") }
            length = significant.count > 18 ? Int.max : significant.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        if transferEncoding {
            if parsed.minorVersion == 0 { return .failure(status: 400, reason: "transfer-encoding in HTTP/1.0") }
            if maxBodyBytes == 0 { return .failure(status: 413, reason: "this endpoint takes no request body") }
            return .failure(status: 501, reason: "chunked request bodies are not supported; send content-length")
        }
        if length > maxBodyBytes {
            return .failure(
                status: 413,
                reason: maxBodyBytes == 0 ? "this endpoint takes no request body" : "request body too large")
        }
        let keepAlive =
            parsed.minorVersion >= 1
            ? !connectionOptions.contains("close")
            : connectionOptions.contains("keep-alive") && !connectionOptions.contains("close")
        let request = HTTPRequest(method: parsed.method, target: parsed.target, headers: headers)
        return .head(request, keepAlive: keepAlive, bodyLength: length)
    }
}
