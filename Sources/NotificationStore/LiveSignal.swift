import GatewayFoundation

/// Wakes followers waiting for new entries: a generation number raised by every insert, and the
/// continuations of those waiting for it to pass a value they saw. Waiters also give up after a timeout,
/// so a missed wake-up (or an entry another replica added) only delays, never stalls.
package final class LiveSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// Waiters woken (timeout, cancellation) before they registered.
        var released: Set<UInt64> = []
    }
    private let state = Lock(State())

    package init() {}

    /// The current generation: read it before looking for entries, then wait for a later one.
    package var generation: UInt64 { state.withLock { $0.generation } }

    /// Raises the generation and wakes every waiter.
    package func raise() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once the generation differs from `seen`, after `timeout`, or on cancellation.
    package func wait(past seen: UInt64, timeout: Duration) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.wake(id)
            }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = self.state.withLock { state -> Bool in
                            if state.generation != seen || state.released.contains(id) { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.wake(id)
                }
            }
            await group.next()
            group.cancelAll()
            self.wake(id)
            await group.waitForAll()
        }
        state.withLock { _ = $0.released.remove(id) }
    }

    private func wake(_ id: UInt64) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.released.insert(id)
                return nil
            }
            return waiter
        }
        continuation?.resume()
    }
}
