import AppStoreClient
import AppStoreDomain
import AppleFixtures
import GatewayFoundation
import HTTPServer
import ProtoCodec
import Testing

@testable import Services

/// Apple's answers to the other operations read through `AppleJSONShape`: null fields as absent ones, a field
/// of another type anywhere (nested ones included) making the answer DATA_LOSS, an empty body read as `{}`.
@Suite(.serialized) struct AppleAnswerShapeTests {
    private static func raw(_ text: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("content-type", "application/json")], body: Array(text.utf8))
    }

    private func handler<Request, Response>(
        _ operation: AppleOperation<Request, Response>, _ fixture: UpstreamFixture, _ mint: TransactionMint
    ) -> AppleOperationHandler<Request, Response> {
        AppleOperationHandler(
            operation, client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 10)
    }

    private func massStatus(_ body: String) async throws(GatewayError)
        -> GetStatusOfSubscriptionRenewalDateExtensionsResponse
    {
        let mint: TransactionMint
        let fixture: UpstreamFixture
        do {
            mint = try TransactionMint()
            fixture = try UpstreamFixture { _, _ in Self.raw(body) }
        } catch {
            throw .internalBug("fixture: \(error)", requestID: nil)
        }
        return try await handler(.getStatusOfSubscriptionRenewalDateExtensions, fixture, mint).handle(
            GetStatusOfSubscriptionRenewalDateExtensionsRequest(productId: "p", requestIdentifier: "r"),
            remaining: .seconds(5))
    }

    @Test func nullAndAbsentFieldsReadAsDefaultsAndAnEmptyBodyAsAnEmptyObject() async throws {
        let full = try await massStatus(
            #"{"requestIdentifier":"r","complete":true,"completeDate":1700000000000,"succeededCount":3,"#
                + #""failedCount":1}"#)
        #expect(full.requestIdentifier == "r" && full.complete && full.succeededCount == 3 && full.failedCount == 1)
        #expect(full.completeDate?.unixMilliseconds == 1_700_000_000_000)
        for body in ["", "{}", #"{"requestIdentifier":null,"complete":null,"completeDate":null,"failedCount":null}"#] {
            let status = try await massStatus(body)
            #expect(status.requestIdentifier == "" && !status.complete && status.completeDate == nil, "\(body)")
            #expect(status.succeededCount == 0 && status.failedCount == 0)
        }
    }

    @Test(arguments: [
        #"{"complete":"yes"}"#, #"{"succeededCount":1.5}"#, #"{"requestIdentifier":["r"]}"#, "[]", #"{"complete":true"#,
        #"{"a":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}",
    ])
    func aFieldOfAnotherTypeIsDataLoss(body: String) async {
        let error = await gatewayError { () async throws(GatewayError) in try await massStatus(body) }
        guard case .appleDataRejected(_, _, let problem)? = error else {
            Issue.record("expected DATA_LOSS for \(body.prefix(60)), got \(String(describing: error))")
            return
        }
        #expect(problem.contains("the mass extension status answer"))
    }

    @Test func aMistypedNestedFieldIsDataLoss() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in
            Self.raw(#"{"data":[{"subscriptionGroupIdentifier":"g1","lastTransactions":[{"status":"1"}]}]}"#)
        }
        let statuses = handler(.getAllSubscriptionStatuses, fixture, mint)
        let error = await gatewayError { () async throws(GatewayError) in
            try await statuses.handle(GetAllSubscriptionStatusesRequest(transactionId: "1000"), remaining: .seconds(5))
        }
        guard case .appleDataRejected(_, _, let problem)? = error else {
            Issue.record("expected DATA_LOSS, got \(String(describing: error))")
            return
        }
        #expect(problem.contains("the subscription statuses answer"))
    }
}
