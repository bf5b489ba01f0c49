import GatewayFoundation
import Testing

@testable import HTTPServer

/// The connection-level rules as a value: every timer and PING decision driven by hand, no socket, no sleep.
@Suite struct ConnectionManagementTests {
    /// A policy from values in milliseconds (everything else off).
    func management(
        idle: UInt64 = 0, keepaliveTime: UInt64 = 0, keepaliveTimeout: UInt64 = 20, maxAge: UInt64 = 0,
        grace: UInt64 = 500, goawayPingTimeout: UInt64 = 1_000, minPingInterval: UInt64 = 300_000,
        pingWithoutCalls: Bool = false, strikes: Int = 2, unauthenticated: UInt64 = 0, headerBlock: UInt64 = 5_000
    ) -> ConnectionManagement {
        var configuration = HTTP2Configuration()
        // 0 here, as in the configuration keys, is "never" where the policy allows it.
        func optional(_ milliseconds: UInt64) -> Duration? { milliseconds == 0 ? nil : .milliseconds(milliseconds) }
        configuration.idleTimeout = optional(idle)
        configuration.keepaliveTime = optional(keepaliveTime)
        configuration.keepaliveTimeout = .milliseconds(keepaliveTimeout)
        configuration.maxConnectionAge = optional(maxAge)
        configuration.maxConnectionAgeGrace = .milliseconds(grace)
        configuration.goawayPingTimeout = .milliseconds(goawayPingTimeout)
        configuration.minClientPingInterval = .milliseconds(minPingInterval)
        configuration.permitClientPingWithoutCalls = pingWithoutCalls
        configuration.maxPingStrikes = strikes
        configuration.unauthenticatedIdleTimeout = optional(unauthenticated)
        configuration.headerBlockTimeout = .milliseconds(headerBlock)
        return ConnectionManagement(policy: .init(configuration), now: .ms(0))
    }

    @Test func nothingTimedMeansNoDeadline() {
        var connection = management()
        #expect(connection.nextDeadline == nil)
        #expect(connection.tick(now: .ms(1_000_000)).isEmpty)
    }

    @Test func anIdleConnectionEndsWithMaxIdleAndAStreamKeepsItOpen() {
        var connection = management(idle: 10)
        #expect(connection.nextDeadline == .ms(10))
        connection.streamOpened()
        #expect(connection.nextDeadline == nil)
        #expect(connection.tick(now: .ms(50)).isEmpty)
        connection.allStreamsClosed(now: .ms(60))
        #expect(connection.tick(now: .ms(69)).isEmpty)
        #expect(connection.tick(now: .ms(70)) == [.sendGoaway(.noError, debug: "max_idle"), .close])
        #expect(connection.refusesNewStreams)
    }

    @Test func keepalivePingsASilentPeerAndClosesWhenTheAckNeverComes() {
        var connection = management(keepaliveTime: 100, keepaliveTimeout: 20)
        connection.bytesRead(now: .ms(50))
        #expect(connection.nextDeadline == .ms(150))
        guard case .sendPing(let payload)? = connection.tick(now: .ms(150)).first else {
            Issue.record("no keepalive PING")
            return
        }
        #expect(connection.nextDeadline == .ms(170))
        connection.bytesRead(now: .ms(150))  // the ACK itself
        #expect(connection.pingAcknowledged(payload: payload).isEmpty)
        #expect(connection.nextDeadline == .ms(250))  // answered: the next PING after keepaliveTime of silence
        #expect(connection.tick(now: .ms(250)).count == 1)
        #expect(connection.tick(now: .ms(270)) == [.sendGoaway(.noError, debug: "keepalive_timeout"), .close])
    }

    @Test func aKeepaliveAckInFlightDoesNotEndTheFirstGoawayStep() {
        // Regression: any PING ACK used to end the graceful close's first step, so a keepalive ACK that
        // crossed the shutdown notice sent the final GOAWAY before the client could have seen the notice.
        var connection = management(keepaliveTime: 100, keepaliveTimeout: 20_000)
        guard case .sendPing(let keepalive)? = connection.tick(now: .ms(100)).first else {
            Issue.record("no keepalive PING")
            return
        }
        let start = connection.beginGracefulClose(now: .ms(101))
        guard start.count == 2, start[0] == .sendShutdownNotice, case .sendPing(let own) = start[1] else {
            Issue.record("unexpected graceful close: \(start)")
            return
        }
        #expect(own != keepalive)
        #expect(connection.pingAcknowledged(payload: keepalive).isEmpty)
        #expect(connection.draining && !connection.refusesNewStreams)
        #expect(connection.pingAcknowledged(payload: own) == [.sendGoaway(.noError, debug: "")])
        #expect(connection.refusesNewStreams)
        #expect(connection.beginGracefulClose(now: .ms(102)).isEmpty)  // once only
    }

    @Test func theFinalGoawayGoesWithoutTheAckAfterItsTimeout() {
        var connection = management(goawayPingTimeout: 1_000)
        _ = connection.beginGracefulClose(now: .ms(5), debug: "shutdown")
        #expect(connection.nextDeadline == .ms(1_005))
        #expect(connection.tick(now: .ms(1_004)).isEmpty)
        #expect(connection.tick(now: .ms(1_005)) == [.sendGoaway(.noError, debug: "shutdown")])
        #expect(connection.tick(now: .ms(2_000)).isEmpty)
    }

    @Test func maxAgeDrainsGracefullyThenCutsOffAfterTheGrace() {
        var connection = management(maxAge: 1_000, grace: 500, goawayPingTimeout: 100)
        connection.streamOpened()
        #expect(connection.nextDeadline == .ms(1_000))
        let first = connection.tick(now: .ms(1_000))
        #expect(first.first == .sendShutdownNotice)
        #expect(connection.tick(now: .ms(1_100)) == [.sendGoaway(.noError, debug: "max_age")])
        #expect(connection.nextDeadline == .ms(1_500))
        #expect(connection.tick(now: .ms(1_500)) == [.close])
    }

    @Test func pingsTooOftenOrWithoutCallsAreStrikesAndResponsesForgiveThem() {
        var connection = management(minPingInterval: 1_000, strikes: 2)
        #expect(connection.clientPinged(now: .ms(0), openStreams: 1).isEmpty)  // first PING with a call: fine
        #expect(connection.clientPinged(now: .ms(10), openStreams: 1).isEmpty)  // too soon: strike 1
        #expect(connection.clientPinged(now: .ms(20), openStreams: 1).isEmpty)  // strike 2
        connection.responseFrameSent()
        #expect(connection.pingStrikes == 0)
        #expect(connection.clientPinged(now: .ms(2_000), openStreams: 0).isEmpty)  // no call: strike 1
        #expect(connection.clientPinged(now: .ms(4_000), openStreams: 0).isEmpty)  // strike 2
        #expect(
            connection.clientPinged(now: .ms(6_000), openStreams: 0)
                == [.sendGoaway(.enhanceYourCalm, debug: "too_many_pings"), .close])
    }

    @Test func pingsWithoutCallsArePermittedWhenConfigured() {
        var connection = management(minPingInterval: 0, pingWithoutCalls: true, strikes: 0)
        for second in 1...10 {
            #expect(connection.clientPinged(now: .ms(Int64(second) * 1_000), openStreams: 0).isEmpty)
        }
    }

    @Test func aConnectionWithoutAnAdmittedCallIsClosedAfterItsPreface() {
        var connection = management(idle: 300_000, unauthenticated: 10_000)
        #expect(connection.nextDeadline == .ms(300_000))  // before the preface the handshake deadline rules
        connection.prefaceReceived(now: .ms(500))
        #expect(connection.nextDeadline == .ms(10_500))
        connection.streamOpened()  // a health Check
        connection.allStreamsClosed(now: .ms(600))
        #expect(connection.tick(now: .ms(10_499)).isEmpty)
        #expect(connection.tick(now: .ms(10_500)) == [.sendGoaway(.noError, debug: "unauthenticated_idle"), .close])
    }

    @Test func callsInFlightAtTheUnauthenticatedDeadlineGetAGracefulCloseThenTheCut() {
        var connection = management(idle: 300_000, goawayPingTimeout: 1_000, unauthenticated: 10_000)
        connection.prefaceReceived(now: .ms(0))
        connection.streamOpened()  // a health Watch, say: calls to open services do not vouch for a connection
        let notice = connection.tick(now: .ms(10_000))
        #expect(notice.first == .sendShutdownNotice && notice.count == 2)
        #expect(connection.tick(now: .ms(11_000)) == [.sendGoaway(.noError, debug: "unauthenticated_idle")])
        #expect(connection.refusesNewStreams)
        #expect(connection.nextDeadline == .ms(20_000))
        #expect(connection.tick(now: .ms(20_000)) == [.close])  // the Watch never ends: cut off
    }

    @Test func anAdmittedCallLiftsTheUnauthenticatedDeadlineForGood() {
        var connection = management(idle: 300_000, unauthenticated: 10_000)
        connection.prefaceReceived(now: .ms(0))
        connection.streamOpened()
        connection.callAdmitted()
        connection.allStreamsClosed(now: .ms(1_000))
        #expect(connection.admitted)
        #expect(connection.nextDeadline == .ms(301_000))  // the ordinary idle timeout from here on
        #expect(connection.tick(now: .ms(20_000)).isEmpty)
        connection.prefaceReceived(now: .ms(20_000))  // a second SETTINGS changes nothing
        #expect(connection.nextDeadline == .ms(301_000))
    }

    @Test func withoutAnUnauthenticatedTimeoutOnlyTheIdleTimeoutCounts() {
        var connection = management(idle: 60_000)
        connection.prefaceReceived(now: .ms(0))
        #expect(connection.nextDeadline == .ms(60_000))
        #expect(connection.tick(now: .ms(59_000)).isEmpty)
    }

    @Test func aHeaderBlockLeftOpenClosesTheConnectionAtItsDeadline() {
        var connection = management(idle: 300_000, maxAge: 1_800_000, headerBlock: 5_000)
        connection.streamOpened()
        connection.headerBlockStarted(now: .ms(100))
        #expect(connection.nextDeadline == .ms(5_100))
        connection.bytesRead(now: .ms(4_000))  // a CONTINUATION trickling in does not extend it
        #expect(connection.tick(now: .ms(5_099)).isEmpty)
        #expect(connection.tick(now: .ms(5_100)) == [.sendGoaway(.noError, debug: "header_block_timeout"), .close])
    }

    @Test func aCompleteHeaderBlockHasNoDeadline() {
        var connection = management(headerBlock: 5_000)
        connection.streamOpened()
        connection.headerBlockStarted(now: .ms(0))
        connection.headerBlockEnded()
        #expect(connection.nextDeadline == nil)
        #expect(connection.tick(now: .ms(60_000)).isEmpty)
    }

    @Test func absurdTimersSaturateInsteadOfOverflowing() {
        var connection = management(
            idle: .max, keepaliveTime: .max / 2, keepaliveTimeout: .max, maxAge: .max, grace: .max,
            goawayPingTimeout: .max)
        let age = MonotonicInstant(nanoseconds: .max / 2)
        #expect(connection.nextDeadline == age)  // the age, capped; the others saturate at "never"
        let actions = connection.tick(now: age)
        #expect(actions.count == 2 && actions.first == .sendShutdownNotice)
        #expect(connection.nextDeadline == nil)
    }
}

extension MonotonicInstant {
    /// The instant `milliseconds` after the clock's origin.
    fileprivate static func ms(_ milliseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: milliseconds * 1_000_000)
    }
}
