import Foundation

/// A point in wall-clock time: milliseconds since the UNIX epoch (UTC), as Apple's API counts dates.
public struct WallTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var millisecondsSince1970: Int64

    /// A wall time from milliseconds since the epoch.
    public init(millisecondsSince1970: Int64) { self.millisecondsSince1970 = millisecondsSince1970 }

    /// Whole seconds since the epoch, rounded down (JWT `iat`/`exp` use seconds).
    public var secondsSince1970: Int64 { millisecondsSince1970.floorDivided(by: 1000) }

    public static func < (lhs: WallTime, rhs: WallTime) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }
    /// The wall time `duration` later (milliseconds precision, saturating).
    public static func + (lhs: WallTime, rhs: Duration) -> WallTime {
        WallTime(millisecondsSince1970: lhs.millisecondsSince1970.addingSaturating(rhs.wholeMilliseconds))
    }
    /// The wall time `duration` earlier.
    public static func - (lhs: WallTime, rhs: Duration) -> WallTime {
        WallTime(millisecondsSince1970: lhs.millisecondsSince1970.addingSaturating(-rhs.wholeMilliseconds))
    }
    /// The signed distance between two wall times.
    public static func - (lhs: WallTime, rhs: WallTime) -> Duration {
        .milliseconds(lhs.millisecondsSince1970.addingSaturating(-rhs.millisecondsSince1970))
    }
    public var description: String { "\(millisecondsSince1970)ms" }
}

/// A point on the monotonic clock (CLOCK_MONOTONIC) in nanoseconds; only differences between two instants
/// mean anything. The one representation of monotonic time in the gateway: rate limits and caches read it
/// through a `GatewayClock`, the event loops and gRPC calls through `now()`; intervals are `Duration`s.
/// Arithmetic saturates at `Int64`'s bounds, so a huge timeout makes an instant that is never reached.
public struct MonotonicInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary, fixed origin.
    public var nanoseconds: Int64

    /// An instant from nanoseconds since the clock's origin.
    @inlinable
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The current reading of CLOCK_MONOTONIC: one `clock_gettime`, no allocation (it is read per call).
    @inlinable
    public static func now() -> MonotonicInstant {
        var reading = timespec()
        clock_gettime(CLOCK_MONOTONIC, &reading)
        return MonotonicInstant(nanoseconds: Int64(reading.tv_sec) &* 1_000_000_000 &+ Int64(reading.tv_nsec))
    }

    @inlinable
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    /// The instant `duration` later (saturating).
    @inlinable
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        lhs.advanced(byNanoseconds: rhs.wholeNanoseconds)
    }
    /// The instant `nanoseconds` later (saturating). For a per-call path that converted a fixed `Duration`
    /// once (`wholeNanoseconds`, a 128-bit division), so that each use is one 64-bit addition.
    @inlinable
    public func advanced(byNanoseconds nanoseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: self.nanoseconds.addingSaturating(nanoseconds))
    }
    /// The instant `duration` earlier (saturating).
    @inlinable
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: lhs.nanoseconds.subtractingSaturating(rhs.wholeNanoseconds))
    }
    /// The signed distance between two instants.
    @inlinable
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds.subtractingSaturating(rhs.nanoseconds))
    }
    /// The seconds from `earlier` to this instant, for metrics (no `Duration` arithmetic).
    @inlinable
    public func seconds(since earlier: MonotonicInstant) -> Double {
        Double(nanoseconds.subtractingSaturating(earlier.nanoseconds)) / 1e9
    }
    public var description: String { "\(nanoseconds)ns" }
}

/// The two clocks the gateway reads: wall time for dates sent to Apple, monotonic time for intervals.
/// Everything time-dependent takes a `GatewayClock` (or a reading of one), so tests use `ManualClock`.
public protocol GatewayClock: Sendable {
    /// The current wall time.
    func wallNow() -> WallTime
    /// The current monotonic instant.
    func monotonicNow() -> MonotonicInstant
}

extension GatewayClock {
    /// The monotonic instant at which the wall clock will read `wall`, given the current readings.
    /// Used to turn Apple's `Retry-After` (a wall time) into something a token bucket understands.
    public func monotonicInstant(at wall: WallTime) -> MonotonicInstant {
        monotonicNow() + (wall - wallNow())
    }
}

/// The system's clocks: Foundation's `Date` for wall time, `MonotonicInstant.now()` (CLOCK_MONOTONIC) for
/// monotonic time.
public struct SystemClock: GatewayClock {
    /// The system clocks.
    public init() {}

    public func wallNow() -> WallTime {
        WallTime(millisecondsSince1970: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    @inlinable
    public func monotonicNow() -> MonotonicInstant { .now() }
}

/// A clock that only moves when told to; both readings advance together.
public final class ManualClock: GatewayClock {
    private struct Readings {
        var wall: WallTime
        var monotonic: MonotonicInstant
    }
    private let readings: LockedValue<Readings>

    /// A clock reading `wall` and `monotonic` until advanced.
    public init(
        wall: WallTime = WallTime(millisecondsSince1970: 1_750_000_000_000),
        monotonic: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000)
    ) {
        readings = LockedValue(Readings(wall: wall, monotonic: monotonic))
    }

    public func wallNow() -> WallTime { readings.withLock { $0.wall } }
    public func monotonicNow() -> MonotonicInstant { readings.withLock { $0.monotonic } }

    /// Moves both clocks forward by `duration`.
    public func advance(by duration: Duration) {
        readings.withLock {
            $0.wall = $0.wall + duration
            $0.monotonic = $0.monotonic + duration
        }
    }

    /// Sets the wall clock alone, as an NTP step would; the monotonic clock is untouched.
    public func setWall(_ wall: WallTime) {
        readings.withLock { $0.wall = wall }
    }
}
