import AppStoreDomain
import Cryptography
import GatewayFoundation

/// Which environment answered the page that handed out a `revision`, so a later GetHistory with that revision
/// (and no environment) asks that environment first instead of production then sandbox. Apple's revision stays
/// untouched on the wire; the memo is per replica and bounded, and a miss only costs the fallback's extra call.
final class RevisionEnvironments: Sendable {
    private struct State {
        var entries: [[UInt8]: (environment: AppleEnvironment, use: UInt64)] = [:]
        var tick: UInt64 = 0
    }
    private let state = Lock(State())
    let capacity: Int

    init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    private static func key(bundleID: String, revision: String) -> [UInt8] {
        SHA256.hash(Array(bundleID.utf8) + [0] + Array(revision.utf8))
    }

    /// Remembers that `environment` handed out `revision` for `bundleID`; the least recently used entry goes
    /// when full.
    func remember(_ environment: AppleEnvironment, bundleID: String, revision: String) {
        guard !revision.isEmpty else { return }
        let key = Self.key(bundleID: bundleID, revision: revision)
        state.withLock { state in
            state.tick &+= 1
            if state.entries[key] == nil, state.entries.count >= capacity,
                let oldest = state.entries.min(by: { $0.value.use < $1.value.use })
            {
                state.entries[oldest.key] = nil
            }
            state.entries[key] = (environment, state.tick)
        }
    }

    /// The environment that handed out `revision`, when this replica remembers it.
    func environment(bundleID: String, revision: String) -> AppleEnvironment? {
        guard !revision.isEmpty else { return nil }
        let key = Self.key(bundleID: bundleID, revision: revision)
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            state.tick &+= 1
            state.entries[key]?.use = state.tick
            return entry.environment
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
