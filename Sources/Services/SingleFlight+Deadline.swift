import AppStoreDomain

extension SingleFlight {
    /// `run(key:joined:_:)` for calls bounded by their caller's deadline: a shared call runs with its leader's
    /// deadline, so a follower that still `hasTime` after it ended in DEADLINE_EXCEEDED runs it again under
    /// its own (at most three times, so a stream of short-deadline leaders cannot keep it busy forever).
    func runWithinDeadline(
        key: Key, joined: () -> Void, hasTime: () -> Bool, _ work: () async throws(GatewayError) -> Value
    ) async throws(GatewayError) -> Value {
        var outcome: Outcome = .failure(.cancelled)
        for _ in 0..<3 {
            outcome = await run(key: key, joined: joined) {
                do throws(GatewayError) {
                    return .success(try await work())
                } catch {
                    return .failure(error)
                }
            }
            guard case .failure(.deadlineExceeded) = outcome, hasTime(), !Task.isCancelled else { break }
        }
        return try outcome.get()
    }
}
