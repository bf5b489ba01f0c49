import Foundation
import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

@Suite struct TransactionHistoryQueryTests {
    @Test func emptyQueryIsEmpty() {
        #expect(TransactionHistoryQuery().queryString == "")
        #expect(TransactionHistoryQuery(revision: "").revision == nil)
    }

    @Test func everyFieldInFixedOrderWithRepeatedKeys() {
        let query = TransactionHistoryQuery(
            revision: "rev1", startDate: 1_700_000_000_000, endDate: 1_750_000_000_000,
            productIds: ["com.a.gold", "com.a.silver"], productTypes: [.consumable, .autoRenewable],
            sort: .descending, subscriptionGroupIdentifiers: ["g1", "g2"], inAppOwnershipType: .familyShared,
            revoked: false)
        #expect(
            query.queryString
                == "revision=rev1&startDate=1700000000000&endDate=1750000000000"
                + "&productId=com.a.gold&productId=com.a.silver&productType=CONSUMABLE&productType=AUTO_RENEWABLE"
                + "&sort=DESCENDING&subscriptionGroupIdentifier=g1&subscriptionGroupIdentifier=g2"
                + "&inAppOwnershipType=FAMILY_SHARED&revoked=false")
    }

    @Test func booleansAreLowercaseAndUnsetIsOmitted() {
        #expect(TransactionHistoryQuery(revoked: true).queryString == "revoked=true")
        #expect(TransactionHistoryQuery(sort: .ascending, revoked: nil).queryString == "sort=ASCENDING")
        #expect(
            TransactionHistoryQuery(productTypes: [.nonConsumable, .nonRenewable], inAppOwnershipType: .purchased)
                .queryString == "productType=NON_CONSUMABLE&productType=NON_RENEWABLE&inAppOwnershipType=PURCHASED")
    }

    @Test func valuesArePercentEncoded() {
        let query = TransactionHistoryQuery(revision: "a+b/c=d&e f~g_h.i-j", productIds: ["é"])
        #expect(query.queryString == "revision=a%2Bb%2Fc%3Dd%26e%20f~g_h.i-j&productId=%C3%A9")
    }

    @Test func nextPageKeepsFilters() {
        let first = TransactionHistoryQuery(productIds: ["p"], sort: .descending)
        let next = first.nextPage(revision: "r2")
        #expect(next.queryString == "revision=r2&productId=p&sort=DESCENDING")
    }

    @Test func validationNamesTheField() throws {
        try TransactionHistoryQuery(startDate: 1, endDate: 2).validate()
        #expect(throws: GatewayError.invalidArgument(field: "endDate", problem: "must be later than startDate")) {
            try TransactionHistoryQuery(startDate: 2, endDate: 2).validate()
        }
        #expect(throws: GatewayError.self) { try TransactionHistoryQuery(startDate: -1).validate() }
        #expect(throws: GatewayError.self) { try TransactionHistoryQuery(productIds: [""]).validate() }
        #expect(throws: GatewayError.self) {
            try TransactionHistoryQuery(subscriptionGroupIdentifiers: [""]).validate()
        }
    }
}

@Suite struct NotificationHistoryRequestBodyTests {
    let now = WallTime(millisecondsSince1970: 1_750_000_000_000)
    let day: Int64 = 86_400_000

    func field(of body: NotificationHistoryRequestBody, env: AppleEnvironment = .production) -> String? {
        do {
            try body.validate(now: now, environment: env)
            return nil
        } catch {
            if case .invalidArgument(let field, _) = error { return field }
            return "unexpected"
        }
    }

    @Test func encodesInFixedOrderOmittingUnset() throws {
        let body = NotificationHistoryRequestBody(
            startDate: 1, endDate: 2, notificationType: "SUBSCRIBED", notificationSubtype: "INITIAL_BUY",
            onlyFailures: true)
        #expect(
            body.json
                == #"{"startDate":1,"endDate":2,"notificationType":"SUBSCRIBED","notificationSubtype":"INITIAL_BUY","onlyFailures":true}"#
        )
        let minimal = NotificationHistoryRequestBody(
            startDate: 5, endDate: 9, notificationType: "", transactionId: "tx\"1")
        #expect(minimal.json == #"{"startDate":5,"endDate":9,"transactionId":"tx\"1"}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(minimal.json.utf8)) as? [String: Any]
        #expect(parsed?["transactionId"] as? String == "tx\"1")
    }

    @Test func validRequestsPass() {
        let start = now.millisecondsSince1970 - 179 * day
        #expect(field(of: .init(startDate: start, endDate: now.millisecondsSince1970)) == nil)
        #expect(field(of: .init(startDate: start, endDate: start + 1, transactionId: "1")) == nil)
        #expect(field(of: .init(startDate: start, endDate: start + 1, notificationType: "DID_RENEW")) == nil)
    }

    @Test func endMustFollowStart() {
        let start = now.millisecondsSince1970 - day
        #expect(field(of: .init(startDate: start, endDate: start)) == "endDate")
        #expect(field(of: .init(startDate: start, endDate: start - 1)) == "endDate")
    }

    @Test func retentionWindowDependsOnEnvironment() {
        let edge = now.millisecondsSince1970 - 180 * day
        #expect(field(of: .init(startDate: edge, endDate: edge + 1)) == nil)
        #expect(field(of: .init(startDate: edge - 1, endDate: edge + 1)) == "startDate")
        let sandboxEdge = now.millisecondsSince1970 - 30 * day
        #expect(field(of: .init(startDate: sandboxEdge, endDate: sandboxEdge + 1), env: .sandbox) == nil)
        #expect(field(of: .init(startDate: sandboxEdge - 1, endDate: sandboxEdge + 1), env: .sandbox) == "startDate")
    }

    @Test func filtersMustBeConsistent() {
        let start = now.millisecondsSince1970 - day
        #expect(
            field(of: .init(startDate: start, endDate: start + 1, notificationType: "REFUND", transactionId: "1"))
                == "transactionId")
        #expect(
            field(of: .init(startDate: start, endDate: start + 1, notificationSubtype: "UPGRADE"))
                == "notificationSubtype")
        #expect(
            field(of: .init(startDate: start, endDate: start + 1, notificationType: "did renew"))
                == "notificationType")
    }
}
