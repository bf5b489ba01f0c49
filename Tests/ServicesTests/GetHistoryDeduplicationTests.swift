import AppStoreClient
import AppleFixtures
import GatewayFoundation
import ProtoCodec
import Testing

@testable import Services

/// One entry per `transactionId` in an answer, the JWS and its decoding always from the same signed
/// transaction: within one page as across pages, a later copy replaces an earlier one only when it is not older.
@Suite(.serialized) struct GetHistoryDeduplicationTests {
    private func answer(_ signed: [String], _ mint: TransactionMint) async throws -> GetHistoryResponse {
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed, revision: "r1", hasMore: false) }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock())
        return try await handler.handle(GetHistoryRequest(transactionId: "2000000123"), remaining: .seconds(5))
    }

    @Test func anOlderCopyLaterInThePageKeepsTheNewerOne() async throws {
        let mint = try TransactionMint()
        let newer = try mint.jws("t1", signedDate: 1_700_000_500_000, ["isUpgraded": true])
        let older = try mint.jws("t1", signedDate: 1_700_000_100_000)
        let other = try mint.jws("t2")
        let response = try await answer([newer, other, older], mint)
        #expect(response.signedTransactions == [newer, other])
        #expect(response.transactions.map(\.transactionId) == ["t1", "t2"])
        #expect(response.transactions[0].signedDate?.unixMilliseconds == 1_700_000_500_000)
        #expect(response.transactions[0].isUpgraded)
    }

    @Test func aNewerCopyReplacesTheEarlierInItsPlace() async throws {
        let mint = try TransactionMint()
        let older = try mint.jws("t1", signedDate: 1_700_000_100_000)
        let other = try mint.jws("t2")
        let newer = try mint.jws("t1", signedDate: 1_700_000_500_000, ["isUpgraded": true])
        let response = try await answer([older, other, newer], mint)
        #expect(response.signedTransactions == [newer, other])
        #expect(response.transactions.map(\.transactionId) == ["t1", "t2"])
        #expect(response.transactions[0].isUpgraded)
    }

    @Test func transactionsWithoutAnIdAreAllKept() async throws {
        let mint = try TransactionMint()
        let first = try mint.jws("")
        let second = try mint.jws("", signedDate: 1_700_000_200_000)
        let response = try await answer([first, second], mint)
        #expect(response.signedTransactions == [first, second])
        #expect(response.transactions.count == 2)
    }
}
