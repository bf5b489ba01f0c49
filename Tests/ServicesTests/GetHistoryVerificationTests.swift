import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import Foundation
import GRPC
import GatewayFoundation
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// A page's transactions verified in parallel: page order kept, one bad JWS failing the call with its own
/// index, a page seen again answered without ECDSA, and the received bytes as the coalescing key.
@Suite(.serialized) struct GetHistoryVerificationTests {
    private func request(_ id: String = "2000000123") -> GetHistoryRequest {
        var request = GetHistoryRequest()
        request.transactionId = id
        return request
    }

    private func page(_ signed: [String]) -> TransactionHistoryPage {
        TransactionHistoryPage(
            revision: "r1", hasMore: false, bundleId: "com.example.app", appAppleId: 1234, environment: .production,
            signedTransactions: signed, appleRequestID: "req-1")
    }

    @Test(arguments: [1, 3, 8]) func aPageKeepsItsOrderAtAnyWidth(width: Int) async throws {
        let mint = try TransactionMint()
        let signed = try (0..<20).map { try mint.jws("t\($0)", signedDate: 1_700_000_000_000 + Int64($0)) }
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed) }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock(),
            verificationWidth: width)
        let transactions = try await handler.verify(page(signed), app: fixture.configuration.apps[0])
        #expect(transactions.map(\.transactionId) == (0..<20).map { "t\($0)" })
        let response = try await handler.handle(request(), remaining: .seconds(5))
        #expect(response.transactions.map(\.transactionId) == (0..<20).map { "t\($0)" })
        #expect(response.signedTransactions == signed)
    }

    @Test func oneBadTransactionFailsThePageWithItsIndex() async throws {
        let mint = try TransactionMint()
        let stranger = try AppStoreTestPKI(referenceTime: TransactionMint.referenceTime, rootName: "Stranger Root")
        var signed = try (0..<20).map { try mint.jws("t\($0)") }
        signed[13] = try mint.jws("t13", signer: stranger.signer)
        let forged = signed
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(forged) }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock(), verificationWidth: 4)
        do {
            _ = try await handler.handle(request(), remaining: .seconds(5))
            Issue.record("expected DATA_LOSS")
        } catch {
            #expect(error.rpcStatus.code == .dataLoss)
            #expect(error.rpcStatus.message.contains("signed transaction 13 of the page"))
            #expect(error.rpcStatus.message.contains("untrustedChain"))
        }
        // Another app's data at the first position: the same, with index 0.
        signed[0] = try mint.jws("t0", bundleId: "com.other.app")
        let other = signed
        fixture.fake.setScript { _, _ in AppleJSON.history(other) }
        do {
            _ = try await handler.handle(request(), remaining: .seconds(5))
            Issue.record("expected DATA_LOSS")
        } catch {
            #expect(error.rpcStatus.code == .dataLoss)
            #expect(error.rpcStatus.message.contains("signed transaction 0 of the page"))
        }
    }

    /// Workers claim transactions in page order and stop claiming once one has failed: with two bad ones, the
    /// earlier is the answer whichever worker met which first.
    @Test(arguments: [1, 2, 3, 8]) func theFirstFailureInPageOrderIsTheAnswerAtAnyWidth(width: Int) async throws {
        let mint = try TransactionMint()
        let stranger = try AppStoreTestPKI(referenceTime: TransactionMint.referenceTime, rootName: "Stranger Root")
        var signed = try (0..<20).map { try mint.jws("t\($0)") }
        signed[5] = try mint.jws("t5", signer: stranger.signer)
        signed[15] = try mint.jws("t15", bundleId: "com.other.app")
        let page = page(signed)
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history([]) }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock(),
            verificationWidth: width)
        for _ in 0..<3 {
            do {
                _ = try await handler.verify(page, app: fixture.configuration.apps[0])
                Issue.record("expected DATA_LOSS")
            } catch {
                #expect(error.rpcStatus.code == .dataLoss)
                #expect(error.rpcStatus.message.contains("signed transaction 5 of the page"))
            }
        }
    }

    @Test func aPageSeenAgainCostsNoECDSA() async throws {
        let mint = try TransactionMint()
        let signed = try (0..<20).map { try mint.jws("t\($0)") }
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed) }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock(), verificationWidth: 2)
        _ = try await handler.handle(request(), remaining: .seconds(5))
        #expect(mint.verifier.signatureCacheHits == 0)
        #expect(mint.verifier.signatureCacheMisses == 20)
        _ = try await handler.handle(request(), remaining: .seconds(5))
        #expect(mint.verifier.signatureCacheHits == 20)
        #expect(mint.verifier.signatureCacheMisses == 20)
    }

    /// The received bytes are the key: equal bytes share a flight, and a request serialized differently (a
    /// field repeated, as protobuf allows: the last one wins) is a flight of its own.
    @Test func theReceivedBytesKeyTheFlight() async throws {
        let mint = try TransactionMint()
        let signed = [try mint.jws("t1")]
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(300))
            return AppleJSON.history(signed)
        }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock())
        let canonical = request().serializedBytes()
        // Field 2 (transaction_id) sent twice: decodes to the same request.
        let repeated = [UInt8]([0x12, 0x01, 0x31]) + canonical
        let decoded = try GetHistoryRequest(serializedBytes: repeated)
        #expect(decoded.transactionId == "2000000123")
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<4 {
                group.addTask {
                    let bytes = index < 3 ? canonical : repeated
                    let request = try? GetHistoryRequest(serializedBytes: bytes)
                    guard let request else { return false }
                    return (try? await handler.handle(request, received: bytes, remaining: .seconds(5))) != nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == [true, true, true, true])
        #expect(fixture.fake.requests.count == 2)
    }
}
