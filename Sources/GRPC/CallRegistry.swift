import GatewayCore
import HTTP2

/// The live calls of one event loop, so shutdown can end the ones still open. Loop-confined.
final class CallRegistry {
    let streamWriteHighWatermark: Int
    private var calls: [ObjectIdentifier: ServerCall] = [:]

    init(streamWriteHighWatermark: Int) {
        self.streamWriteHighWatermark = streamWriteHighWatermark
    }

    var count: Int { calls.count }

    func add(_ call: ServerCall) { calls[ObjectIdentifier(call)] = call }
    func remove(_ call: ServerCall) { calls[ObjectIdentifier(call)] = nil }

    /// Ends every open call with `status` (e.g. UNAVAILABLE at the end of a shutdown's grace period), or
    /// with the status its handler supplied for this case (`ResponseStream.send(_:shutdownStatus:)`).
    func finishAll(_ status: RPCStatus) {
        for call in Array(calls.values) { call.finish(call.shutdownStatus ?? status) }
    }
}
