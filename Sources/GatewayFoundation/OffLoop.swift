/// Runs `work` on Swift's global concurrent executor (as many threads as the process has cores: a bounded
/// pool), then comes back, once, to the executor the calling task prefers: for a gRPC handler, its
/// connection's event loop.
///
/// For work that would hold a loop for longer than answering a call does (ECDSA over a page of signatures
/// that miss every cache, a large receipt): everything else in a handler runs on its loop, where the call's
/// bytes already are. Child tasks started inside `work` inherit the pool.
public func offLoop<Value, Failure: Error>(
    _ work: () async throws(Failure) -> Value
) async throws(Failure) -> Value {
    try await withTaskExecutorPreference(globalConcurrentExecutor, operation: work)
}
