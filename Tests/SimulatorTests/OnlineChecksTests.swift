import Cryptography
import Foundation
import GatewayFoundation
import SignedData
import Testing

@testable import Simulator

/// The verifier's online checks against the simulator's online PKI and OCSP responder, with the transport a
/// function call: good, revoked, unreachable and unusable answers, the cache until nextUpdate, and that the
/// inline (event-loop) path never needs a fetch.
@Suite struct OnlineChecksTests {
    static let referenceTime = Date(timeIntervalSince1970: 1_750_000_000)
    static let online: OnlineSimulatorPKI = {
        do {
            return try SimulatorFixture.sharedPKI.online(responderURL: "https://simulator.test/ocsp")
        } catch {
            preconditionFailure("online PKI: \(error)")
        }
    }()

    final class Clock: VerificationClock, Sendable {
        let current = Lock(OnlineChecksTests.referenceTime)
        func now() -> Date { current.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
    }

    /// Answers like the simulator's responder, or as told; counts requests.
    final class Responder: OCSPTransport, Sendable {
        enum Mode { case answer, unreachable, garbage }
        let mode: Mode
        let clock: Clock
        let requests = Lock<[String]>([])
        init(_ mode: Mode, clock: Clock) {
            self.mode = mode
            self.clock = clock
        }
        var count: Int { requests.withLock { $0.count } }
        func post(_ request: [UInt8], to url: String) async -> OCSPTransportResult {
            requests.withLock { $0.append(url) }
            switch mode {
            case .answer: return .answered(OnlineChecksTests.online.ocspResponse(to: request, now: clock.now()))
            case .unreachable: return .unreachable("connection refused")
            case .garbage: return .answered([0x30, 0x03, 0x0A, 0x01, 0x00])
            }
        }
    }

    let clock = Clock()

    private func verifier(_ responder: Responder, online: Bool = true) throws -> SignedDataVerifier {
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [SimulatorFixture.sharedPKI.root.certificate]
        )
        configuration.onlineChecks = online
        return try SignedDataVerifier(configuration: configuration, clock: clock, ocspTransport: responder)
    }

    private func transaction(signedBy pki: SimulatorPKI) throws -> String {
        try pki.sign(
            .object([
                ("transactionId", .string("7")), ("originalTransactionId", .string("7")),
                ("bundleId", .string("com.example")),
                ("signedDate", .integer(Int64(Self.referenceTime.timeIntervalSince1970 * 1000))),
                ("environment", .string("Sandbox")),
            ]))
    }

    @Test func goodLeafIsCheckedOnceThenCached() async throws {
        let responder = Responder(.answer, clock: clock)
        let verifier = try verifier(responder)
        let jws = try transaction(signedBy: Self.online.signing)
        // The event-loop path never fetches: it says a task is needed.
        #expect(verifier.verifyIfChainCached(jws) == nil)
        let first = await verifier.verifyOnline(jws)
        #expect(first.status == .ok, "\(first.message)")
        #expect(responder.count == 2)  // leaf and intermediate
        #expect(responder.requests.withLock { $0 }.allSatisfy { $0 == "https://simulator.test/ocsp" })
        #expect(verifier.revocationCacheCount == 2)
        // Cached: no fetch, and cheap enough for the event loop now.
        #expect(await verifier.verifyOnline(jws).status == .ok)
        #expect(verifier.verifyIfChainCached(jws)?.status == .ok)
        #expect(responder.count == 2)
        // Past nextUpdate (one hour) the status is asked again.
        clock.advance(3_601)
        #expect(verifier.verifyIfChainCached(jws) == nil)
        #expect(await verifier.verifyOnline(jws).status == .ok)
        #expect(responder.count == 4)
    }

    @Test func revokedLeafIsUntrusted() async throws {
        let responder = Responder(.answer, clock: clock)
        let verifier = try verifier(responder)
        let result = await verifier.verifyOnline(try transaction(signedBy: Self.online.revoked))
        #expect(result.status == .untrustedChain)
        #expect(result.message.contains("revoked"))
        #expect(PayloadDecoder.decode(result) == nil)
        // The good leaf of the same intermediate still verifies.
        #expect(await verifier.verifyOnline(try transaction(signedBy: Self.online.signing)).status == .ok)
    }

    @Test func unreachableOrUnusableRespondersAreRetryable() async throws {
        for mode in [Responder.Mode.unreachable, .garbage] {
            let responder = Responder(mode, clock: clock)
            let verifier = try verifier(responder)
            let result = await verifier.verifyOnline(try transaction(signedBy: Self.online.signing))
            #expect(result.status == .retryableFailure, "\(mode): \(result.message)")
            #expect(result.message.contains("OCSP"))
            #expect(verifier.revocationCacheCount == 0)
        }
    }

    @Test func certificatesWithoutAResponderFailOnline() async throws {
        let responder = Responder(.answer, clock: clock)
        let verifier = try verifier(responder)
        // The simulator's stored PKI names no responder: online checks cannot vouch for it.
        let result = await verifier.verifyOnline(try transaction(signedBy: SimulatorFixture.sharedPKI))
        #expect(result.status == .untrustedChain)
        #expect(responder.count == 0)
        // Offline the same data verifies.
        let offline = try self.verifier(responder, online: false)
        #expect(offline.verify(try transaction(signedBy: SimulatorFixture.sharedPKI)).status == .ok)
    }

    @Test func theSynchronousPathNeverFetches() throws {
        let responder = Responder(.answer, clock: clock)
        let verifier = try verifier(responder)
        let result = verifier.verify(try transaction(signedBy: Self.online.signing))
        #expect(result.status == .retryableFailure)
        #expect(responder.count == 0)
        // A bad signature is found before any responder is asked.
        let forged = NotificationHistoryEndpoint.forged(try transaction(signedBy: Self.online.signing))
        #expect(verifier.verify(forged).status == .invalidSignature)
        #expect(responder.count == 0)
    }

    @Test func chainsAreValidatedAtTheCurrentTimeOnline() async throws {
        let responder = Responder(.answer, clock: clock)
        let verifier = try verifier(responder)
        let jws = try transaction(signedBy: Self.online.signing)
        clock.advance(3 * 365 * 86_400)  // the leaf (about 400 days left) has expired; its signedDate has not moved
        let result = await verifier.verifyOnline(jws)
        #expect(result.status == .untrustedChain)
        #expect(try self.verifier(responder, online: false).verify(jws).status == .ok)
    }
}
