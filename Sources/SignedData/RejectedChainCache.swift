import Foundation
import GatewayFoundation

/// Chains that recently failed validation, so a flood of one bad chain costs one full X.509 validation per
/// `ttl`, not one per call. Keyed like `ChainCache` plus the verification time: a chain is only ever
/// refused again for the same instant it failed at, so a forged date cannot poison a genuine chain for
/// other payloads; validations at the current time share one key (`Key.now`). Bounded: when full, expired entries go first, then the oldest.
final class RejectedChainCache: Sendable {
    struct Key: Hashable, Sendable {
        /// `verificationMilliseconds` of a validation at the current time, whatever the time.
        static let now = Int64.min

        let chain: ChainCache.Key
        let verificationMilliseconds: Int64
    }

    private struct State {
        var entries: [Key: (rejection: Rejection, expires: Date, order: UInt64)] = [:]
        var tick: UInt64 = 0
    }

    private let state = Lock(State())
    private let capacity: Int
    private let ttl: TimeInterval

    /// At most `capacity` entries, each kept `ttl` seconds (0 disables the cache).
    init(capacity: Int, ttl: TimeInterval) {
        self.capacity = max(0, capacity)
        self.ttl = max(0, ttl)
    }

    func rejection(for key: Key, now: Date) -> Rejection? {
        guard ttl > 0, capacity > 0 else { return nil }
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard now < entry.expires else {
                state.entries[key] = nil
                return nil
            }
            return entry.rejection
        }
    }

    func insert(_ rejection: Rejection, for key: Key, now: Date) {
        guard ttl > 0, capacity > 0 else { return }
        state.withLock { state in
            if state.entries[key] == nil, state.entries.count >= capacity {
                state.entries = state.entries.filter { now < $0.value.expires }
                if state.entries.count >= capacity,
                    let oldest = state.entries.min(by: { $0.value.order < $1.value.order })?.key
                {
                    state.entries[oldest] = nil
                }
            }
            state.tick &+= 1
            state.entries[key] = (rejection, now.addingTimeInterval(ttl), state.tick)
        }
    }
}
