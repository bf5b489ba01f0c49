import EventLoops
import GatewayFoundation
import Postgres
import Synchronization
import Testing

/// An event loop on a thread of its own for one test.
final class TestLoop: Sendable {
    let loop: EventLoop
    private let thread: LoopThread

    init() throws {
        loop = try EventLoop(index: 0)
        let loop = loop
        thread = spawnThread(name: "pg-test-loop") { loop.run() }
    }

    /// Stops the loop and waits for its thread. Idempotent.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.stop()
        thread.join()
    }
    private let stopped = Atomic<Bool>(false)

    /// Runs `body` in a task that prefers the loop (as a gRPC handler does): the connection's calls start there.
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task(executorPreference: loop, operation: body).value
    }
}

/// The kind of the `PostgresError` `body` throws; nil when it throws none (or another error).
func failureKind<T>(_ body: () async throws -> T) async -> PostgresError.Kind? {
    await failure(body)?.kind
}

/// The `PostgresError` `body` throws, if any.
func failure<T>(_ body: () async throws -> T) async -> PostgresError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? PostgresError
    }
}

/// Seconds since `start`.
func seconds(since start: MonotonicInstant) -> Double {
    Double((MonotonicInstant.now() - start).wholeNanoseconds) / 1e9
}

/// A value behind a lock that closures on several threads can share (a class: `Lock` itself cannot be copied).
final class Shared<Value: Sendable>: Sendable {
    private let lock: Lock<Value>

    init(_ value: Value) { lock = Lock(value) }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.withLock { body(&$0) }
    }
}
