import GatewayCore
import HTTP2

/// The live calls of one event loop, so shutdown can end the ones still open. Loop-confined. Each call knows
/// its slot here: added at the end, removed by moving the last call into its place (no hashing).
final class CallRegistry {
    let streamWriteHighWatermark: Int
    private var calls: [ServerCall] = []

    init(streamWriteHighWatermark: Int) {
        self.streamWriteHighWatermark = streamWriteHighWatermark
    }

    var count: Int { calls.count }

    func add(_ call: ServerCall) {
        guard call.registrySlot < 0 else { return }
        call.registrySlot = calls.count
        calls.append(call)
    }

    /// Removes `call` if it is here (a call answered inline was never added).
    func remove(_ call: ServerCall) {
        let slot = call.registrySlot
        guard slot >= 0, slot < calls.count, calls[slot] === call else { return }
        let last = calls.removeLast()
        if last !== call {
            calls[slot] = last
            last.registrySlot = slot
        }
        call.registrySlot = -1
    }

    /// Ends every open call with `status` (e.g. UNAVAILABLE at the end of a shutdown's grace period), or
    /// with the status its handler supplied for this case (`ResponseStream.send(_:shutdownStatus:)`).
    func finishAll(_ status: RPCStatus) {
        for call in calls { call.finish(call.shutdownStatus ?? status) }
    }
}
