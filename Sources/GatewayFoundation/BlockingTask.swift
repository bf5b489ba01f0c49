import Dispatch

/// Synchronous code that must wait for async work (the CLI's commands, ArgumentParser's `run`; opening a store at
/// start-up): `wait` runs the work as a task and blocks the calling thread until it is done. Call it from a
/// thread of its own (a command's, the process's main thread), never from a task or an event loop: it would hold
/// a thread the work may need.
public enum BlockingTask {
    public static func wait<Value: Sendable>(_ work: sending @escaping () async -> Value) -> Value {
        let outcome = Lock<Value?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await work()
            outcome.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        guard let value = outcome.withLock({ $0 }) else { preconditionFailure("the task ended without a value") }
        return value
    }
}
