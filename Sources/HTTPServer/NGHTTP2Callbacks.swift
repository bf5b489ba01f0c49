internal import CNGHTTP2

/// The nghttp2 callback table shared by every server session. Each callback is a trampoline: it recovers
/// the `ServerConnection` from the session's user data and never traps on what the peer sent.
final class NGHTTP2Callbacks: @unchecked Sendable {
    /// Immutable after init; nghttp2 only reads the table and options when a session is created.
    static let shared = NGHTTP2Callbacks()

    let pointer: OpaquePointer
    let options: OpaquePointer

    private init() {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            preconditionFailure("nghttp2_session_callbacks_new: out of memory")
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            switch frame.pointee.headers.cat {
            case NGHTTP2_HCAT_REQUEST:
                withConnection(userData) { $0.beginHeaders(streamID: frame.pointee.hd.stream_id) }
            case NGHTTP2_HCAT_HEADERS:
                // Request trailers: their block has the same deadline as a request's.
                withConnection(userData) { $0.beginTrailers(streamID: frame.pointee.hd.stream_id) }
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let userData, let name, let value else { return 0 }
            withConnection(userData) {
                $0.header(
                    streamID: frame.pointee.hd.stream_id,
                    name: UnsafeBufferPointer(start: name, count: nameLength),
                    value: UnsafeBufferPointer(start: value, count: valueLength))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            withConnection(userData) { connection in
                let header = frame.pointee.hd
                let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
                switch UInt32(header.type) {
                case NGHTTP2_HEADERS.rawValue:
                    if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                        connection.headersComplete(streamID: header.stream_id, endStream: endStream)
                    } else {
                        connection.trailersComplete(streamID: header.stream_id)
                        if endStream { connection.dataEnded(streamID: header.stream_id) }  // trailers end the request
                    }
                case NGHTTP2_DATA.rawValue:
                    if endStream { connection.dataEnded(streamID: header.stream_id) }
                case NGHTTP2_RST_STREAM.rawValue:
                    connection.resetReceived(streamID: header.stream_id)  // before nghttp2 closes the stream
                case NGHTTP2_SETTINGS.rawValue:
                    if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { connection.settingsReceived() }
                case NGHTTP2_PING.rawValue:
                    if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                        let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) {
                            $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                        }
                        connection.pingAcknowledged(payload: payload)
                    } else {
                        connection.clientPinged()
                    }
                default:
                    break
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let userData, let data else { return 0 }
            withConnection(userData) {
                $0.dataChunk(streamID: streamID, UnsafeRawBufferPointer(start: data, count: length))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let userData else { return 0 }
            withConnection(userData) {
                $0.streamClosed(streamID: streamID, errorCode: HTTP2ErrorCode(rawValue: errorCode))
            }
            return 0
        }
        // DATA frames the data source marked NO_COPY (`ServerConnection.readData`): their header and body go
        // from the stream's queue straight to the connection's outbound bytes, not through nghttp2's buffer.
        nghttp2_session_callbacks_set_send_data_callback(callbacks) { _, frame, frameHeader, length, _, userData in
            guard let frame, let frameHeader, let userData else { return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return withConnection(userData) {
                $0.sendData(
                    streamID: frame.pointee.hd.stream_id, frameHeader: frameHeader, length: length,
                    padding: Int(frame.pointee.data.padlen))
            }
        }
        // Every frame sent passes here; only a GOAWAY (ours or one nghttp2 decided: a protocol error, a flood)
        // reaches the connection, which counts it and reports its reason.
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue), let userData else { return 0 }
            let goaway = frame.pointee.goaway
            let debug = UnsafeBufferPointer(start: goaway.opaque_data, count: goaway.opaque_data_len)
            withConnection(userData) {
                $0.goawaySent(
                    SentGoaway(
                        code: HTTP2ErrorCode(rawValue: goaway.error_code),
                        reason: String(decoding: debug, as: UTF8.self), lastStreamID: goaway.last_stream_id))
            }
            return 0
        }
        self.pointer = callbacks

        var options: OpaquePointer?
        guard nghttp2_option_new(&options) == 0, let options else {
            preconditionFailure("nghttp2_option_new: out of memory")
        }
        // Abuse limits set explicitly rather than trusting a distribution's defaults: at most 1000 queued
        // SETTINGS/PING ACKs (flood), 32 entries per SETTINGS frame, 8 CONTINUATION frames per header block.
        nghttp2_option_set_max_outbound_ack(options, 1000)
        nghttp2_option_set_max_settings(options, 32)
        nghttp2_option_set_max_continuations(options, 8)
        // nghttp2's stream-reset limit (CVE-2023-44487, rapid reset; 1000 burst / 33 per second by default)
        // counts every RST_STREAM received, also those ending a stream the server has answered: a grpcio client
        // cancelling server streams it has read enough of (eight threads on one channel) drew GOAWAY
        // INTERNAL_ERROR every few seconds and re-dialled. It is off; the connection counts only resets of
        // streams not answered yet, the attack's pattern (`ResetBudget`, `unansweredResetLimit`).
        nghttp2_option_set_stream_reset_rate_limit(options, .max, .max)
        // The window is granted by hand as handlers take their messages (ServerConnection/ReceiveLedger), so
        // a peer cannot make the server hold more than the per-connection and process budgets.
        nghttp2_option_set_no_auto_window_update(options, 1)
        // gRPC has no use for RFC 7540 priorities: a closed stream is forgotten at once instead of being kept
        // (up to the concurrency limit per connection) to maintain a priority tree nobody asked for.
        nghttp2_option_set_no_closed_streams(options, 1)
        self.options = options
    }

    /// The data source of every response body (see `ServerConnection.readData`).
    static let readData: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
        guard let userData, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
        return withConnection(userData) {
            $0.readData(streamID: streamID, into: buffer, capacity: length, flags: flags)
        }
    }
}

/// Runs `body` with the session's connection without retaining and releasing it: nghttp2 calls back only
/// from inside `nghttp2_session_mem_recv`/`mem_send`, which the connection itself is running, so it is alive
/// for the whole callback. (The callbacks run ~12 times a call; each retain/release pair is two atomics.)
@inline(__always)
private func withConnection<Result>(
    _ userData: UnsafeMutableRawPointer, _ body: (ServerConnection) -> Result
) -> Result {
    Unmanaged<ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}
