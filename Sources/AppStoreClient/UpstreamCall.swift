import GatewayFoundation

typealias TransferResult = Result<UpstreamResponse, UpstreamTransportError>

/// A request on its way to the multi handle that runs it.
struct Submission: Sendable {
    let id: Int
    let request: UpstreamRequest
    let continuation: CheckedContinuation<TransferResult, Never>
}

/// One call's side of the race between handing its transfer over and its caller's cancellation: the one
/// cancellation path, whichever multi handle runs the transfer. A cancellation before the hand-over answers the
/// call at once (nothing is sent); one after it asks for the transfer's removal, which is queued behind the
/// hand-over, so it finds the transfer (or its end). The phase changes and the hand-over or removal request happen
/// under one lock, so a cancellation cannot slip between them; the continuation is resumed outside it (resuming
/// takes the task's status lock, which a concurrent cancellation holds while its handler waits for this lock).
final class UpstreamCall: Sendable {
    private enum Phase { case created, submitted, cancelled }
    private let phase = Lock(Phase.created)

    private init() {}

    /// Waits for the transfer's result. `handOver` starts the transfer, or queues it for the loop that will,
    /// and answers nil, or the error that refuses the call (the continuation is then answered here, never by
    /// `handOver`); `remove` asks for the transfer's removal. Both run under the call's lock and must not resume
    /// the continuation or wait.
    static func transfer(
        handOver: (CheckedContinuation<TransferResult, Never>) -> UpstreamTransportError?,
        remove: @Sendable () -> Void
    ) async -> TransferResult {
        let call = UpstreamCall()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TransferResult, Never>) in
                let refusal: UpstreamTransportError? = call.phase.withLock { phase in
                    if phase == .cancelled { return UpstreamTransportError(.cancelled, "cancelled before sending") }
                    phase = .submitted
                    return handOver(continuation)
                }
                if let refusal { continuation.resume(returning: .failure(refusal)) }
            }
        } onCancel: {
            call.phase.withLock { phase in
                if phase == .submitted { remove() }
                phase = .cancelled
            }
        }
    }
}
