internal import CLinux

/// Identifiers that must be unpredictable enough to be unique, not secret (trace and span ids, request
/// ids), without a `getrandom` system call per value and without memory another thread writes.
///
/// A wyrand generator per thread: a thread's state starts from the system's secure generator the first time
/// it draws, then only ever advances by a fixed odd constant; each value is the state mixed by a 128-bit
/// multiply. Ids differ between processes, runs and threads (two threads' streams meet only if their random
/// 64-bit starting points lie within as many steps as they draw), and event loops drawing ids for their calls
/// touch no shared cache line. Never use it for keys, nonces or anything an attacker must not guess.
///
/// A generator draws from the state of the thread that made it, so it is not `Sendable`: make one where the
/// ids are needed (it costs a thread-local lookup).
public struct FastRandom: RandomNumberGenerator {
    private static let increment: UInt64 = 0xa076_1d64_78bd_642f
    private static let mixer: UInt64 = 0xe703_7ed1_a0b4_28db
    /// The making thread's state word.
    private let state: UnsafeMutablePointer<UInt64>

    public init() {
        state = clinux_thread_random_state()!
    }

    public mutating func next() -> UInt64 {
        if state.pointee == 0 { state.pointee = Self.seed() }
        let value = Self.value(after: state.pointee)
        state.pointee &+= Self.increment
        return value
    }

    /// The calling thread's state now (0 before its first draw); for tests.
    static var stateOfThisThread: UInt64 { clinux_thread_random_state()!.pointee }

    /// The value the draw after state `state` gives (what `next()` computes); for tests.
    static func value(after state: UInt64) -> UInt64 {
        let next = state &+ increment
        return mix(next, next ^ mixer)
    }

    /// A thread's starting state: from the system's secure generator, never zero (zero means "not seeded").
    private static func seed() -> UInt64 {
        var system = SystemRandomNumberGenerator()
        while true {
            let value = system.next()
            if value != 0 { return value }
        }
    }

    /// The wyrand mix: both halves of the 128-bit product, folded.
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }
}
