internal import CCurl
import Foundation

/// Posts OTLP/HTTP export requests (`Content-Type: application/x-protobuf`) with one libcurl easy handle,
/// reused so the connection to the collector stays open between batches. Confined to the exporter's thread;
/// `perform` blocks that thread only, for at most the timeout.
///
/// Ownership: the easy handle and the header list are made in `init` and freed in `deinit`; the body is
/// passed with `CURLOPT_POSTFIELDS` (not copied) and outlives the `curl_easy_perform` that reads it.
final class OTLPHTTPSender: SpanBatchSender {
    private let easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let problem: String?

    /// A sender to `url` with `headers` besides the content type.
    init(url: String, headers: [(name: String, value: String)], userAgent: String) {
        var problem: String? = tracingCurlGlobalInit == CURLE_OK ? nil : "curl_global_init failed"
        let easy = problem == nil ? curl_easy_init() : nil
        self.easy = easy
        if easy == nil { problem = problem ?? "curl_easy_init failed" }
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK, problem == nil { problem = "\(what): \(String(cString: curl_easy_strerror(code)))" }
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in [("content-type", "application/x-protobuf")] + headers.map({ ($0.name, $0.value) }) {
            let appended = "\(line.0): \(line.1)".withCString { [list] in curl_slist_append(list, $0) }
            if let appended { list = appended } else { problem = problem ?? "curl_slist_append failed" }
        }
        headerList = list
        check(url.withCString { ccurl_setopt_str(easy, CURLOPT_URL, $0) }, "url")
        check(ccurl_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        check(ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "nosignal")
        check(ccurl_setopt_long(easy, CURLOPT_POST, 1), "post")
        check(userAgent.withCString { ccurl_setopt_str(easy, CURLOPT_USERAGENT, $0) }, "user agent")
        check(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, list), "headers")
        // The answer (an ExportTraceServiceResponse) is not needed: read and dropped.
        check(ccurl_setopt_write(easy, CURLOPT_WRITEFUNCTION, discardBody), "write function")
        self.problem = problem
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
        if let headerList { curl_slist_free_all(headerList) }
    }

    func send(_ body: [UInt8], timeout: Duration) -> SpanBatchSendOutcome {
        guard problem == nil, let easy else { return .failed(problem ?? "no curl handle") }
        let (seconds, attoseconds) = timeout.components
        let milliseconds = max(1, Int(clamping: seconds) &* 1000 &+ Int(attoseconds / 1_000_000_000_000_000))
        _ = ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds)
        _ = ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds)
        let code = body.withUnsafeBytes { bytes -> CURLcode in
            _ = ccurl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            _ = ccurl_setopt_ptr(easy, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return curl_easy_perform(easy)
        }
        // The body's storage ends with the closure: libcurl must not keep a pointer to it.
        _ = ccurl_setopt_ptr(easy, CURLOPT_POSTFIELDS, nil)
        guard code == CURLE_OK else { return .failed(String(cString: curl_easy_strerror(code))) }
        var status = 0
        _ = ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return (200...299).contains(status) ? .accepted : .refused(httpStatus: status)
    }
}

/// libcurl's global state, set up once per process before the first handle (the Apple client does the same).
private let tracingCurlGlobalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

private let discardBody: curl_write_callback = { _, size, count, _ in size &* count }
