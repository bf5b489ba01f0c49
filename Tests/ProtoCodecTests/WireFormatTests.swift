import ProtoCodec
import Testing

/// Byte-exact encodings and decoding of foreign or broken input.
///
/// The expected bytes were computed once with the reference implementation: protoc (grpcio-tools) generated
/// Python classes from proto/, then `message.SerializeToString(deterministic=True)` with python protobuf 7.36.2
/// (the venv of scripts/gen-protos.sh), printed as hex and pasted here.
@Suite struct WireFormatTests {
    @Test func healthResponseMatchesReference() {
        #expect(HealthCheckResponse(status: .serving).serializedBytes() == [0x08, 0x01])
    }

    @Test func errorInfoMatchesReferenceWithSortedMapKeys() throws {
        // Python: ErrorInfo(reason="RATE_LIMIT_EXCEEDED", domain="appstore.gateway",
        //   metadata={"environment": "Sandbox", "apple_error_code": "4290000"})
        let expected: [UInt8] = [
            0x0A, 0x13, 0x52, 0x41, 0x54, 0x45, 0x5F, 0x4C, 0x49, 0x4D, 0x49, 0x54, 0x5F, 0x45, 0x58, 0x43, 0x45,
            0x45, 0x44, 0x45, 0x44, 0x12, 0x10, 0x61, 0x70, 0x70, 0x73, 0x74, 0x6F, 0x72, 0x65, 0x2E, 0x67, 0x61,
            0x74, 0x65, 0x77, 0x61, 0x79, 0x1A, 0x1B, 0x0A, 0x10, 0x61, 0x70, 0x70, 0x6C, 0x65, 0x5F, 0x65, 0x72,
            0x72, 0x6F, 0x72, 0x5F, 0x63, 0x6F, 0x64, 0x65, 0x12, 0x07, 0x34, 0x32, 0x39, 0x30, 0x30, 0x30, 0x30,
            0x1A, 0x16, 0x0A, 0x0B, 0x65, 0x6E, 0x76, 0x69, 0x72, 0x6F, 0x6E, 0x6D, 0x65, 0x6E, 0x74, 0x12, 0x07,
            0x53, 0x61, 0x6E, 0x64, 0x62, 0x6F, 0x78,
        ]
        let info = ErrorInfo(
            reason: "RATE_LIMIT_EXCEEDED", domain: "appstore.gateway",
            metadata: ["environment": "Sandbox", "apple_error_code": "4290000"])
        // Dictionary order varies per process; the encoder sorts keys, so the bytes never do.
        #expect(info.serializedBytes() == expected)
        #expect(try ErrorInfo(serializedBytes: expected) == info)
    }

    @Test func transactionMatchesReference() throws {
        // Python: Transaction(transaction_id="2000000123", quantity=2, type=PRODUCT_TYPE_CONSUMABLE,
        //   is_upgraded=True, price_milliunits=-9223372036854775808, storefront="€ü",
        //   purchase_date=Timestamp(seconds=1698148900, nanos=123000000))
        let expected: [UInt8] = [
            0x0A, 0x0A, 0x32, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x31, 0x32, 0x33, 0x3A, 0x0B, 0x08, 0xA4, 0xE4,
            0xDE, 0xA9, 0x06, 0x10, 0xC0, 0xA9, 0xD3, 0x3A, 0x50, 0x02, 0x58, 0x03, 0x88, 0x01, 0x01, 0xAA, 0x01,
            0x05, 0xE2, 0x82, 0xAC, 0xC3, 0xBC, 0xC8, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
            0x01,
        ]
        let transaction = Transaction(
            transactionId: "2000000123", purchaseDate: ProtoTimestamp(unixMilliseconds: 1_698_148_900_123),
            quantity: 2, type: .consumable, isUpgraded: true, storefront: "€ü", priceMilliunits: .min)
        #expect(transaction.serializedBytes() == expected)
        #expect(try Transaction(serializedBytes: expected) == transaction)
    }

    @Test func oneofMatchesReference() throws {
        // Python: VerifyJWSResponse(status=VERIFICATION_STATUS_OK, kind=JWS_KIND_RENEWAL_INFO,
        //   renewal_info=RenewalInfo(eligible_win_back_offer_ids=["a", "b"]))
        let expected: [UInt8] = [0x08, 0x01, 0x18, 0x02, 0x32, 0x08, 0x9A, 0x01, 0x01, 0x61, 0x9A, 0x01, 0x01, 0x62]
        let response = VerifyJWSResponse(
            status: .ok, kind: .renewalInfo, payload: .renewalInfo(RenewalInfo(eligibleWinBackOfferIds: ["a", "b"])))
        #expect(response.serializedBytes() == expected)
        #expect(try VerifyJWSResponse(serializedBytes: expected) == response)
    }

    @Test func unknownFieldsAreSkipped() throws {
        // HealthCheckResponse{status=SERVING} followed by fields a newer peer might send:
        // field 1000 varint 7, field 2 length-delimited "hi", field 3 fixed64, field 4 fixed32.
        let bytes: [UInt8] = [
            0x08, 0x01, 0xC0, 0x3E, 0x07, 0x12, 0x02, 0x68, 0x69,
            0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4,
        ]
        #expect(try HealthCheckResponse(serializedBytes: bytes) == HealthCheckResponse(status: .serving))
        // An enum number this release does not know survives decoding.
        #expect(try HealthCheckResponse(serializedBytes: [0x08, 0x09]).status == .unrecognized(9))
    }

    @Test(arguments: [
        [0x0A, 0x05, 0x61] as [UInt8],  // string length past the end
        [0x0A],  // tag without its length
        [0x08],  // tag without its varint
        [0x0F, 0x00],  // wire type 7 does not exist
        [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // varint longer than 10 bytes
        [0x3A, 0x02, 0x08],  // sub-message shorter than its length
    ])
    func malformedBytesThrow(bytes: [UInt8]) {
        #expect(throws: ProtoDecodingError.malformed) { try Transaction(serializedBytes: bytes) }
    }
}
