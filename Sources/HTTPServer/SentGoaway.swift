/// A GOAWAY frame a connection sent (RFC 9113 §6.8), whoever decided it: the connection's own rules (idle,
/// maximum age, PING strikes, unanswered resets, a graceful shutdown) or nghttp2 (a protocol error, a flood).
public struct SentGoaway: Sendable, Hashable {
    /// The frame's error code.
    public var code: HTTP2ErrorCode
    /// Its debug data as text: the reason ("max_idle", "too_many_resets", nghttp2's description of a protocol
    /// error); empty when the frame carried none.
    public var reason: String
    /// The last stream id the frame let through (2^31 - 1 for the first GOAWAY of a graceful close).
    public var lastStreamID: Int32

    public init(code: HTTP2ErrorCode, reason: String, lastStreamID: Int32) {
        self.code = code
        self.reason = reason
        self.lastStreamID = lastStreamID
    }
}

extension HTTP2ErrorCode {
    /// The code's name in RFC 9113 §7 ("NO_ERROR", "INTERNAL_ERROR", …), or its value in hex ("0xff") when it
    /// has none: what a metric label or a log line shows.
    public var name: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "0x" + String(rawValue, radix: 16)
    }
}
