// Foundation is imported on purpose: the generated names must not clash with Foundation's (Notification,
// SortOrder, ...) in a module that imports both.
import Foundation
import ProtoCodec
import Testing

/// Encodes then decodes `message` and checks every field came back.
private func roundTrip<M: ProtoMessage>(_ message: M) throws -> M {
    let bytes = message.serializedBytes()
    #expect(bytes.count == message.serializedSize())
    return try M(serializedBytes: bytes)
}

@Suite struct RoundTripTests {
    /// A transaction with every scalar kind the gateway uses, including extremes and non-ASCII text.
    static let transaction = Transaction.with {
        $0.transactionId = "2000000123456789"
        $0.originalTransactionId = "1000000000000001"
        $0.bundleId = "com.example.app"
        $0.productId = "com.example.monthly"
        $0.storefront = "Zürich ✓ 日本 🎉"
        $0.purchaseDate = ProtoTimestamp(unixMilliseconds: 1_698_148_900_123)
        $0.expiresDate = ProtoTimestamp(unixMilliseconds: -1)
        $0.quantity = Int32.max
        $0.type = .autoRenewable
        $0.inAppOwnershipType = .familyShared
        $0.revocationReason = .appIssue
        $0.isUpgraded = true
        $0.offerType = .unrecognized(42)
        $0.environment = .localTesting
        $0.priceMilliunits = Int64.min
        $0.revocationPercentage = Int32.min
        $0.commitmentInfo = CommitmentInfo(
            billingPeriodNumber: 3, commitmentExpiresDate: ProtoTimestamp(unixMilliseconds: 0),
            commitmentPriceMilliunits: Int64.max, totalBillingPeriods: 12)
        $0.rawJson = #"{"transactionId":"2000000123456789","price":-1}"#
    }

    @Test func transactionWithEveryScalarKind() throws {
        let decoded = try roundTrip(Self.transaction)
        #expect(decoded == Self.transaction)
        #expect(decoded.storefront == "Zürich ✓ 日本 🎉")
        #expect(decoded.priceMilliunits == Int64.min)
        #expect(decoded.commitmentInfo?.commitmentPriceMilliunits == Int64.max)
        #expect(decoded.offerType == .unrecognized(42))
        #expect(decoded.offerType.rawValue == 42)
        #expect(decoded.expiresDate?.unixMilliseconds == -1)
        #expect(decoded.signedDate == nil)
    }

    /// An answer bigger than every packing chunk together (the 1 KiB stack region, then 2 KiB doubling to 64 KiB),
    /// with strings that straddle chunk ends, empty strings among them, and nested messages: every byte comes back.
    @Test func anAnswerLargerThanThePackingChunksRoundTrips() throws {
        let big = String(repeating: "x", count: 70_000)
        let response = GetHistoryResponse.with {
            $0.bundleId = "com.example.app"
            $0.revision = ""
            $0.hasMore = true
            $0.signedTransactions =
                (0..<300).map { index in
                    index % 7 == 0
                        ? "" : String(repeating: Character(UnicodeScalar(UInt8(97 + index % 26))), count: index * 13)
                } + [big]
            $0.transactions = (0..<40).map { index in
                var transaction = Self.transaction
                transaction.transactionId = String(index)
                transaction.storefront = index % 2 == 0 ? "" : transaction.storefront
                return transaction
            }
        }
        let decoded = try roundTrip(response)
        #expect(decoded == response)
        #expect(decoded.signedTransactions.last?.utf8.count == 70_000)
        #expect(decoded.signedTransactions.filter(\.isEmpty).count == 43)
    }

    /// Strings of lengths around the arena's stack region and its first heap chunk (where each ends depends on
    /// the C structs laid out before them, so the lengths step across both ends) come back whole.
    @Test(arguments: Array(stride(from: 300, through: 1_100, by: 37)) + [1_500, 2_000, 2_100, 4_000, 9_000])
    func stringsAroundTheArenasRegionEnds(length: Int) throws {
        let message = VerifyJWSResponse(
            message: String(repeating: "m", count: length), payload: .transaction(Self.transaction))
        let decoded = try roundTrip(message)
        #expect(decoded == message)
    }

    @Test func repeatedStringsEnumsAndMessages() throws {
        let request = GetHistoryRequest.with {
            $0.transactionId = "1"
            $0.productIds = ["a", "", "ü"]
            $0.productTypes = [.consumable, .unrecognized(-3), .nonRenewable]
            $0.sort = .descending
            $0.revoked = .excludeRevoked
            $0.startDate = ProtoTimestamp(unixMilliseconds: 1)
        }
        let decodedRequest = try roundTrip(request)
        #expect(decodedRequest == request)
        #expect(decodedRequest.productTypes[1] == .unrecognized(-3))

        let response = GetHistoryResponse.with {
            $0.appAppleId = 1_234_567_890
            $0.signedTransactions = ["x.y.z", "a.b.c"]
            $0.transactions = [Self.transaction, Transaction(transactionId: "2")]
            $0.latestReceiptInfo = [LegacyReceiptInfo(isTrialPeriod: "false", quantity: "1")]
            $0.hasMore = true
            $0.pagesFetched = 2
        }
        #expect(try roundTrip(response) == response)
    }

    @Test func mapAndBytes() throws {
        let info = ErrorInfo(
            reason: "RATE_LIMIT_EXCEEDED", domain: "appstore.gateway",
            metadata: ["app": "demo", "apple_error_code": "4290000", "": "empty key", "ünïcode": ""])
        let any = ProtoAny(
            typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: info.serializedBytes() + [0, 255])
        let status = GoogleRPCStatus(code: 8, message: "slow down", details: [any, ProtoAny()])
        let decoded = try roundTrip(status)
        #expect(decoded == status)
        #expect(decoded.details[0].value.suffix(2) == [0, 255])
        #expect(try ErrorInfo(serializedBytes: Array(decoded.details[0].value.dropLast(2))) == info)
    }

    @Test(arguments: [
        VerifyJWSResponse.Payload.transaction(transaction),
        .renewalInfo(RenewalInfo(autoRenewStatus: .off, eligibleWinBackOfferIds: ["w1", "w2"])),
        .notification(
            AppStoreNotification.with {
                $0.notificationType = .externalPurchaseToken
                $0.subtype = .activeTokenReminder
                $0.notificationTypeRaw = "EXTERNAL_PURCHASE_TOKEN"
                $0.data = NotificationData(status: .billingGracePeriod, transaction: transaction)
                $0.summary = NotificationSummary(storefrontCountryCodes: ["USA", "FRA"], failedCount: -1)
            }),
        .appTransaction(AppTransaction(appAppleId: 1, originalPlatform: .visionOS)),
    ])
    func oneofCases(payload: VerifyJWSResponse.Payload) throws {
        let response = VerifyJWSResponse(
            status: .ok, kind: .transaction, signedDate: ProtoTimestamp(unixMilliseconds: 5), payload: payload)
        let decoded = try roundTrip(response)
        #expect(decoded == response)
        #expect(decoded.payload == payload)
    }

    @Test func emptyOneofAndEmptyMessages() throws {
        #expect(VerifyJWSResponse().serializedBytes().isEmpty)
        #expect(Transaction().serializedSize() == 0)
        #expect(try VerifyJWSResponse(serializedBytes: []) == VerifyJWSResponse())
        #expect(try VerifyJWSResponse(serializedBytes: []).payload == nil)
        // An explicitly set but empty sub-message is present on the wire (tag + zero length) and after decoding.
        let withEmpty = VerifyJWSResponse(payload: .transaction(Transaction()))
        #expect(withEmpty.serializedBytes() == [0x2A, 0x00])
        #expect(try roundTrip(withEmpty).payload == .transaction(Transaction()))
    }

    @Test func appendSerializedAppendsAfterExistingBytes() throws {
        var buffer: [UInt8] = [0, 0, 0, 0, 0]
        let message = HealthCheckResponse(status: .serving)
        message.appendSerialized(to: &buffer)
        #expect(buffer == [0, 0, 0, 0, 0, 0x08, 0x01])
        var long = [UInt8](repeating: 7, count: 300)
        message.appendSerialized(to: &long)
        #expect(long == [UInt8](repeating: 7, count: 300) + [0x08, 0x01])

        let size = message.serializedSize()
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        defer { raw.deallocate() }
        message.serialize(into: raw)
        #expect(Array(raw) == [0x08, 0x01])
    }
}
