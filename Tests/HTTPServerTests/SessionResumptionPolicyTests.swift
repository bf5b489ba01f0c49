import GatewayFoundation
import Testing

@testable import HTTPServer

@Suite struct SessionResumptionPolicyTests {
    private let handshake = WallTime(millisecondsSince1970: 1_800_000_000_000)
    private let hour = SessionResumptionPolicy(maxAge: .seconds(3_600))

    @Test func anOriginSurvivesItsTicketDataAndForeignDataIsNoOrigin() {
        let withCertificate = SessionOrigin(
            fullHandshake: handshake, certificateNotAfter: WallTime(millisecondsSince1970: 1_800_000_008_000))
        let without = SessionOrigin(fullHandshake: handshake, certificateNotAfter: nil)
        #expect(SessionOrigin(ticketData: withCertificate.ticketData) == withCertificate)
        #expect(SessionOrigin(ticketData: without.ticketData) == without)
        #expect(withCertificate.ticketData.count == SessionOrigin.encodedCount)
        #expect(SessionOrigin(ticketData: []) == nil)
        #expect(SessionOrigin(ticketData: withCertificate.ticketData.dropLast()) == nil)
        var otherVersion = withCertificate.ticketData
        otherVersion[0] = 2
        #expect(SessionOrigin(ticketData: otherVersion) == nil)
    }

    @Test func aSessionResumesForMaxAgeFromItsFullHandshakeAndNoLonger() {
        let origin = SessionOrigin(fullHandshake: handshake, certificateNotAfter: nil)
        #expect(hour.allowsResumption(of: origin, now: handshake + .seconds(3_599)))
        #expect(!hour.allowsResumption(of: origin, now: handshake + .seconds(3_600)))
        // Resumptions carry the same origin, so no chain of them reaches past the first handshake's hour.
        #expect(
            hour.decide(.opened(origin: origin, renew: false), now: handshake + .seconds(3_000))
                == .resume(renew: false))
        #expect(hour.decide(.opened(origin: origin, renew: true), now: handshake + .seconds(3_601)) == .fullHandshake)
    }

    @Test func aSessionNeverResumesPastItsCertificatesNotAfter() {
        // notAfter 8 s after the handshake: good through that second, refused from the next one.
        let notAfter = handshake + .seconds(8)
        let origin = SessionOrigin(fullHandshake: handshake, certificateNotAfter: notAfter)
        #expect(hour.end(of: origin) == handshake + .seconds(9))
        #expect(hour.allowsResumption(of: origin, now: notAfter + .milliseconds(999)))
        #expect(!hour.allowsResumption(of: origin, now: handshake + .seconds(9)))
        #expect(hour.decide(.opened(origin: origin, renew: true), now: handshake + .seconds(9)) == .fullHandshake)
        // A certificate that outlives the maximum age does not lengthen it.
        let longLived = SessionOrigin(fullHandshake: handshake, certificateNotAfter: handshake + .seconds(86_400))
        #expect(hour.end(of: longLived) == handshake + .seconds(3_600))
    }

    @Test func ticketsWithoutAnOriginOrUnopenedNeverResume() {
        let now = handshake + .seconds(1)
        #expect(hour.decide(.opened(origin: nil, renew: false), now: now) == .fullHandshake)
        #expect(hour.decide(.unusable, now: now) == .fullHandshake)
        #expect(hour.decide(.failed, now: now) == .abort)
        let origin = SessionOrigin(fullHandshake: handshake, certificateNotAfter: nil)
        #expect(hour.decide(.opened(origin: origin, renew: true), now: now) == .resume(renew: true))
    }

    @Test func theSessionCacheTimeoutEndsWithTheLastWholeSecondBeforeTheEnd() {
        // OpenSSL resumes a cached session while the current second is at most its time + timeout.
        let sessionTime = handshake.secondsSince1970
        let aged = SessionOrigin(fullHandshake: handshake, certificateNotAfter: nil)
        #expect(hour.cacheTimeout(of: aged, sessionTime: sessionTime) == 3_599)
        let expiring = SessionOrigin(fullHandshake: handshake, certificateNotAfter: handshake + .seconds(8))
        #expect(hour.cacheTimeout(of: expiring, sessionTime: sessionTime) == 8)
        // A TLS 1.3 session restamped later keeps the first handshake's end.
        #expect(hour.cacheTimeout(of: aged, sessionTime: sessionTime + 3_000) == 599)
        #expect(hour.cacheTimeout(of: aged, sessionTime: sessionTime + 4_000) == 0)
    }
}
