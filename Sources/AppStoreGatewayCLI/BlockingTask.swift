import Dispatch
import GatewayFoundation

/// The CLI's commands are synchronous (ArgumentParser's `run`) and the gateway's work is async: `wait` runs the
/// work as a task and blocks the command's thread (never a task's) until it is done.
enum BlockingTask {
    static func wait<Value: Sendable>(_ work: sending @escaping () async -> Value) -> Value {
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
