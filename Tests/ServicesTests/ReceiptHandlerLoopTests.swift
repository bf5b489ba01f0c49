import ProtoCodec
import Testing

@testable import Services

/// Which receipts are parsed on the call's loop and which off it.
@Suite struct ReceiptHandlerLoopTests {
    @Test func onlyLargeReceiptsLeaveTheLoop() {
        var small = ExtractTransactionIdFromReceiptRequest()
        small.receipt = .appReceipt(String(repeating: "A", count: ReceiptHandler.loopReceiptCharacters))
        #expect(!ReceiptHandler.holdsTheLoop(small))
        var large = ExtractTransactionIdFromReceiptRequest()
        large.receipt = .transactionReceipt(String(repeating: "A", count: ReceiptHandler.loopReceiptCharacters + 1))
        #expect(ReceiptHandler.holdsTheLoop(large))
        #expect(!ReceiptHandler.holdsTheLoop(ExtractTransactionIdFromReceiptRequest()))
    }
}
