import GatewayFoundation
import Testing

@testable import HTTPServer

@Suite struct TicketKeyScheduleTests {
    private let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    private let hour = Duration.seconds(3_600)

    /// Keys named 1, 2, 3, … in the order they are made.
    private final class Maker {
        var made = 0
        func fresh() -> TicketKeySchedule.Key {
            made += 1
            return TicketKeySchedule.Key(
                name: [UInt8](repeating: UInt8(made), count: 16), secret: [UInt8](repeating: 0, count: 64),
                created: MonotonicInstant(nanoseconds: 0))
        }
    }

    @Test func theNewestKeySealsUntilItsRotationThenAFreshOneDoes() {
        var schedule = TicketKeySchedule(rotation: hour, lifetime: hour)
        let maker = Maker()
        let first = schedule.sealingKey(now: start, fresh: maker.fresh)
        #expect(first.created == start)
        #expect(schedule.sealingKey(now: start + .seconds(3_599), fresh: maker.fresh) == first)
        let second = schedule.sealingKey(now: start + hour, fresh: maker.fresh)
        #expect(second != first && maker.made == 2)
    }

    @Test func anOlderKeyStillOpensForALifetimeAndAsksForRenewal() {
        var schedule = TicketKeySchedule(rotation: hour, lifetime: hour)
        let maker = Maker()
        let first = schedule.sealingKey(now: start, fresh: maker.fresh)
        #expect(schedule.openingKey(named: first.name, now: start + .seconds(10))?.renew == false)
        _ = schedule.sealingKey(now: start + hour, fresh: maker.fresh)
        // A ticket sealed just before the rotation is good for its whole lifetime, and is renewed.
        let opened = schedule.openingKey(named: first.name, now: start + hour + .seconds(3_599))
        #expect(opened?.key == first && opened?.renew == true)
        // Past rotation + lifetime the key opens nothing: a full handshake.
        #expect(schedule.openingKey(named: first.name, now: start + hour + hour) == nil)
    }

    @Test func unknownNamesOpenNothingAndExpiredKeysAreDropped() {
        var schedule = TicketKeySchedule(rotation: hour, lifetime: hour)
        let maker = Maker()
        _ = schedule.sealingKey(now: start, fresh: maker.fresh)
        #expect(schedule.openingKey(named: [UInt8](repeating: 0xEE, count: 16), now: start) == nil)
        #expect(schedule.openingKey(named: [UInt8](repeating: 1, count: 15), now: start) == nil)
        _ = schedule.sealingKey(now: start + hour, fresh: maker.fresh)
        _ = schedule.sealingKey(now: start + hour + hour, fresh: maker.fresh)
        _ = schedule.sealingKey(now: start + .seconds(3 * 3_600), fresh: maker.fresh)
        // Only keys that may still open a ticket are kept: a ring that never grows.
        #expect(schedule.keys.count == 2)
    }
}
