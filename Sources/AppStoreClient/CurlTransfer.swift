import AppStoreDomain
internal import CCurl
import Foundation

/// One libcurl easy handle with everything it points at. Owned by the event loop that drives its multi handle:
/// created there, driven there, freed there. Ownership: the easy handle, the `curl_slist` of headers and the POST
/// body buffer are all owned here and freed in `deinit`, after the handle left the multi handle, because
/// libcurl reads the header list and the body (`CURLOPT_POSTFIELDS` is not copied) until the transfer ends.
final class CurlTransfer {
    let id: Int
    let easy: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var bodyBuffer: UnsafeMutableRawBufferPointer?
    private var continuation: CheckedContinuation<TransferResult, Never>?
    private let maxResponseBytes: Int
    /// The client's share handle (names, TLS sessions), held for as long as the easy handle points at it.
    private let share: CurlShare?

    // Filled by the callbacks.
    private var responseHeaders: [(name: String, value: String)] = []
    private var responseBody: [UInt8] = []
    private var tooLarge = false

    init(
        submission: Submission, configuration: UpstreamHTTPClient.Configuration, share: CurlShare?
    ) throws(UpstreamTransportError) {
        guard let easy = curl_easy_init() else {
            throw UpstreamTransportError(.invalidRequest, "curl_easy_init failed")
        }
        id = submission.id
        self.easy = easy
        continuation = submission.continuation
        maxResponseBytes = configuration.maxResponseBytes
        self.share = share
        // From here on `deinit` frees whatever was set up, also when an option below is refused; the
        // caller is answered by whoever catches the error, so the continuation is dropped first.
        do {
            try configure(submission.request, configuration)
        } catch {
            continuation = nil
            throw error
        }
    }

    deinit {
        curl_easy_cleanup(easy)
        if let headerList { curl_slist_free_all(headerList) }
        bodyBuffer?.deallocate()
        // A transfer dropped without an answer (cannot happen by construction) must not leak its caller.
        continuation?.resume(returning: .failure(UpstreamTransportError(.shutDown, "transfer dropped")))
    }

    private func set(_ option: CURLoption, _ value: Int) throws(UpstreamTransportError) {
        try check(ccurl_setopt_long(easy, option, value), option)
    }

    private func set(_ option: CURLoption, _ value: String) throws(UpstreamTransportError) {
        // String options are copied by libcurl (except POSTFIELDS, never passed here).
        try check(value.withCString { ccurl_setopt_str(easy, option, $0) }, option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(UpstreamTransportError) {
        guard code == CURLE_OK else {
            throw UpstreamTransportError(
                .invalidRequest, "curl option \(option.rawValue) refused: \(String(cString: curl_easy_strerror(code)))")
        }
    }

    private func configure(
        _ request: UpstreamRequest, _ configuration: UpstreamHTTPClient.Configuration
    ) throws(UpstreamTransportError) {
        let secure = request.url.lowercased().hasPrefix("https://")
        guard secure || request.url.lowercased().hasPrefix("http://") else {
            throw UpstreamTransportError(.invalidRequest, "only http and https URLs are supported")
        }
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_NOSIGNAL, 1)  // several threads: no SIGALRM-based DNS timeouts
        // A transfer removed while its name is still being resolved leaves the resolver thread behind instead of
        // joining it: removal happens on an event loop, which must never wait for getaddrinfo.
        try set(CURLOPT_QUICK_EXIT, 1)
        if let share { try check(ccurl_setopt_ptr(easy, CURLOPT_SHARE, share.share), CURLOPT_SHARE) }
        try set(CURLOPT_HTTP_VERSION, secure ? Int(CURL_HTTP_VERSION_2TLS) : Int(CURL_HTTP_VERSION_1_1))
        try set(CURLOPT_PIPEWAIT, 1)  // wait for a connection that may multiplex instead of opening another
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(max(1, configuration.connectTimeout.wholeMillisecondsForCurl)))
        if let timeout = request.timeout {
            try set(CURLOPT_TIMEOUT_MS, Int(max(1, timeout.wholeMillisecondsForCurl)))
        }
        let trust = UpstreamTrust(caFile: configuration.caFile, trustSystemCAs: configuration.trustSystemCAs)
        if let bundle = trust.caBundle { try set(CURLOPT_CAINFO, bundle) }
        if !trust.systemDirectory {
            try check(ccurl_setopt_ptr(easy, CURLOPT_CAPATH, nil), CURLOPT_CAPATH)
        }
        try set(CURLOPT_USERAGENT, configuration.userAgent)

        for (name, value) in request.headers {
            let line = "\(name): \(value)"
            guard let appended = line.withCString({ curl_slist_append(headerList, $0) }) else {
                throw UpstreamTransportError(.invalidRequest, "curl_slist_append failed")
            }
            headerList = appended
        }
        if let headerList { try check(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), CURLOPT_HTTPHEADER) }

        switch request.method {
        case .get: break
        case .post: try set(CURLOPT_POST, 1)
        case .put: try set(CURLOPT_CUSTOMREQUEST, "PUT")
        case .delete: try set(CURLOPT_CUSTOMREQUEST, "DELETE")
        }
        // DELETE, like GET, carries no body.
        if request.method == .post || request.method == .put {
            let body = request.body ?? []
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, body.count), alignment: 1)
            bodyBuffer = buffer
            buffer.copyBytes(from: body)
            try check(
                ccurl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), CURLOPT_POSTFIELDSIZE_LARGE
            )
            try check(ccurl_setopt_ptr(easy, CURLOPT_POSTFIELDS, buffer.baseAddress), CURLOPT_POSTFIELDS)
        }

        // The callbacks find this object through their user pointer; its multi handle's thread keeps it alive
        // while the handle is in the multi handle, and no callback runs after it left.
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(ccurl_setopt_write(easy, CURLOPT_WRITEFUNCTION, curlBodyCallback), CURLOPT_WRITEFUNCTION)
        try check(ccurl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), CURLOPT_WRITEDATA)
        try check(ccurl_setopt_write(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback), CURLOPT_HEADERFUNCTION)
        try check(ccurl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), CURLOPT_HEADERDATA)
    }

    /// Body bytes; returning less than offered makes libcurl abort with CURLE_WRITE_ERROR.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard responseBody.count + bytes.count <= maxResponseBytes else {
            tooLarge = true
            return 0
        }
        if responseBody.isEmpty {
            // A body announced over the cap is refused at its first bytes, not after they all arrived.
            guard reserveAnnouncedBody(firstChunk: bytes.count) else {
                tooLarge = true
                return 0
            }
        }
        responseBody.append(contentsOf: bytes)
        return bytes.count
    }

    /// Sizes the body buffer once for the `Content-Length` the peer announced, so a body arriving in many chunks
    /// is not copied again at every growth. The announcement is the peer's word: at most `maxResponseBytes` and
    /// `Self.maxReservedBody` are reserved, beyond that the buffer grows as the bytes really arrive. False when
    /// the announced length is over `maxResponseBytes`.
    private func reserveAnnouncedBody(firstChunk: Int) -> Bool {
        var announced: curl_off_t = -1
        guard ccurl_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK,
            announced > firstChunk
        else { return true }
        guard Int(clamping: announced) <= maxResponseBytes else { return false }
        responseBody.reserveCapacity(min(Int(clamping: announced), Self.maxReservedBody))
        return true
    }

    /// The most reserved on the peer's word alone (a transaction history page is ~100 KB).
    static let maxReservedBody = 1 << 20

    /// One header line (status lines included; HTTP/2 trailers arrive here too).
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch UpstreamHeaderLine(bytes) {
        case .status:
            responseHeaders = []  // a new response (after 1xx): keep only the final one's fields
        case .field(let name, let value):
            if responseHeaders.count < 200 { responseHeaders.append((name, value)) }
        case .other:
            break
        }
        return bytes.count
    }

    /// The result of a finished transfer with libcurl's `code`.
    func outcome(_ code: CURLcode) -> TransferResult {
        if code == CURLE_OK {
            var status = 0
            var version = 0
            guard ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK, status > 0 else {
                return .failure(UpstreamTransportError(.connectionFailed, "no HTTP status in the response"))
            }
            if ccurl_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version) != CURLE_OK { version = 0 }
            return .success(
                UpstreamResponse(
                    status: status, headers: responseHeaders, body: responseBody,
                    httpVersion: version == Int(CURL_HTTP_VERSION_2_0) ? 2 : 1))
        }
        let text = String(cString: curl_easy_strerror(code))
        if tooLarge {
            return .failure(UpstreamTransportError(.responseTooLarge, "response body over \(maxResponseBytes) bytes"))
        }
        if code == CURLE_OPERATION_TIMEDOUT {
            return .failure(UpstreamTransportError(.timedOut, text))
        }
        if code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL {
            return .failure(UpstreamTransportError(.invalidRequest, text))
        }
        return .failure(UpstreamTransportError(.connectionFailed, "\(text) (curl \(code.rawValue))"))
    }

    /// Connections this transfer opened (0 when it reused one).
    func connectionsOpened() -> Int {
        var count = 0
        return ccurl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &count) == CURLE_OK ? count : 0
    }

    /// Lets go of the caller without answering: whoever refused the transfer answers it.
    func forgetCaller() {
        continuation = nil
    }

    /// Answers the caller, once.
    func complete(_ result: TransferResult) {
        continuation?.resume(returning: result)
        continuation = nil
    }
}

// Trampolines: recover the transfer from the user pointer; never trap on what the peer sent.
private let curlBodyCallback: curl_write_callback = { data, size, count, user in
    guard let user else { return 0 }
    let length = size &* count
    guard let data, length > 0 else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length))
}

private let curlHeaderCallback: curl_write_callback = { data, size, count, user in
    guard let user else { return 0 }
    let length = size &* count
    guard let data, length > 0 else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: length))
}

extension Duration {
    /// Whole milliseconds, rounded up so a tiny positive timeout never becomes 0 (= no timeout in libcurl).
    var wholeMillisecondsForCurl: Int64 {
        let (seconds, attoseconds) = components
        let (perMs, remainder) = attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000_000_000)
        return seconds &* 1000 &+ perMs &+ (remainder > 0 ? 1 : 0)
    }
}

/// One header line as libcurl hands it over, read byte by byte (no Foundation, no intermediate String): a
/// status line (`HTTP/…`), a field with its name in ASCII lowercase and its value without the surrounding
/// spaces, tabs and line ends, or anything else (the blank line ending the head). Bytes that are not UTF-8 are
/// replaced, as in any String made from the peer's bytes.
enum UpstreamHeaderLine: Equatable {
    case status
    case field(name: String, value: String)
    case other

    init(_ bytes: UnsafeRawBufferPointer) {
        if bytes.starts(with: "HTTP/".utf8) {
            self = .status
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            self = .other
            return
        }
        func isBlank(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\n")
        }
        var start = colon + 1
        var end = bytes.count
        while start < end, isBlank(bytes[start]) { start += 1 }
        while end > start, isBlank(bytes[end - 1]) { end -= 1 }
        let name = String(unsafeUninitializedCapacity: colon) { buffer in
            for index in 0..<colon {
                let byte = bytes[index]
                buffer[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return colon
        }
        self = .field(name: name, value: String(decoding: bytes[start..<end], as: UTF8.self))
    }
}
