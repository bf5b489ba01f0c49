import Foundation

/// Runs `body`, which blocks (a socket read, a wait on a semaphore), on a thread of its own and awaits its result.
///
/// Swift's cooperative pool has one thread per core, and tests run on it in parallel: two tests blocked in a read
/// on a 2-core machine leave no thread for the very tasks they wait for (a server's handler task), and both time
/// out. A test that must block does it here instead.
package func offPool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
