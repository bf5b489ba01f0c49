import AppStoreDomain
import GatewayFoundation
import NotificationStore
import Testing

@testable import Edge
@testable import Services

/// The pure parts of `follow`: the catch-up merge's decisions, the resume token and the webhook body reader.
@Suite struct FollowTests {
    @Test func theMergeFetchesWhatItLacksThenEmitsTheEarlierHead() {
        #expect(FollowMerge.next(appleHead: nil, appleDone: false, storeHead: nil, storeDone: false) == .fetchStore)
        #expect(FollowMerge.next(appleHead: nil, appleDone: false, storeHead: 5, storeDone: false) == .fetchApple)
        #expect(FollowMerge.next(appleHead: 4, appleDone: false, storeHead: 5, storeDone: false) == .emitApple)
        #expect(
            FollowMerge.next(appleHead: 5, appleDone: false, storeHead: 5, storeDone: false) == .emitStore,
            "on a tie the store's copy goes first, so Apple's copy of the same UUID is the one skipped")
        #expect(FollowMerge.next(appleHead: nil, appleDone: true, storeHead: 9, storeDone: true) == .emitStore)
        #expect(FollowMerge.next(appleHead: 3, appleDone: false, storeHead: nil, storeDone: true) == .emitApple)
        #expect(FollowMerge.next(appleHead: nil, appleDone: true, storeHead: nil, storeDone: true) == .catchUpDone)
    }

    /// A merge of two sorted sources driven by the decision alone emits every item once, in date order.
    @Test func aSimulatedMergeEmitsInSignedDateOrder() {
        var apple: [Int64] = [1, 4, 4, 9, 12]
        var store: [Int64] = [2, 4, 10]
        var appleQueue: [Int64] = []
        var storeQueue: [Int64] = []
        var emitted: [Int64] = []
        loop: while true {
            switch FollowMerge.next(
                appleHead: appleQueue.first, appleDone: apple.isEmpty && appleQueue.isEmpty,
                storeHead: storeQueue.first, storeDone: store.isEmpty)
            {
            case .fetchApple: appleQueue += apple.prefix(2); apple.removeFirst(min(2, apple.count))
            case .fetchStore: storeQueue += store.prefix(1); store.removeFirst(min(1, store.count))
            case .emitApple: emitted.append(appleQueue.removeFirst())
            case .emitStore: emitted.append(storeQueue.removeFirst())
            case .catchUpDone: break loop
            }
        }
        #expect(emitted == [1, 2, 4, 4, 4, 9, 10, 12])
    }

    @Test func aFollowTokenRoundTripsAndRefusesTamperingAndHistoryTokens() throws {
        let key = Array("0123456789abcdef0123456789abcdef".utf8)
        let ring = ResumeTokenKeyRing(keys: [key])
        let maxAge = Duration.seconds(86_400)
        let now = WallTime(millisecondsSince1970: 99)
        let codec = FollowTokenCodec(ring: ring, maxAge: maxAge)
        var position = FollowPosition(
            bundleID: "com.example", filterHash: Array(repeating: 7, count: 32), windowEnd: 1_700_000_000_000,
            snapshot: StorePosition(major: 42))
        position.apple = .init(pageToken: "page-3", index: 17, environment: .sandbox)
        position.storeKey = WindowKey(signedDate: 1_699_999_999_000, position: StorePosition(major: 40, minor: 2))
        position.liveCursor = StorePosition(major: 1_700_000_000_123, minor: 4)
        position.live = true
        position.issuedAt = 99
        let text = codec.encode(position)
        #expect(try codec.decode(text, now: now) == position)
        var bytes = Array(text.utf8)
        bytes[10] = bytes[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: GatewayError.self) { try codec.decode(String(decoding: bytes, as: UTF8.self), now: now) }
        #expect(throws: GatewayError.self) {
            try FollowTokenCodec(ring: ResumeTokenKeyRing(keys: [Array(key.reversed())]), maxAge: maxAge)
                .decode(text, now: now)
        }
        // Past its max age: RESUME_TOKEN_EXPIRED, with no event date to restart from (a follow starts from its own).
        #expect(
            throws: GatewayError.resumeTokenExpired(issuedAt: 99, maxAgeMilliseconds: 86_400_000, restartFrom: nil)
        ) { try codec.decode(text, now: now + maxAge + .milliseconds(1)) }
        let history = ResumeTokenCodec(ring: ring, maxAge: maxAge).encode(
            NotificationResumeToken(
                pageToken: "", index: 0, environment: .production, bundleID: "com.example",
                filterHash: Array(repeating: 7, count: 32), eventSignedDate: 1, issuedAt: 1))
        #expect(throws: GatewayError.self) { try codec.decode(history, now: now) }
        #expect(throws: GatewayError.self) { try ResumeTokenCodec(ring: ring, maxAge: maxAge).decode(text, now: now) }
        #expect(throws: GatewayError.self) { try codec.decode(String(repeating: "A", count: 20_000), now: now) }
    }

    @Test func theWebhookBodyIsOneFlatObjectWithOneSignedPayload() {
        func payload(_ text: String) -> String? { WebhookBody.signedPayload(Array(text.utf8)) }
        #expect(payload(#"{"signedPayload":"a.b.c"}"#) == "a.b.c")
        #expect(
            payload(" {\n\"signedPayload\" : \"a.b\\/c\", \"other\": 1.5e3, \"x\": null, \"y\": true } ") == "a.b/c")
        #expect(payload(#"{"signedPayload":"\u0061"}"#) == "a")
        // Runs of plain characters between escapes, an empty string, a long run.
        #expect(payload(#"{"signedPayload":"ab\/cd\nef\u0067"}"#) == "ab/cd\nefg")
        #expect(payload(#"{"x":"","signedPayload":""}"#) == "")
        let long = String(repeating: "eyJhbGciOiJFUzI1NiJ9.", count: 500)
        #expect(payload("{\"signedPayload\":\"\(long)\"}") == long)
        #expect(payload("{\"signedPayload\":\"\(long)") == nil)
        #expect(payload("{\"signedPayload\":\"\(long)\\") == nil)
        for bad in [
            "", "{}", "[]", #"{"signedPayload":1}"#, #"{"signedPayload":"a","signedPayload":"b"}"#,
            #"{"signedPayload":"a"} x"#, #"{"signedPayload":"a""#, #"{"x":{"signedPayload":"a"}}"#,
            #"{"signedPayload":"\u00e9"}"#, #"{"signedPayload":"a\q"}"#, "{\"signedPayload\":\"a\u{01}\"}",
            String(repeating: "[", count: 100_000),
        ] {
            #expect(payload(bad) == nil, "\(bad.prefix(40))")
        }
        #expect(WebhookBody.signedPayload([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) == nil)
        #expect(payload("{\"signedPayload\":\"\(long)\u{1F}\(long)\"}") == nil, "a control character deep in a run")
        #expect(payload("{\"signedPayload\":\"\(long)\\n\(long)\"}") == long + "\n" + long)
    }

    /// The end of a run of plain string characters, found with memchr and a vectorised minimum, is where a plain
    /// byte-at-a-time scan stops, on bodies of every mix of quotes, backslashes and control characters.
    @Test func aPlainRunEndsWhereAByteAtATimeScanEnds() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x22, 0x5C, 0x00, 0x1F, 0x20, 0x41, 0x2E, 0x7F, 0xC3, 0xFF]
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...300, using: &generator)
            let rare = Int.random(in: 1...200, using: &generator)
            let bytes: [UInt8] = (0..<count).map { _ in
                Int.random(in: 0..<rare, using: &generator) == 0
                    ? alphabet.randomElement(using: &generator)! : UInt8(ascii: "a")
            }
            let start = Int.random(in: 0...count, using: &generator)
            var expected = start
            while expected < count, bytes[expected] != 0x22, bytes[expected] != 0x5C, bytes[expected] >= 0x20 {
                expected += 1
            }
            #expect(bytes.withUnsafeBufferPointer { WebhookBody.plainRunEnd($0, from: start) } == expected)
        }
    }
}
