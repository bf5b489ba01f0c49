import Testing

@testable import Services

/// Which realtime requests are answered anew: their age, their repeats and the bounds on what is remembered, with
/// the wall time passed in (milliseconds).
@Suite struct RealtimeReplayGuardTests {
    let now: Int64 = 1_800_000_000_000
    let limits = RealtimeReplayGuard.Limits(
        maxAgeMilliseconds: 60_000, clockSkewMilliseconds: 10_000, maxEntries: 1000, maxBytes: 1 << 20)

    func key(_ id: String, app: String = "a") -> RealtimeReplayGuard.Key {
        RealtimeReplayGuard.Key(app: app, requestIdentifier: id)
    }

    @Test func aRequestIsAdmittedWithinItsAgeAndSkewOnly() {
        var guardian = RealtimeReplayGuard(limits: limits)
        #expect(guardian.admit(key("1"), signedDate: now, now: now) == .admitted)
        #expect(guardian.admit(key("2"), signedDate: now - 60_000, now: now) == .admitted)
        #expect(guardian.admit(key("3"), signedDate: now - 60_001, now: now) == .stale)
        #expect(guardian.admit(key("4"), signedDate: now - 199_000, now: now) == .stale)
        #expect(guardian.admit(key("5"), signedDate: nil, now: now) == .stale)
        #expect(guardian.admit(key("6"), signedDate: now + 10_000, now: now) == .admitted)
        #expect(guardian.admit(key("7"), signedDate: now + 10_001, now: now) == .future)
        // Apple's number, whatever it is, neither traps nor passes.
        #expect(guardian.admit(key("8"), signedDate: .max, now: now) == .future)
        #expect(guardian.admit(key("9"), signedDate: .min, now: now) == .stale)
        #expect(guardian.count == 3)
    }

    @Test func aRepeatGetsTheFirstAnswersBytesUntilTheRequestIsTooOld() {
        var guardian = RealtimeReplayGuard(limits: limits)
        let signed = now - 5_000
        #expect(guardian.admit(key("R1"), signedDate: signed, now: now) == .admitted)
        // While the first is being answered, a repeat gets no choice (nothing signed for it).
        #expect(guardian.admit(key("r1"), signedDate: signed, now: now + 10) == .inFlight)
        guardian.answered(key("r1"), body: Array("first".utf8), now: now + 20)
        #expect(guardian.admit(key("r1"), signedDate: signed, now: now + 30) == .repeated(Array("first".utf8)))
        #expect(guardian.admit(key("R1"), signedDate: signed, now: signed + 60_000) == .repeated(Array("first".utf8)))
        // Another app's request with the same identifier is its own.
        #expect(guardian.admit(key("r1", app: "b"), signedDate: signed, now: now + 40) == .admitted)
        // Once too old, it is refused, and forgotten.
        #expect(guardian.admit(key("r1"), signedDate: signed, now: signed + 60_001) == .stale)
        #expect(guardian.count == 0 && guardian.bytes == 0)
    }

    @Test func expiredAnswersAreForgottenAsTimePasses() {
        var guardian = RealtimeReplayGuard(limits: limits)
        for index in 0..<100 {
            let id = key("\(index)")
            #expect(guardian.admit(id, signedDate: now + Int64(index), now: now + Int64(index)) == .admitted)
            guardian.answered(id, body: [UInt8](repeating: 1, count: 100), now: now + Int64(index))
        }
        #expect(guardian.count == 100)
        #expect(guardian.admit(key("late"), signedDate: now + 60_050, now: now + 60_050) == .admitted)
        #expect(guardian.count == 51)
        #expect(guardian.admit(key("later"), signedDate: now + 200_000, now: now + 200_000) == .admitted)
        #expect(guardian.count == 1)
        #expect(guardian.bytes == "a".utf8.count + "later".utf8.count + RealtimeReplayGuard.entryOverheadBytes)
    }

    @Test func theOldestIsForgottenPastTheCountOrTheBytes() {
        var counted = RealtimeReplayGuard(
            limits: .init(maxAgeMilliseconds: 60_000, clockSkewMilliseconds: 0, maxEntries: 3, maxBytes: 1 << 20))
        for index in 0..<5 { _ = counted.admit(key("\(index)"), signedDate: now, now: now) }
        #expect(counted.count == 3)
        #expect(counted.admit(key("0"), signedDate: now, now: now) == .admitted)
        #expect(counted.admit(key("4"), signedDate: now, now: now) == .inFlight)

        let entry = 2 + RealtimeReplayGuard.entryOverheadBytes
        var sized = RealtimeReplayGuard(
            limits: .init(
                maxAgeMilliseconds: 60_000, clockSkewMilliseconds: 0, maxEntries: 100, maxBytes: 2 * entry + 1500))
        for index in 0..<3 { _ = sized.admit(key("\(index)"), signedDate: now, now: now) }
        #expect(sized.count == 3 && sized.bytes == 3 * entry)
        // A large answer pushes out the oldest until everything fits again.
        sized.answered(key("2"), body: [UInt8](repeating: 0, count: 1500), now: now)
        #expect(sized.count == 2 && sized.bytes == 2 * entry + 1500)
        #expect(sized.admit(key("2"), signedDate: now, now: now) == .repeated([UInt8](repeating: 0, count: 1500)))
        // An answer too large to keep at all is forgotten with its request.
        _ = sized.admit(key("3"), signedDate: now, now: now)
        sized.answered(key("3"), body: [UInt8](repeating: 0, count: 10_000), now: now)
        #expect(sized.count == 0 && sized.bytes == 0)
        #expect(sized.admit(key("3"), signedDate: now, now: now) == .admitted)
    }

    @Test func manyRequestsStayWithinTheBounds() {
        var guardian = RealtimeReplayGuard(
            limits: .init(maxAgeMilliseconds: 60_000, clockSkewMilliseconds: 0, maxEntries: 64, maxBytes: 16_384))
        for index in 0..<10_000 {
            let id = key("request-\(index)")
            let at = now + Int64(index)
            _ = guardian.admit(id, signedDate: at, now: at)
            guardian.answered(id, body: [UInt8](repeating: 7, count: index % 300), now: at)
            #expect(guardian.count <= 64 && guardian.bytes <= 16_384)
        }
    }
}
