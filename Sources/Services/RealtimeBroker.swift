import GatewayFoundation
import Metrics
import ProtoCodec

/// The realtime requests of this replica and the `ServeRealtimeRequests` streams that answer them: the realtime
/// URL's handler `ask`s and awaits, each stream's handler `connect`s, sends what its outbox yields and hands in
/// the answers it reads. The routing and waiting state is `RealtimeRouter`'s, behind one lock held only for
/// dictionary work; waiters resume and outboxes yield outside it. Nothing here blocks: a wait is a suspended
/// continuation, its deadline a sleeping task.
package final class RealtimeBroker: Sendable {
    private struct State: ~Copyable {
        var router: RealtimeRouter
        var waiters: [RealtimeRouter.Ticket: CheckedContinuation<RealtimeOutcome, Never>] = [:]
        var outboxes: [RealtimeRouter.StreamID: AsyncStream<RealtimeRequestEvent>.Continuation] = [:]
    }

    private let state: Lock<State>
    /// Where the number of open streams is reported (`reportStreams(to:)`; nil: nowhere).
    private let streamsGauge = Lock<Gauge?>(nil)

    /// A broker whose streams hold at most `maxPendingPerStream` unanswered requests, `maxStreams` streams at once.
    package init(maxPendingPerStream: Int, maxStreams: Int) {
        state = Lock(State(router: RealtimeRouter(maxPendingPerStream: maxPendingPerStream, maxStreams: maxStreams)))
    }

    /// Streams open now.
    package var streamCount: Int { state.withLock { $0.router.streamCount } }

    /// Reports the number of open streams to `gauge` from now on.
    package func reportStreams(to gauge: Gauge?) {
        streamsGauge.withLock { $0 = gauge }
        gauge?.set(Double(streamCount))
    }

    private func streamsChanged(_ count: Int) {
        let gauge = streamsGauge.withLock { $0 }
        gauge?.set(Double(count))
    }

    /// Opens a stream for `apps` (configured names) on behalf of `caller` (nil: anonymous): its number and the
    /// requests to send on it, or why not (the replica, or the caller, holds its maximum of streams). Its outbox
    /// never holds more than `maxPendingPerStream` requests.
    func connect(
        apps: Set<String>, caller: String?, callerLimit: Int?
    ) -> Result<(RealtimeRouter.StreamID, AsyncStream<RealtimeRequestEvent>), RealtimeRouter.OpenRefusal> {
        let (events, outbox) = AsyncStream<RealtimeRequestEvent>.makeStream(bufferingPolicy: .unbounded)
        let (opened, count) = state.withLock { state in
            let opened = state.router.open(apps: apps, caller: caller, callerLimit: callerLimit)
            if case .success(let stream) = opened { state.outboxes[stream] = outbox }
            return (opened, state.router.streamCount)
        }
        switch opened {
        case .success(let stream):
            streamsChanged(count)
            return .success((stream, events))
        case .failure(let refusal):
            outbox.finish()
            return .failure(refusal)
        }
    }

    /// Closes a stream: what waited on it is answered `.streamClosed` at once.
    func disconnect(_ stream: RealtimeRouter.StreamID) {
        let (waiters, outbox, count) = state.withLock { state in
            let tickets = state.router.close(stream)
            let waiters = tickets.compactMap { state.waiters.removeValue(forKey: $0) }
            return (waiters, state.outboxes.removeValue(forKey: stream), state.router.streamCount)
        }
        streamsChanged(count)
        outbox?.finish()
        for waiter in waiters { waiter.resume(returning: .streamClosed) }
    }

    /// Hands in `answer` from `stream`; `problem` (a broken contract) answers the request `.invalid` instead.
    @discardableResult
    func deliver(_ answer: RealtimeAnswer, problem: String?, from stream: RealtimeRouter.StreamID)
        -> RealtimeRouter.Match
    {
        let now = MonotonicInstant.now()
        let (match, waiter) = state.withLock { state in
            let match = state.router.answer(
                stream: stream, requestIdentifier: answer.requestIdentifier.lowercased(), now: now)
            switch match {
            case .onTime(let ticket), .late(let ticket): return (match, state.waiters.removeValue(forKey: ticket))
            case .unknown: return (match, nil)
            }
        }
        switch match {
        case .onTime: waiter?.resume(returning: problem.map { .invalid($0) } ?? .answered(answer))
        case .late: waiter?.resume(returning: .late)
        case .unknown: break
        }
        return match
    }

    /// Sends `request` for `app` to one of its streams and waits at most `budget` for the answer.
    package func ask(app: String, request: RealtimeRequest, budget: Duration) async -> RealtimeOutcome {
        guard budget > .zero else { return .late }
        let identifier = request.requestIdentifier.lowercased()
        let deadline = MonotonicInstant.now() + budget
        return await withCheckedContinuation { (waiter: CheckedContinuation<RealtimeOutcome, Never>) in
            let (route, outbox) = state.withLock { state in
                let route = state.router.route(app: app, requestIdentifier: identifier, deadline: deadline)
                guard case .sent(let stream, let ticket) = route else {
                    return (route, AsyncStream<RealtimeRequestEvent>.Continuation?.none)
                }
                state.waiters[ticket] = waiter
                return (route, state.outboxes[stream])
            }
            switch route {
            case .sent(_, let ticket):
                let milliseconds =
                    budget.components.seconds * 1000 + budget.components.attoseconds / 1_000_000_000_000_000
                let event = RealtimeRequestEvent(app: app, request: request, budgetMillis: milliseconds)
                outbox?.yield(event)
                Task { [self] in
                    try? await Task.sleep(for: budget)
                    expire(ticket)
                }
            case .noStream: waiter.resume(returning: .noStream)
            case .full: waiter.resume(returning: .full)
            case .duplicate: waiter.resume(returning: .duplicate)
            }
        }
    }

    private func expire(_ ticket: RealtimeRouter.Ticket) {
        let waiter = state.withLock { state in
            state.router.expire(ticket) ? state.waiters.removeValue(forKey: ticket) : nil
        }
        waiter?.resume(returning: .late)
    }
}
