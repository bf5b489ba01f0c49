/// Parses HTTP/1.1 requests (RFC 9112) with a Content-Length body; chunked request bodies are refused.
enum HTTP1RequestParser {
    enum Outcome {
        case incomplete
        case request(HTTPRequest, keepAlive: Bool)
        case failure(status: Int, reason: String)
    }

    /// Takes one complete request off the front of `buffer`.
    static func parse(_ buffer: inout [UInt8], maxHeadBytes: Int, maxBodyBytes: Int) -> Outcome {
        guard let headEnd = findHeadEnd(buffer) else {
            return buffer.count > maxHeadBytes ? .failure(status: 431, reason: "request head too large") : .incomplete
        }
        let headText = String(decoding: buffer[..<headEnd], as: UTF8.self)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return .failure(status: 400, reason: "empty request") }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), !requestLine[0].isEmpty,
            requestLine[1].hasPrefix("/")
        else {
            return .failure(status: 400, reason: "malformed request line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
            else {
                return .failure(status: 400, reason: "malformed header line")
            }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            headers.append((line[..<colon].lowercased(), value))
        }
        if headers.contains(where: { $0.name == "transfer-encoding" }) {
            if maxBodyBytes == 0 { return .failure(status: 413, reason: "this endpoint takes no request body") }
            return .failure(status: 501, reason: "chunked request bodies are not supported; send content-length")
        }
        var length = 0
        if let text = headers.first(where: { $0.name == "content-length" })?.value {
            guard let value = Int(text), value >= 0 else { return .failure(status: 400, reason: "bad content-length") }
            length = value
        }
        if length > maxBodyBytes {
            return .failure(
                status: 413,
                reason: maxBodyBytes == 0 ? "this endpoint takes no request body" : "request body too large")
        }
        let bodyStart = headEnd + 4
        guard buffer.count >= bodyStart + length else { return .incomplete }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        let version = requestLine[2]
        let connection = headers.first(where: { $0.name == "connection" })?.value.lowercased() ?? ""
        let keepAlive = version == "HTTP/1.1" ? connection != "close" : connection == "keep-alive"
        let request = HTTPRequest(
            method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: body)
        return .request(request, keepAlive: keepAlive)
    }

    private static func findHeadEnd(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var slice = self
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
