import Foundation
import Testing

@testable import SignedData

/// The receipt utility: ids from receipts built and signed for the tests (see Fixtures/receipts/README.md), and
/// refusals of malformed receipts without a trap.
struct ReceiptTransactionIDTests {
    private func receipt(_ name: String) throws -> String {
        let url = Fixture.directory.appendingPathComponent("receipts/\(name).b64")
        return String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    @Test func theFirstIdOfTheFirstPurchaseIsFound() throws {
        #expect(try ReceiptTransactionID.fromAppReceipt(receipt("app-receipt-1703")) == "2000000123456789")
        #expect(try ReceiptTransactionID.fromAppReceipt(receipt("xcode-receipt-1705")) == "42")
        #expect(try ReceiptTransactionID.fromAppReceipt(receipt("app-receipt-no-purchase")) == nil)
    }

    @Test func malformedAppReceiptsAreRefused() throws {
        let valid = try receipt("app-receipt-1703")
        let cut = String(valid.prefix(valid.count / 2 / 4 * 4))
        for bad in ["", "!!!!", Data([0x30, 0x03, 0x02, 0x01, 0x01]).base64EncodedString(), cut] {
            #expect(throws: ReceiptTransactionID.Failure.self) { try ReceiptTransactionID.fromAppReceipt(bad) }
        }
    }

    @Test func derLengthsPastTheirContainerAreRefused() throws {
        // SET claiming 2^31 bytes; a 5-byte length; BER's indefinite length; a truncated header.
        let hostile: [[UInt8]] = [
            [0x31, 0x84, 0x7F, 0xFF, 0xFF, 0xFF], [0x31, 0x85, 1, 1, 1, 1, 1], [0x31, 0x80, 0, 0], [0x31],
        ]
        for bytes in hostile {
            var reader = DERReader(bytes[...])
            #expect(throws: ReceiptTransactionID.Failure.self) { _ = try reader.next() }
        }
        var integer = DERReader([0x02, 0x02, 0x06, 0xA7][...])
        #expect(try integer.integer() == 1703)
        var negative = DERReader([0x02, 0x01, 0xFF][...])
        #expect(try negative.integer() == -1)
    }

    @Test func transactionReceiptsFollowPurchaseInfo() throws {
        let inner = Data(#"{ "transaction-id" = "33"; "original-transaction-id" = "11"; }"#.utf8).base64EncodedString()
        let outer = Data(#"{ "signature" = "AAAA"; "purchase-info" = "\#(inner)"; }"#.utf8).base64EncodedString()
        #expect(try ReceiptTransactionID.fromTransactionReceipt(outer) == "33")
        let none = Data(#"{ "purchase-info"="x"; }"#.utf8).base64EncodedString()
        #expect(try ReceiptTransactionID.fromTransactionReceipt(none) == nil)
        #expect(ReceiptTransactionID.value(of: "k", in: #""k"   =   "a+b/=";"#) == "a+b/=")
        #expect(ReceiptTransactionID.value(of: "k", in: #""k" = "a b";"#) == nil)
        #expect(throws: ReceiptTransactionID.Failure.self) {
            try ReceiptTransactionID.fromTransactionReceipt(Data([0xFF, 0xFE]).base64EncodedString())
        }
    }
}
