import GatewayFoundation

/// Keeps a status small enough to reach every caller. nghttp2 refuses a header block larger than its
/// deflate limit and stock clients drop responses whose metadata exceeds 8-16 KiB (grpcio 8 KiB, grpc-go
/// 16 KiB), so an error that quoted a huge input would reach nobody; the caller would time out instead.
/// `grpc-message` is cut to `maxMessageBytes` of percent-encoded text and the details to
/// `maxDetailsBytes` of base64: metadata values clipped first, then the metadata dropped (reason, domain and
/// retry delay kept), then the details dropped. Pure: tested without a server.
enum TrailerBounds {
    /// Longest `grpc-message` value (percent-encoded).
    static let maxMessageBytes = 1024
    /// Longest `grpc-status-details-bin` value (base64).
    static let maxDetailsBytes = 3072
    /// Longest ErrorInfo metadata value kept when the details are too large.
    static let maxMetadataValueBytes = 256
    /// Most ErrorInfo metadata entries kept when the details are too large.
    static let maxMetadataEntries = 16

    /// `status` with its message and details cut so that its trailers fit the limits above.
    static func bounded(_ status: RPCStatus) -> RPCStatus {
        var bounded = status
        bounded.message = clippedMessage(status.message)
        guard status.details != nil else { return bounded }
        if fits(bounded) { return bounded }
        if var info = bounded.details?.info {
            let kept = info.metadata.sorted { $0.key < $1.key }.prefix(maxMetadataEntries)
            info.metadata = Dictionary(
                uniqueKeysWithValues: kept.map {
                    (
                        EchoedInput.clip($0.key, maxBytes: 64),
                        EchoedInput.clip($0.value, maxBytes: maxMetadataValueBytes)
                    )
                })
            info.reason = EchoedInput.clip(info.reason, maxBytes: 64)
            info.domain = EchoedInput.clip(info.domain, maxBytes: 64)
            bounded.details?.info = info
            if fits(bounded) { return bounded }
            info.metadata = [:]
            bounded.details?.info = info
            if fits(bounded) { return bounded }
        }
        bounded.details = nil
        return bounded
    }

    /// The longest prefix of `message` (whole characters) whose percent-encoding, with "..." appended when
    /// cut, fits `maxMessageBytes`.
    static func clippedMessage(_ message: String, maxBytes: Int = maxMessageBytes) -> String {
        if encodedSize(message.utf8) <= maxBytes { return message }
        var size = 0
        var end = message.startIndex
        for index in message.indices {
            let next = message.index(after: index)
            let characterSize = encodedSize(message[index..<next].utf8)
            if size + characterSize > maxBytes - 3 { break }
            size += characterSize
            end = next
        }
        return message[..<end] + "..."
    }

    private static func fits(_ status: RPCStatus) -> Bool {
        guard let details = StatusDetailsEncoding.encode(status) else { return true }
        return (details.count + 2) / 3 * 4 <= maxDetailsBytes
    }

    /// Bytes of the percent-encoding (`StatusMessageEncoding`) of `bytes`.
    private static func encodedSize<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Int {
        var size = 0
        for byte in bytes { size += byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "%") ? 3 : 1 }
        return size
    }
}
