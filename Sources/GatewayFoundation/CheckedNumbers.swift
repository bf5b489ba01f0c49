/// Conversions of numbers that came from outside (JSON, caller fields, Apple's answers) that can never trap:
/// `Int64(someDouble)` aborts the process on NaN, infinities and values past ±9.22e18, so every such
/// conversion goes through here instead.
extension Int64 {
    /// `value` rounded toward zero and clamped to `Int64`'s range; nil for NaN.
    public init?(saturating value: Double) {
        guard !value.isNaN else { return nil }
        // 2^63 is exactly representable; every Double below it (and at or above -2^63) converts exactly.
        if value >= 9_223_372_036_854_775_808.0 {
            self = .max
        } else if value < -9_223_372_036_854_775_808.0 {
            self = .min
        } else {
            self.init(value.rounded(.towardZero))
        }
    }

    /// `self * factor`, clamped to the representable range.
    public func multipliedSaturating(by factor: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: factor)
        if !overflow { return product }
        return (self < 0) == (factor < 0) ? .max : .min
    }
}

/// The instants Apple's data and the contract's dates may carry: 1970-01-01 through 9999-12-31, in UNIX
/// milliseconds. A date outside is refused (a verdict for a JWS, INVALID_ARGUMENT for a request field).
public enum AppleDateRange {
    /// Milliseconds since 1970 of the first and last accepted instants.
    public static let milliseconds: ClosedRange<Int64> = 0...253_402_300_799_999
    /// Seconds since 1970 of the first and last accepted instants.
    public static let seconds: ClosedRange<Int64> = 0...253_402_300_799
}
