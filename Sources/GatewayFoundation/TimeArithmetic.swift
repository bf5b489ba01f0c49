extension Duration {
    /// The duration in whole nanoseconds, rounded toward zero, saturating at `Int64` bounds. One 128-bit
    /// division (about a fifth of the cost of going through `components`): instants add durations per call.
    @inlinable
    public var wholeNanoseconds: Int64 { Int64(clamping: attoseconds / 1_000_000_000) }

    /// The duration in whole milliseconds, rounded toward zero, saturating.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingSaturating(attoseconds / 1_000_000_000_000_000)
    }

    /// The duration in milliseconds rounded up, never negative: the form RetryInfo and pushback want,
    /// so a caller that waits exactly this long is never early.
    public var millisecondsRoundedUp: Int64 {
        let nanos = wholeNanoseconds
        guard nanos > 0 else { return 0 }
        return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1)
    }
}

extension Int64 {
    /// `self + other`, clamped to the representable range.
    @inlinable
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        if !overflow { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, clamped to the representable range.
    @inlinable
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        if !overflow { return difference }
        return other < 0 ? .max : .min
    }

    /// Division rounding toward negative infinity.
    public func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// A value behind a `Lock`, in a class so it can be shared by reference.
final class LockedValue<Value: Sendable>: Sendable {
    private let mutex: Lock<Value>
    init(_ value: Value) { mutex = Lock(value) }
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }
}
