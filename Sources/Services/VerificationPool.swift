import Dispatch
import Synchronization

/// Where full X.509 chain validations run, so they never run on an event loop: a fixed number of worker
/// queues (one thread each at a time) and a bounded number of admitted jobs. When `threads + queueLimit`
/// jobs are admitted, `run` refuses at once instead of queueing without bound: a flood of cold or bad
/// chains costs its callers (RESOURCE_EXHAUSTED with RetryInfo), not every other call.
package final class VerificationPool: Sendable {
    private let workers: [DispatchQueue]
    private let admitted = Atomic<Int>(0)
    private let nextWorker = Atomic<Int>(0)
    /// Jobs running or waiting at most.
    let capacity: Int

    /// `threads` workers (at least 1) and room for `queueLimit` waiting jobs.
    init(threads: Int, queueLimit: Int) {
        let threads = max(1, threads)
        workers = (0..<threads).map { DispatchQueue(label: "appstore-gateway.verification.\($0)") }
        capacity = threads + max(0, queueLimit)
    }

    /// Jobs admitted now (running or waiting).
    var load: Int { admitted.load(ordering: .relaxed) }

    /// Runs `work` on a worker and returns its result; nil, without running it, when the pool is full.
    package func run<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value? {
        let (_, now) = admitted.add(1, ordering: .acquiringAndReleasing)
        guard now <= capacity else {
            admitted.subtract(1, ordering: .acquiringAndReleasing)
            return nil
        }
        let index = nextWorker.add(1, ordering: .relaxed).newValue & Int.max
        let worker = workers[index % workers.count]
        return await withCheckedContinuation { continuation in
            worker.async {
                let value = work()
                self.admitted.subtract(1, ordering: .acquiringAndReleasing)
                continuation.resume(returning: value)
            }
        }
    }
}
