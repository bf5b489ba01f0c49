import AppStoreClient
import AppStoreDomain
import AppleFixtures
import HTTPServer
import Testing

/// Apple's history answers read by the client: every field as sent, absent or null ones as defaults, and a body
/// that is not the documented shape (hostile or broken) refused as DATA_LOSS, never trapped on.
@Suite(.serialized) struct HistoryAnswerDecodingTests {
    private static func raw(_ text: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("content-type", "application/json")], body: Array(text.utf8))
    }

    private func history(_ body: String) async -> Result<TransactionHistoryPage, GatewayError> {
        do {
            let fixture = try UpstreamFixture { _, _ in Self.raw(body) }
            let page = try await fixture.client.transactionHistory(
                transactionID: "2000000123", query: .init(), app: fixture.app(), deadline: nil)
            return .success(page)
        } catch let error as GatewayError {
            return .failure(error)
        } catch {
            return .failure(.internalBug("fixture: \(error)", requestID: nil))
        }
    }

    private func notifications(_ body: String) async -> Result<NotificationHistoryPage, GatewayError> {
        do {
            let fixture = try UpstreamFixture { _, _ in Self.raw(body) }
            let page = try await fixture.client.notificationHistory(
                body: NotificationHistoryRequestBody(startDate: 1, endDate: 2), paginationToken: nil,
                app: fixture.app(), deadline: nil)
            return .success(page)
        } catch let error as GatewayError {
            return .failure(error)
        } catch {
            return .failure(.internalBug("fixture: \(error)", requestID: nil))
        }
    }

    @Test func aHistoryAnswerIsReadFieldByField() async throws {
        let page = try await history(
            #"{"revision":"rev-2","hasMore":true,"bundleId":"com.example.app","appAppleId":1234,"#
                + #""environment":"Sandbox","signedTransactions":["a.b.c","d.e.f"],"unknownField":{"x":[1]}}"#
        ).get()
        #expect(page.revision == "rev-2")
        #expect(page.hasMore)
        #expect(page.bundleId == "com.example.app")
        #expect(page.appAppleId == 1234)
        #expect(page.environmentName == "Sandbox")
        #expect(page.environment == .production, "the environment that answered")
        #expect(page.signedTransactions == ["a.b.c", "d.e.f"])
    }

    @Test func absentAndNullHistoryFieldsReadAsDefaults() async throws {
        for body in ["{}", #"{"revision":null,"hasMore":null,"appAppleId":null,"signedTransactions":null}"#] {
            let page = try await history(body).get()
            #expect(page.revision == "" && !page.hasMore && page.bundleId == "" && page.appAppleId == 0)
            #expect(page.signedTransactions.isEmpty && page.environmentName == "")
        }
    }

    @Test(arguments: [
        "", "not json", "[]", #"{"revision":"r""#, #"{"revision":"r","signedTransactions":["a.b.c""#,
        #"{"hasMore":"yes"}"#, #"{"revision":7}"#, #"{"appAppleId":1.5}"#, #"{"appAppleId":"1234"}"#,
        #"{"signedTransactions":"a.b.c"}"#, #"{"signedTransactions":["a.b.c",1]}"#,
        #"{"signedTransactions":[{"jws":"a.b.c"}]}"#,
        #"{"bundleId":"#
            + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000) + "}",
    ])
    func aHistoryAnswerOfAnotherShapeIsDataLoss(body: String) async {
        guard case .failure(.appleDataRejected(_, _, let problem)) = await history(body) else {
            Issue.record("expected DATA_LOSS for \(body.prefix(60))")
            return
        }
        #expect(problem.contains("is not a HistoryResponse JSON object"))
    }

    @Test func aNotificationHistoryAnswerIsReadFieldByField() async throws {
        let page = try await notifications(
            #"{"paginationToken":"p-2","hasMore":true,"notificationHistory":["#
                + #"{"signedPayload":"a.b.c","sendAttempts":[{"attemptDate":1700000000000,"sendAttemptResult":"#
                + #""SUCCESS"},{"attemptDate":null}]},{"signedPayload":"d.e.f"}]}"#
        ).get()
        #expect(page.paginationToken == "p-2")
        #expect(page.hasMore)
        #expect(
            page.items == [
                .init(
                    signedPayload: "a.b.c",
                    sendAttempts: [
                        .init(attemptDate: 1_700_000_000_000, result: "SUCCESS"), .init(attemptDate: 0, result: ""),
                    ]),
                .init(signedPayload: "d.e.f", sendAttempts: []),
            ])
        let empty = try await notifications("{}").get()
        #expect(empty.paginationToken == "" && !empty.hasMore && empty.items.isEmpty)
    }

    @Test(arguments: [
        "[]", #"{"hasMore":1}"#, #"{"notificationHistory":{}}"#, #"{"notificationHistory":["a.b.c"]}"#,
        #"{"notificationHistory":[{"signedPayload":1}]}"#,
        #"{"notificationHistory":[{"sendAttempts":[{"attemptDate":"x"}]}]}"#,
        #"{"notificationHistory":[{"sendAttempts":[{"sendAttemptResult":false}]}]}"#, #"{"paginationToken":"p""#,
    ])
    func aNotificationHistoryAnswerOfAnotherShapeIsDataLoss(body: String) async {
        guard case .failure(.appleDataRejected(_, _, let problem)) = await notifications(body) else {
            Issue.record("expected DATA_LOSS for \(body)")
            return
        }
        #expect(problem.contains("is not a NotificationHistoryResponse JSON object"))
    }
}
