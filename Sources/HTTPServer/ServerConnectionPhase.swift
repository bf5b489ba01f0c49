/// Where a server connection is in its life, as far as writing and closing go. nghttp2 must not be written to,
/// nor its session let go, while `nghttp2_session_mem_recv` runs: a close decided in one of its callbacks (too
/// many PINGs, say) waits for it to return. Pure; `ServerConnection` performs the answers.
enum ServerConnectionPhase: Equatable {
    /// Between reads: a close happens at once.
    case serving
    /// Inside `nghttp2_session_mem_recv`; `closeRequested` once a callback decided to close.
    case receiving(closeRequested: Bool)
    /// The socket is closed and the streams let go; every later event is ignored.
    case closed

    /// What to do about a close decided now.
    enum CloseRequest: Equatable {
        /// Flush what is queued and close.
        case closeNow
        /// Wait for `nghttp2_session_mem_recv` to return (`endReceiving` answers true then).
        case afterReceiving
        /// Already closed: nothing.
        case ignored
    }

    var isClosed: Bool { self == .closed }

    /// `nghttp2_session_mem_recv` is about to run. Nothing changes once closed.
    mutating func beginReceiving() {
        if self == .serving { self = .receiving(closeRequested: false) }
    }

    /// `nghttp2_session_mem_recv` returned: true when a callback asked for the close meanwhile.
    mutating func endReceiving() -> Bool {
        guard case .receiving(let closeRequested) = self else { return false }
        self = .serving
        return closeRequested
    }

    /// A close was decided (by connection management).
    mutating func requestClose() -> CloseRequest {
        switch self {
        case .serving: return .closeNow
        case .receiving:
            self = .receiving(closeRequested: true)
            return .afterReceiving
        case .closed: return .ignored
        }
    }

    /// The connection closes now; false when it already was.
    mutating func close() -> Bool {
        if self == .closed { return false }
        self = .closed
        return true
    }
}
