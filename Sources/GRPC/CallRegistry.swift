import EventLoops
import HTTPServer

/// The live calls of one event loop, so shutdown can end the ones still open, and the header blocks that
/// loop's calls send. Loop-confined; adding and removing a call hashes nothing (`SlotArray`).
final class CallRegistry {
    let streamWriteHighWatermark: Int
    private var calls = SlotArray<ServerCall>()
    /// The head of every response and the trailer of a plain OK, this loop's own: a stream holds its block until
    /// nghttp2 sends it, and one block every loop sent would have its reference count written by all of them.
    let responseHead = HeaderBlock(StatusTrailers.responseHead)
    let okTrailers = HeaderBlock(StatusTrailers.ok)

    init(streamWriteHighWatermark: Int) {
        self.streamWriteHighWatermark = streamWriteHighWatermark
    }

    var count: Int { calls.count }

    func add(_ call: ServerCall) { calls.add(call) }

    /// Removes `call` if it is here (a call answered inline was never added).
    func remove(_ call: ServerCall) { calls.remove(call) }

    /// Ends every open call with `status` (e.g. UNAVAILABLE at the end of a shutdown's grace period), or
    /// with the status its handler supplied for this case (`ResponseStream.send(_:shutdownStatus:)`).
    func finishAll(_ status: RPCStatus) {
        for call in calls.elements { call.finish(call.shutdownStatus ?? status) }
    }

    /// Ends every open call the guard's changed policy no longer allows, with the status the guard gives;
    /// returns how many it ended.
    func finishRefused() -> Int {
        var ended = 0
        for call in calls.elements {
            guard let status = call.context.recheck() else { continue }
            call.finish(status)
            ended += 1
        }
        return ended
    }
}
