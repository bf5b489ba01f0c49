extension ProtoTimestamp {
    /// The instant `milliseconds` after the UNIX epoch (negative: before it), as Apple's payload dates are.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init()
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        // Timestamp nanos are always 0...999_999_999: borrow a second for instants before the epoch.
        if remainder < 0 {
            self.seconds = seconds - 1
            self.nanos = Int32(remainder + 1000) * 1_000_000
        } else {
            self.seconds = seconds
            self.nanos = Int32(remainder) * 1_000_000
        }
    }

    /// Milliseconds since the UNIX epoch, rounded down (toward the past).
    public var unixMilliseconds: Int64 {
        seconds &* 1000 &+ Int64(nanos) / 1_000_000
    }
}

extension ProtoDuration {
    /// A duration of `milliseconds` (seconds and nanos get the same sign, as the proto requires).
    public init(milliseconds: Int64) {
        self.init()
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        self.seconds = seconds
        self.nanos = Int32(remainder) * 1_000_000
    }

    /// The same length as a Swift `Duration`, to nanosecond precision.
    public init(_ duration: Duration) {
        self.init()
        let (seconds, attoseconds) = duration.components
        self.seconds = seconds
        self.nanos = Int32(attoseconds / 1_000_000_000)
    }

    /// Whole milliseconds, truncated toward zero.
    public var milliseconds: Int64 {
        seconds &* 1000 &+ Int64(nanos / 1_000_000)
    }
}
