import AppStoreDomain
import Cryptography
import GRPC
import GatewayFoundation
import ProtoCodec
import Testing

@testable import Services

@Suite struct ResumeTokenCodecTests {
    static let key = Array("0123456789abcdef0123456789abcdef".utf8)
    static let maxAge = Duration.seconds(30 * 86_400)
    let codec = ResumeTokenCodec(ring: ResumeTokenKeyRing(keys: [key]), maxAge: maxAge)
    /// Within the token's max age.
    let now = WallTime(millisecondsSince1970: 1_700_000_200_000)
    let token = NotificationResumeToken(
        pageToken: "opaque+apple/token==", index: 7, environment: .sandbox, bundleID: "com.example.app",
        filterHash: SHA256.hash(Array("filters".utf8)), eventSignedDate: 1_700_000_000_123, issuedAt: 1_700_000_100_000)

    @Test func roundTrip() throws {
        let text = codec.encode(token)
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(try codec.decode(text, now: now) == token)
        var first = token
        first.pageToken = ""
        first.index = 0
        first.environment = .production
        #expect(try codec.decode(codec.encode(first), now: now) == first)
    }

    @Test func everyAlteredByteIsRejected() throws {
        let bytes = try #require(Base64URL.decode(codec.encode(token)))
        for position in bytes.indices {
            var altered = bytes
            altered[position] ^= 0x01
            #expect(throws: GatewayError.self) { try codec.decode(Base64URL.encode(altered), now: now) }
        }
    }

    @Test func garbledTruncatedOrForeignTokensAreRejected() {
        let text = codec.encode(token)
        let other = ResumeTokenCodec(
            ring: ResumeTokenKeyRing(keys: [Array("another key of 32 bytes, really!".utf8)]), maxAge: Self.maxAge)
        for bad in ["", "garbled", "!!!!", String(text.dropLast(4)), text + "AAAA", other.encode(token)] {
            #expect(throws: GatewayError.self) { try codec.decode(bad, now: now) }
            do {
                _ = try codec.decode(bad, now: now)
            } catch {
                guard case .invalidArgument(let field, _) = error else {
                    Issue.record("expected INVALID_ARGUMENT, got \(error)")
                    continue
                }
                #expect(field == "resume_token")
            }
        }
    }

    @Test func filtersChangeTheFingerprint() {
        let base = NotificationHistoryRequestBody(startDate: 1_000, endDate: 2_000)
        let reference = StreamNotificationsHandler.fingerprint(body: base, bundleID: "a", environment: nil)
        #expect(reference == StreamNotificationsHandler.fingerprint(body: base, bundleID: "a", environment: nil))
        let variants: [[UInt8]] = [
            StreamNotificationsHandler.fingerprint(body: base, bundleID: "b", environment: nil),
            StreamNotificationsHandler.fingerprint(body: base, bundleID: "a", environment: .production),
            StreamNotificationsHandler.fingerprint(
                body: NotificationHistoryRequestBody(startDate: 1_001, endDate: 2_000), bundleID: "a", environment: nil),
            StreamNotificationsHandler.fingerprint(
                body: NotificationHistoryRequestBody(startDate: 1_000, endDate: 2_001), bundleID: "a", environment: nil),
            StreamNotificationsHandler.fingerprint(
                body: NotificationHistoryRequestBody(startDate: 1_000, endDate: 2_000, notificationType: "DID_RENEW"),
                bundleID: "a", environment: nil),
            StreamNotificationsHandler.fingerprint(
                body: NotificationHistoryRequestBody(startDate: 1_000, endDate: 2_000, onlyFailures: true),
                bundleID: "a", environment: nil),
        ]
        for variant in variants { #expect(variant != reference) }
    }

    /// A followed stream's token, like a history stream's, continues only for the caller it was served to.
    @Test func aFollowedStreamsFingerprintNamesItsCaller() {
        var request = StreamNotificationsRequest()
        request.follow = true
        func fingerprint(_ caller: String?) -> [UInt8] {
            StreamNotificationsHandler.followFingerprint(request, bundleID: "a", environment: nil, caller: caller)
        }
        #expect(fingerprint("team-a") == fingerprint("team-a"))
        #expect(fingerprint("team-a") != fingerprint("team-b"))
        #expect(fingerprint("team-a") != fingerprint(nil))
    }

    /// The ring's first key signs; every key verifies; a key dropped from the ring no longer does.
    @Test func theRingsFirstKeySignsAndEveryKeyVerifies() throws {
        let (old, new) = (Self.key, Array(repeating: UInt8(9), count: 48))
        let before = codec.encode(token)
        let rotated = ResumeTokenCodec(ring: ResumeTokenKeyRing(keys: [new, old]), maxAge: Self.maxAge)
        #expect(try rotated.decode(before, now: now) == token)
        let after = rotated.encode(token)
        #expect(after != before)
        #expect(throws: GatewayError.self) { try codec.decode(after, now: now) }
        let dropped = ResumeTokenCodec(ring: ResumeTokenKeyRing(keys: [new]), maxAge: Self.maxAge)
        #expect(try dropped.decode(after, now: now) == token)
        do {
            _ = try dropped.decode(before, now: now)
            Issue.record("a token signed with a key dropped from the ring must be refused")
        } catch {
            guard case .invalidArgument(let field, _) = error else {
                Issue.record("expected INVALID_ARGUMENT, got \(error)")
                return
            }
            #expect(field == "resume_token")
        }
    }

    /// A reloaded ring is in force for the next token (the codec reads the ring it was given).
    @Test func aReplacedRingIsInForceAtOnce() throws {
        let ring = ResumeTokenKeyRing(keys: [Self.key])
        let live = ResumeTokenCodec(ring: ring, maxAge: Self.maxAge)
        let before = live.encode(token)
        ring.replace(with: [Array(repeating: 3, count: 32)])
        #expect(throws: GatewayError.self) { try live.decode(before, now: now) }
        #expect(try live.decode(live.encode(token), now: now) == token)
        ring.replace(with: [])
        #expect(ring.keys == [Array(repeating: 3, count: 32)], "an empty ring is never put in force")
    }

    /// Up to its max age a token resumes; a millisecond later it is RESUME_TOKEN_EXPIRED, naming the event's
    /// signed date to restart from.
    @Test func aTokenOlderThanItsMaxAgeIsExpired() throws {
        let text = codec.encode(token)
        let limit = WallTime(millisecondsSince1970: token.issuedAt) + Self.maxAge
        #expect(try codec.decode(text, now: limit) == token)
        #expect(
            throws: GatewayError.resumeTokenExpired(
                issuedAt: token.issuedAt, maxAgeMilliseconds: 30 * 86_400_000, restartFrom: token.eventSignedDate)
        ) { try codec.decode(text, now: limit + .milliseconds(1)) }
        // A forgery is refused for its MAC, whatever its age: the age of a token is only read once it is genuine.
        var bytes = try #require(Base64URL.decode(text))
        bytes[bytes.count - 1] ^= 1
        #expect(throws: GatewayError.self) { try codec.decode(Base64URL.encode(bytes), now: limit + .seconds(1)) }
        do {
            _ = try codec.decode(Base64URL.encode(bytes), now: limit + .seconds(1))
        } catch {
            guard case .invalidArgument = error else {
                Issue.record("a forged token must be INVALID_ARGUMENT for its MAC, got \(error)")
                return
            }
        }
    }

    @Test func anExpiredTokenIsInvalidArgumentWithItsOwnReason() throws {
        let status = GatewayError.resumeTokenExpired(
            issuedAt: 1_700_000_000_000, maxAgeMilliseconds: 30 * 86_400_000, restartFrom: 1_699_999_999_000
        ).rpcStatus
        #expect(status.code == .invalidArgument)
        #expect(status.message.contains("has expired") && status.message.contains("30d"))
        #expect(status.message.contains("1699999999000"))
        let info = try #require(status.details?.info)
        #expect(info.reason == "RESUME_TOKEN_EXPIRED")
        #expect(info.metadata["field"] == "resume_token")
        #expect(info.metadata["restart_from_ms"] == "1699999999000")
        #expect(info.metadata["max_age_ms"] == "2592000000")
        #expect(status.details?.fieldViolations.map(\.field) == ["resume_token"])
    }
}

@Suite struct NotificationPagingTests {
    typealias Paging = NotificationPaging

    func page(_ count: Int, next: String, more: Bool, _ environment: AppleEnvironment = .production)
        -> Paging.PageSummary
    {
        Paging.PageSummary(count: count, paginationToken: next, hasMore: more, environment: environment)
    }

    @Test func pagesInOrderAndPinsTheEnvironment() throws {
        var paging = Paging()
        let first = try #require(paging.next)
        #expect(first == Paging.PageRequest(paginationToken: nil, environment: nil))
        let emitted = paging.receive(page(20, next: "t1", more: true, .sandbox), for: first)
        #expect(emitted.map(\.index) == Array(0..<20))
        #expect(emitted.allSatisfy { $0.pageToken == "" && $0.environment == .sandbox })
        let second = try #require(paging.next)
        #expect(second == Paging.PageRequest(paginationToken: "t1", environment: .sandbox))
        let last = paging.receive(page(3, next: "t2", more: false, .sandbox), for: second)
        #expect(last.map(\.index) == [0, 1, 2] && last.allSatisfy { $0.pageToken == "t1" })
        #expect(paging.next == nil && paging.ending == .complete && paging.pagesReceived == 2)
    }

    @Test func resumingSkipsThroughTheNamedEventOnly() throws {
        for index in 0..<20 {
            var paging = Paging(resumingAt: (pageToken: "t1", index: index, environment: .production))
            let request = try #require(paging.next)
            #expect(request == Paging.PageRequest(paginationToken: "t1", environment: .production))
            let emitted = paging.receive(page(20, next: "t2", more: true), for: request)
            #expect(emitted.map(\.index) == Array((index + 1)..<20))
            // The following page is emitted whole.
            let next = try #require(paging.next)
            #expect(paging.receive(page(20, next: "", more: false), for: next).count == 20)
        }
    }

    @Test func resumingFromTheFirstPageRefetchesItWithoutAToken() throws {
        var paging = Paging(resumingAt: (pageToken: "", index: 4, environment: .sandbox))
        let request = try #require(paging.next)
        #expect(request == Paging.PageRequest(paginationToken: nil, environment: .sandbox))
        #expect(paging.receive(page(6, next: "", more: false, .sandbox), for: request).map(\.index) == [5])
    }

    @Test func aPageShorterThanTheSkipEmitsNothingAndMovesOn() throws {
        var paging = Paging(resumingAt: (pageToken: "t1", index: 30, environment: .production))
        let request = try #require(paging.next)
        #expect(paging.receive(page(20, next: "t2", more: true), for: request).isEmpty)
        #expect(paging.next?.paginationToken == "t2")
    }

    @Test func moreWithoutATokenStopsAsBroken() throws {
        var paging = Paging()
        let request = try #require(paging.next)
        #expect(paging.receive(page(20, next: "", more: true), for: request).count == 20)
        #expect(paging.next == nil && paging.ending == .missingToken)
    }
}
