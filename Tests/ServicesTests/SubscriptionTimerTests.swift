import AppStoreDomain
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SubscriptionState
import Testing

@testable import Services

/// The events time makes (`SubscriptionTimer`), on a manual clock: a period that ends with auto-renew off is an
/// EXPIRATION made without Apple; one that ends with auto-renew on and no renewal seen is confirmed with Apple
/// first, whose answer (a renewal) is the event, not an expiration; Apple out of reach: the time event anyway.
@Suite struct SubscriptionTimerTests {
    typealias T = SubscriptionStatesTests
    let harness = SubscriptionStatesTests()

    private func setUp(autoRenew: Bool, apple: T.FakeApple) async throws
        -> (SubscriptionStates, SubscriptionTimer, ManualClock)
    {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0))
        let states = try harness.states(apple, clock: clock)
        var renewal = T.renewal("3001", signed: T.t0)
        renewal.payload.autoRenewStatus = autoRenew ? .on : .off
        _ = try await states.apply(
            transaction: T.transaction("3001", purchased: T.t0, expires: T.t0 + 30 * T.day, signed: T.t0),
            renewal: renewal, source: .notification, app: harness.app, cause: "n-1")
        return (states, SubscriptionTimer(states: states, retention: .seconds(86_400)), clock)
    }

    private func events(_ states: SubscriptionStates) async throws -> [SubscriptionEvent] {
        try await states.store.events(after: 0, bundleId: nil, limit: 100).map(\.event)
    }

    @Test func aPeriodEndingWithAutoRenewOffExpiresByTimeWithoutApple() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "unused") }
        let (states, timer, clock) = try await setUp(autoRenew: false, apple: apple)
        #expect(try await timer.step() == 0)
        clock.advance(by: .seconds(30 * 86_400 - 1))
        #expect(try await timer.step() == 0)
        clock.advance(by: .seconds(1))
        #expect(try await timer.step() == 1)
        let made = try await events(states)
        #expect(made.map(\.type) == [.initialPurchase, .expiration])
        #expect(made.last?.cause == "time")
        #expect(made.last?.subscription?.status == .expired)
        #expect(apple.calls.withLock { $0 } == 0)
        // Handled once: nothing is due any more.
        clock.advance(by: .seconds(60))
        #expect(try await timer.step() == 0)
        #expect(try await events(states).count == 2)
    }

    @Test func aPossiblyMissedRenewalIsAskedOfAppleAndItsAnswerIsTheEvent() async throws {
        var renewedPayload = T.transaction(
            "3002", purchased: T.t0 + 30 * T.day, expires: T.t0 + 60 * T.day, signed: T.t0 + 30 * T.day
        ).payload
        renewedPayload.originalTransactionId = "3001"
        let renewed = SignedTransaction(jws: "eyJ.3002.sig", payload: renewedPayload)
        let apple = T.FakeApple { _ throws(GatewayError) in
            T.answer("3001", renewed, T.renewal("3001", signed: T.t0 + 30 * T.day))
        }
        let (states, timer, clock) = try await setUp(autoRenew: true, apple: apple)
        clock.advance(by: .seconds(30 * 86_400))
        #expect(try await timer.step() == 1)
        let made = try await events(states)
        #expect(made.map(\.type) == [.initialPurchase, .renewal])
        #expect(made.last?.cause == "apple-read")
        #expect(apple.calls.withLock { $0 } == 1)
    }

    @Test func appleOutOfReachStillMakesTheTimeEvent() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "waiting for Apple") }
        let (states, timer, clock) = try await setUp(autoRenew: true, apple: apple)
        clock.advance(by: .seconds(30 * 86_400))
        #expect(try await timer.step() == 1)
        let made = try await events(states)
        #expect(made.map(\.type) == [.initialPurchase, .expiration])
        #expect(made.last?.cause == "time")
        #expect(apple.calls.withLock { $0 } == 1)
    }
}
