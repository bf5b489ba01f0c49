import Foundation
import ProtoCodec
import Testing

private func json(_ message: some ProtoMessage) -> String {
    String(decoding: ProtoJSON.encode(message), as: UTF8.self)
}

@Suite struct ProtoJSONTests {
    /// A renewal as the gateway posts it to a webhook: every kind of field SubscriptionEvent carries.
    static let renewal = SubscriptionEvent(
        eventId: "evt-1000000123456789-2", app: "acme", environment: .production,
        originalTransactionId: "1000000123456789", sequence: .max, type: .renewal,
        subscription: Subscription(
            app: "acme", environment: .production, originalTransactionId: "1000000123456789",
            productId: "com.acme.pro.monthly", status: .active, entitled: true, entitlements: ["pro", "sync"],
            expiresDate: ProtoTimestamp(seconds: 1_798_520_400, nanos: 123_000_000), autoRenew: true,
            transaction: Transaction.with {
                $0.transactionId = "2000000987654321"
                $0.purchaseDate = ProtoTimestamp(seconds: 1_795_928_400)
                $0.quantity = 1
                $0.priceMilliunits = 9990
                $0.isUpgradedValue = ProtoBoolValue(value: false)
            },
            renewalInfo: RenewalInfo.with {
                $0.autoRenewProductId = "com.acme.pro.yearly"
                $0.renewalDate = ProtoTimestamp(seconds: 1_798_520_400, nanos: 1000)
                $0.eligibleWinBackOfferIds = ["wb1", "wb2"]
                $0.isInBillingRetryPeriodValue = ProtoBoolValue(value: true)
            },
            version: 42),
        previousStatus: .active, occurredAt: ProtoTimestamp(seconds: 1_795_928_400),
        cause: "d4f9c3a2-6b1e-4c7a-9f0e-3b2a1c5d7e8f")

    @Test func subscriptionEvent() {
        let expected =
            #"{"eventId":"evt-1000000123456789-2","app":"acme","environment":"ENVIRONMENT_PRODUCTION","#
            + #""originalTransactionId":"1000000123456789","sequence":"18446744073709551615","#
            + #""type":"SUBSCRIPTION_EVENT_TYPE_RENEWAL","subscription":{"app":"acme","#
            + #""environment":"ENVIRONMENT_PRODUCTION","originalTransactionId":"1000000123456789","#
            + #""productId":"com.acme.pro.monthly","status":"SUBSCRIPTION_STATUS_ACTIVE","entitled":true,"#
            + #""entitlements":["pro","sync"],"expiresDate":"2026-12-29T05:00:00.123Z","autoRenew":true,"#
            + #""transaction":{"transactionId":"2000000987654321","purchaseDate":"2026-11-29T05:00:00Z","#
            + #""quantity":1,"priceMilliunits":"9990","isUpgradedValue":false},"#
            + #""renewalInfo":{"autoRenewProductId":"com.acme.pro.yearly","#
            + #""renewalDate":"2026-12-29T05:00:00.000001Z","eligibleWinBackOfferIds":["wb1","wb2"],"#
            + #""isInBillingRetryPeriodValue":true},"version":"42"},"previousStatus":"SUBSCRIPTION_STATUS_ACTIVE","#
            + #""occurredAt":"2026-11-29T05:00:00Z","cause":"d4f9c3a2-6b1e-4c7a-9f0e-3b2a1c5d7e8f"}"#
        #expect(json(Self.renewal) == expected)
        // Deterministic: the same message, and an equal one decoded from its bytes, give the same bytes.
        #expect(ProtoJSON.encode(Self.renewal) == ProtoJSON.encode(Self.renewal))
        let decoded = try? SubscriptionEvent(serializedBytes: Self.renewal.serializedBytes())
        #expect(decoded.map(ProtoJSON.encode) == ProtoJSON.encode(Self.renewal))
    }

    @Test func defaultsAreLeftOutButSetMessagesArePrinted() {
        #expect(json(SubscriptionEvent()) == "{}")
        #expect(json(SubscriptionEvent(sequence: 0, type: .unspecified, cause: "")) == "{}")
        #expect(json(Subscription(transaction: Transaction())) == #"{"transaction":{}}"#)
        #expect(json(SubscriptionEvent(occurredAt: ProtoTimestamp())) == #"{"occurredAt":"1970-01-01T00:00:00Z"}"#)
        // A wrapper set to its default is printed: the wrapper is there to say it is set.
        #expect(json(Transaction.with { $0.isUpgradedValue = ProtoBoolValue() }) == #"{"isUpgradedValue":false}"#)
        #expect(json(Subscription(entitlements: [])) == "{}")
    }

    @Test func oneofCasesArePrintedEvenAtTheirDefault() {
        #expect(
            json(SendConsumptionInformationRequest(consumption: .consumptionPercentage(0)))
                == #"{"consumptionPercentage":0}"#)
        #expect(json(GetCustomerRequest(key: .appAccountToken(""))) == #"{"appAccountToken":""}"#)
        #expect(json(GetCustomerRequest(key: .originalTransactionId("7"))) == #"{"originalTransactionId":"7"}"#)
        #expect(json(VerifyJWSResponse(payload: .renewalInfo(RenewalInfo()))) == #"{"renewalInfo":{}}"#)
    }

    @Test func stringsAreEscapedAsJSONRequires() {
        let text = "q\" b\\ /\n\r\t\u{8}\u{C}\u{1}\u{1F}\u{7F} é 日本 🎉 \u{2028}"
        #expect(
            json(SubscriptionEvent(cause: text))
                == #"{"cause":"q\" b\\ /\n\r\t\b\f\u0001\u001f"# + "\u{7F} é 日本 🎉 \u{2028}\"}")
        // Non-ASCII stays UTF-8, byte for byte.
        #expect(ProtoJSON.encode(SubscriptionEvent(cause: "é🎉")) == Array(#"{"cause":"é🎉"}"#.utf8))
        // protobuf-c strings are C strings: the wire encoding, and so the JSON, ends a string at a NUL.
        #expect(json(SubscriptionEvent(cause: "ab\u{0}cd")) == #"{"cause":"ab"}"#)
    }

    @Test func unknownEnumNumbersArePrintedAsNumbers() {
        #expect(json(SubscriptionEvent(type: .unrecognized(77))) == #"{"type":77}"#)
        #expect(json(SubscriptionEvent(environment: .unrecognized(-3))) == #"{"environment":-3}"#)
        #expect(
            json(SubscriptionEvent(previousStatus: .expired)) == #"{"previousStatus":"SUBSCRIPTION_STATUS_EXPIRED"}"#)
    }

    @Test func bytesAreBase64WithPadding() {
        #expect(json(UploadImageRequest(image: [0, 1, 2, 253, 254, 255])) == #"{"image":"AAEC/f7/"}"#)
        #expect(json(UploadImageRequest(image: [0xFF])) == #"{"image":"/w=="}"#)
        #expect(json(UploadImageRequest(image: Array("ab".utf8))) == #"{"image":"YWI="}"#)
        #expect(json(ProtoBytesValue(value: [])) == #""""#)
    }

    @Test func integersBeyond32BitsAreStrings() {
        #expect(json(ProtoInt64Value(value: .min)) == #""-9223372036854775808""#)
        #expect(json(ProtoUInt64Value(value: .max)) == #""18446744073709551615""#)
        #expect(json(ProtoInt32Value(value: .min)) == "-2147483648")
        #expect(json(ProtoUInt32Value(value: .max)) == "4294967295")
        #expect(json(ProtoBoolValue(value: true)) == "true")
        #expect(json(ProtoStringValue(value: "")) == #""""#)
    }

    @Test(
        arguments: [
            (1.0, "1.0"), (0.1, "0.1"), (-2.5, "-2.5"), (100, "100.0"), (1e15, "1000000000000000.0"),
            (1e16, "1e+16"), (1.5e16, "1.5e+16"), (1e-4, "0.0001"), (1e-5, "1e-05"), (1.5e-7, "1.5e-07"),
            (.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"), (1e100, "1e+100"),
            (.nan, #""NaN""#), (.infinity, #""Infinity""#), (-.infinity, #""-Infinity""#), (0, "0.0"),
            // -0.0 is a default to protobuf-c's encoder: it is dropped, and the wrapper's value is 0.
            (-0.0, "0.0"),
        ] as [(Double, String)])
    func doublesAsPythonPrintsThem(value: Double, expected: String) {
        #expect(json(ProtoDoubleValue(value: value)) == expected)
    }

    @Test(
        arguments: [
            (0.1, "0.1"), (1, "1.0"), (16_777_216, "16777216.0"), (1e10, "10000000000.0"),
            (.greatestFiniteMagnitude, "3.4028235e+38"), (-0.9, "-0.9"), (.nan, #""NaN""#),
            // 6 significant digits at least: the smallest subnormal is not "1e-45".
            (.leastNonzeroMagnitude, "1.4013e-45"), (Float(bitPattern: 0x1_16C2), "9.99995e-41"),
        ] as [(Float, String)])
    func floatsAsToShortestFloatFindsThem(value: Float, expected: String) {
        #expect(json(ProtoFloatValue(value: value)) == expected)
    }

    @Test(
        arguments: [
            (0, 0, "1970-01-01T00:00:00Z"), (1_795_928_400, 0, "2026-11-29T05:00:00Z"),
            (1_795_928_400, 5_000_000, "2026-11-29T05:00:00.005Z"),
            (1_795_928_400, 120_000, "2026-11-29T05:00:00.000120Z"),
            (1_795_928_400, 1, "2026-11-29T05:00:00.000000001Z"), (-1, 999_999_999, "1969-12-31T23:59:59.999999999Z"),
            (951_782_400, 0, "2000-02-29T00:00:00Z"), (-62_135_596_800, 0, "0001-01-01T00:00:00Z"),
            (253_402_300_799, 999_000_000, "9999-12-31T23:59:59.999Z"),
        ] as [(Int64, Int32, String)])
    func timestampsInRFC3339(seconds: Int64, nanos: Int32, expected: String) {
        #expect(json(ProtoTimestamp(seconds: seconds, nanos: nanos)) == "\"\(expected)\"")
    }

    @Test func timestampsOutOfRangeArePlainMessages() {
        #expect(json(ProtoTimestamp(seconds: -62_135_596_801)) == #"{"seconds":"-62135596801"}"#)
        #expect(json(ProtoTimestamp(seconds: 253_402_300_800)) == #"{"seconds":"253402300800"}"#)
        #expect(json(ProtoTimestamp(seconds: 1, nanos: -1)) == #"{"seconds":"1","nanos":-1}"#)
        #expect(
            json(ProtoTimestamp(seconds: .min, nanos: .max))
                == #"{"seconds":"-9223372036854775808","nanos":2147483647}"#)
    }

    @Test func durations() {
        #expect(json(ProtoDuration()) == #""0s""#)
        #expect(json(ProtoDuration(milliseconds: 1500)) == #""1.500s""#)
        #expect(json(ProtoDuration(milliseconds: -1500)) == #""-1.500s""#)
        #expect(json(ProtoDuration(seconds: 0, nanos: -1000)) == #""-0.000001s""#)
        #expect(json(ProtoDuration(seconds: 315_576_000_000, nanos: 999_999_999)) == #""315576000000.999999999s""#)
        #expect(json(RetryInfo(retryDelay: ProtoDuration(seconds: 30))) == #"{"retryDelay":"30s"}"#)
        // Out of range or of mixed signs: a plain message.
        #expect(json(ProtoDuration(seconds: 1, nanos: -1)) == #"{"seconds":"1","nanos":-1}"#)
        #expect(json(ProtoDuration(seconds: 315_576_000_001)) == #"{"seconds":"315576000001"}"#)
        #expect(
            json(ProtoDuration(seconds: .min, nanos: .min))
                == #"{"seconds":"-9223372036854775808","nanos":-2147483648}"#)
    }

    @Test func mapsAreObjectsSortedByKey() {
        let info = ErrorInfo(
            reason: "RATE_LIMIT_EXCEEDED", metadata: ["b": "2", "é": "4", "a": "1", "Z": "0", "": "e", "a\"": "q"])
        #expect(
            json(info)
                == #"{"reason":"RATE_LIMIT_EXCEEDED","metadata":{"":"e","Z":"0","a":"1","a\"":"q","b":"2","é":"4"}}"#)
        #expect(json(ErrorInfo(metadata: [:])) == "{}")
        // Entries on the wire out of order, a key twice (the last wins): inside an Any, bytes as they came.
        let entries: [UInt8] = [
            0x1A, 0x06, 0x0A, 0x01, 0x62, 0x12, 0x01, 0x32,  // "b": "2"
            0x1A, 0x06, 0x0A, 0x01, 0x61, 0x12, 0x01, 0x31,  // "a": "1"
            0x1A, 0x06, 0x0A, 0x01, 0x62, 0x12, 0x01, 0x33,  // "b": "3"
            0x1A, 0x03, 0x0A, 0x01, 0x63,  // "c" without a value: ""
        ]
        #expect(
            json(ProtoAny(typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: entries))
                == #"{"@type":"type.googleapis.com/google.rpc.ErrorInfo","metadata":{"a":"1","b":"3","c":""}}"#)
    }

    @Test func anyPrintsItsPayloadWithItsType() {
        let status = GoogleRPCStatus(
            code: 8, message: "quota",
            details: [
                ProtoAny(packing: ErrorInfo(reason: "R", metadata: ["k": "v"])),
                ProtoAny(packing: RetryInfo(retryDelay: ProtoDuration(milliseconds: 250))),
                ProtoAny(packing: ProtoTimestamp(seconds: 0)),
                ProtoAny(packing: ProtoInt64Value(value: 5)),
                ProtoAny(packing: ProtoAny(packing: ProtoBoolValue(value: true))),
                ProtoAny(packing: RetryInfo()),
                ProtoAny(),
            ])
        let expected =
            #"{"code":8,"message":"quota","details":["#
            + #"{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"R","metadata":{"k":"v"}},"#
            + #"{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.250s"},"#
            + #"{"@type":"type.googleapis.com/google.protobuf.Timestamp","value":"1970-01-01T00:00:00Z"},"#
            + #"{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":"5"},"#
            + #"{"@type":"type.googleapis.com/google.protobuf.Any","value":"#
            + #"{"@type":"type.googleapis.com/google.protobuf.BoolValue","value":true}},"#
            + #"{"@type":"type.googleapis.com/google.rpc.RetryInfo"},"#
            + #"{}]}"#
        #expect(json(status) == expected)
        // Any host prefix: the type is the URL's last segment.
        #expect(
            json(ProtoAny(typeUrl: "example.com/x/google.rpc.RetryInfo", value: RetryInfo().serializedBytes()))
                == #"{"@type":"example.com/x/google.rpc.RetryInfo"}"#)
    }

    @Test func anyWithoutAKnownPayloadFallsBackToItsBytes() {
        // No such type: json_format raises; ProtoJSON prints the bytes (documented, not canonical).
        #expect(
            json(ProtoAny(typeUrl: "type.googleapis.com/example.Unknown", value: [1, 2, 3]))
                == #"{"@type":"type.googleapis.com/example.Unknown","value":"AQID"}"#)
        // A value that is not that type: a truncated varint.
        #expect(
            json(ProtoAny(typeUrl: "type.googleapis.com/google.rpc.RetryInfo", value: [0x0A, 0xFF]))
                == #"{"@type":"type.googleapis.com/google.rpc.RetryInfo","value":"Cv8="}"#)
        #expect(json(ProtoAny(typeUrl: "", value: [0x08, 0x01])) == #"{"@type":"","value":"CAE="}"#)
    }

    @Test func anyNestingIsBounded() {
        var any = ProtoAny(packing: ProtoBoolValue(value: true))
        for _ in 0..<200 { any = ProtoAny(packing: any) }
        let text = json(any)
        // 64 levels printed, then the 65th Any as the fallback: its bytes in base64.
        #expect(text.components(separatedBy: #"google.protobuf.Any","value":{"#).count - 1 == 64)
        #expect(text.hasSuffix("\"" + String(repeating: "}", count: 65)))
        #expect(json(any) == text)
    }

    @Test func invalidUTF8InsideAnyIsReplaced() {
        // ErrorInfo.reason (field 1) holding 0xFF: protobuf-c does not check UTF-8; the JSON gets U+FFFD.
        #expect(
            json(ProtoAny(typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: [0x0A, 0x02, 0x61, 0xFF]))
                == "{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"a\u{FFFD}\"}")
    }

    @Test func repeatedMessages() {
        let info = AdvancedCommerceTransactionInfo.with {
            $0.items = [
                AdvancedCommerceTransactionItem.with { $0.sku = "a" }, AdvancedCommerceTransactionItem(),
                AdvancedCommerceTransactionItem.with { $0.priceMilliunits = -1 },
            ]
        }
        #expect(json(info) == #"{"items":[{"sku":"a"},{},{"priceMilliunits":"-1"}]}"#)
    }

    @Test func aTypeProtoCodecDidNotGenerateHasNoSchema() {
        #expect(json(Foreign()) == "{}")
    }

    // MARK: Differential: Python's json_format

    /// Every case of Fixtures/proto-json.txt (scripts/proto-json-fixtures.py: random messages from fixed seeds,
    /// and json_format's JSON of each): decoded here, encoded by ProtoJSON, compared byte for byte.
    @Test func agreesWithPythonJSONFormat() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/proto-json.txt")
        let text = try String(contentsOf: url, encoding: .utf8)
        let types: [any ProtoMessage.Type] = [
            SubscriptionEvent.self, Subscription.self, Transaction.self, RenewalInfo.self, GoogleRPCStatus.self,
            ErrorInfo.self, RetryInfo.self, VerifyJWSResponse.self, ServeRealtimeRequestsRequest.self,
            SendConsumptionInformationRequest.self, GetCustomerRequest.self, UploadImageRequest.self,
            AdvancedCommerceTransactionInfo.self, CreateInAppSignatureRequest.self, ProtoAny.self,
            ProtoTimestamp.self, ProtoDuration.self, ProtoDoubleValue.self, ProtoFloatValue.self,
            ProtoInt64Value.self, ProtoUInt64Value.self, ProtoInt32Value.self, ProtoUInt32Value.self,
            ProtoBoolValue.self, ProtoStringValue.self, ProtoBytesValue.self,
        ]
        let byName = Dictionary(uniqueKeysWithValues: types.map { ($0.protoMessageName, $0) })
        var cases = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            try #require(parts.count == 3, "\(line)")
            let type = try #require(byName[String(parts[0])], "no Swift type listed for \(parts[0])")
            let bytes = try #require(hexBytes(parts[1]), "bad hex: \(parts[1])")
            let encoded = try encodeJSON(type, bytes)
            #expect(String(decoding: encoded, as: UTF8.self) == String(parts[2]), "\(parts[0]) \(parts[1])")
            cases += 1
        }
        #expect(cases >= 360)
    }

    private func encodeJSON<M: ProtoMessage>(_ type: M.Type, _ bytes: [UInt8]) throws -> [UInt8] {
        ProtoJSON.encode(try M(serializedBytes: bytes))
    }

    private func hexBytes(_ hex: Substring) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }
}

/// A ProtoMessage written by hand, not generated: ProtoJSON has no descriptor for it.
private struct Foreign: ProtoMessage {
    static let protoMessageName = "example.Foreign"
    var namedApp: String? { nil }
    init() {}
    init(serializedBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) {}
    func serializedSize() -> Int { 2 }
    func serialize(into buffer: UnsafeMutableRawBufferPointer) { buffer.copyBytes(from: [0x08, 0x01]) }
    func appendSerialized(to buffer: inout [UInt8]) { buffer += [0x08, 0x01] }
}
