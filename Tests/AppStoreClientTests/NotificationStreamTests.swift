import Cryptography
import GatewayCore
import ProtoCodec
import Testing

@testable import Services

@Suite struct ResumeTokenCodecTests {
    let codec = ResumeTokenCodec(key: Array("0123456789abcdef0123456789abcdef".utf8))
    let token = NotificationResumeToken(
        pageToken: "opaque+apple/token==", index: 7, environment: .sandbox, bundleID: "com.example.app",
        filterHash: SHA256.hash(Array("filters".utf8)), eventSignedDate: 1_700_000_000_123, issuedAt: 1_700_000_100_000)

    @Test func roundTrip() throws {
        let text = codec.encode(token)
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(try codec.decode(text) == token)
        var first = token
        first.pageToken = ""
        first.index = 0
        first.environment = .production
        #expect(try codec.decode(codec.encode(first)) == first)
    }

    @Test func everyAlteredByteIsRejected() throws {
        let bytes = try #require(Base64URL.decode(codec.encode(token)))
        for position in bytes.indices {
            var altered = bytes
            altered[position] ^= 0x01
            #expect(throws: GatewayError.self) { try codec.decode(Base64URL.encode(altered)) }
        }
    }

    @Test func garbledTruncatedOrForeignTokensAreRejected() {
        let text = codec.encode(token)
        let other = ResumeTokenCodec(key: Array("another key of 32 bytes, really!".utf8))
        for bad in ["", "garbled", "!!!!", String(text.dropLast(4)), text + "AAAA", other.encode(token)] {
            #expect(throws: GatewayError.self) { try codec.decode(bad) }
            do {
                _ = try codec.decode(bad)
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

    @Test func derivedKeysAgreeForTheSameSecretsOnly() {
        let app = GatewayConfiguration.App(
            name: "example", bundleId: "com.example.app", appAppleId: 1, issuerId: "i", keyId: "k",
            privateKeyFile: "/k1", environment: .auto)
        let files: [String: [UInt8]] = ["/k1": [1, 2, 3], "/k2": [4, 5, 6]]
        let one = ResumeTokenCodec.derivedKey(apps: [app]) { files[$0] }
        let again = ResumeTokenCodec.derivedKey(apps: [app]) { files[$0] }
        var other = app
        other.privateKeyFile = "/k2"
        #expect(one != nil && one == again)
        #expect(one != ResumeTokenCodec.derivedKey(apps: [other]) { files[$0] })
        #expect(ResumeTokenCodec.derivedKey(apps: [app]) { _ in nil } == nil)
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
