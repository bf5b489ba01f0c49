import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

@testable import Simulator

@Suite struct AuthenticationTests {
    static func forge(header: String, claims: String, key: ECPrivateKey = SimulatorFixture.appKey) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = (try? key.signature(for: Array(input.utf8))) ?? []
        return "Bearer " + input + "." + Base64URL.encode(signature)
    }

    static func claims(
        _ fixture: SimulatorFixture, iss: String? = nil, iat: Int64? = nil, exp: Int64? = nil,
        aud: String = "appstoreconnect-v1",
        bid: String? = nil, omitIat: Bool = false
    ) -> String {
        let now = fixture.clock.wallNow().secondsSince1970
        let issuedAt = omitIat ? "" : "\"iat\":\(iat ?? now),"
        return "{\"iss\":\"\(iss ?? fixture.app.issuerId)\",\(issuedAt)\"exp\":\(exp ?? now + 300),"
            + "\"aud\":\"\(aud)\",\"bid\":\"\(bid ?? fixture.app.bundleId)\"}"
    }

    static let goodHeader = "{\"alg\":\"ES256\",\"kid\":\"ABCDEFGHIJ\",\"typ\":\"JWT\"}"

    static func status(_ fixture: SimulatorFixture, _ authorization: String?) async -> HTTPResponse {
        let id = fixture.busiestCustomer.transactions[0].transactionId
        var headers: [(name: String, value: String)] = []
        if let authorization { headers.append(("authorization", authorization)) }
        return await fixture.simulator.handle(
            HTTPRequest(method: "GET", target: "/inApps/v1/transactions/\(id)", headers: headers))
    }

    @Test func validTokensAreAccepted() async {
        let fixture = SimulatorFixture()
        #expect(await Self.status(fixture, "Bearer \(fixture.token())").status == 200)
        #expect(
            await Self.status(fixture, Self.forge(header: Self.goodHeader, claims: Self.claims(fixture))).status == 200)
        // Apple's Python client omits iat; Apple tolerates it.
        #expect(
            await Self.status(fixture, Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, omitIat: true)))
                .status == 200)
        #expect(await Self.status(fixture, "Bearer \(fixture.token(lifetime: .seconds(3600)))").status == 200)
    }

    @Test func badTokensAre401WithoutJSON() async {
        let fixture = SimulatorFixture()
        let now = fixture.clock.wallNow().secondsSince1970
        let other = (try? ECPrivateKey(generatingOn: .p256)) ?? SimulatorFixture.otherAppKey
        let cases: [(String, String?)] = [
            ("missing", nil),
            ("not bearer", "Basic abc"),
            ("garbage", "Bearer a.b"),
            ("bad signature", Self.forge(header: Self.goodHeader, claims: Self.claims(fixture), key: other)),
            (
                "unknown kid",
                Self.forge(
                    header: "{\"alg\":\"ES256\",\"kid\":\"ZZZZZZZZZZ\",\"typ\":\"JWT\"}", claims: Self.claims(fixture))
            ),
            (
                "other app's kid",
                Self.forge(
                    header: "{\"alg\":\"ES256\",\"kid\":\"KLMNOPQRST\",\"typ\":\"JWT\"}", claims: Self.claims(fixture))
            ),
            ("wrong bid", Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, bid: "com.example.other"))),
            (
                "wrong iss",
                Self.forge(
                    header: Self.goodHeader, claims: Self.claims(fixture, iss: "00000000-0000-0000-0000-000000000000"))
            ),
            ("wrong aud", Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, aud: "appstoreconnect-v2"))),
            (
                "expired",
                Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, iat: now - 600, exp: now - 1))
            ),
            (
                "lifetime over 60 min",
                Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, iat: now, exp: now + 3601))
            ),
            (
                "iat in the future",
                Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, iat: now + 600, exp: now + 900))
            ),
            (
                "no iat, exp too far",
                Self.forge(header: Self.goodHeader, claims: Self.claims(fixture, exp: now + 7200, omitIat: true))
            ),
            (
                "alg none",
                "Bearer " + Base64URL.encode(Array("{\"alg\":\"none\",\"kid\":\"ABCDEFGHIJ\",\"typ\":\"JWT\"}".utf8))
                    + "."
                    + Base64URL.encode(Array(Self.claims(fixture).utf8)) + "."
            ),
            (
                "alg HS256",
                Self.forge(
                    header: "{\"alg\":\"HS256\",\"kid\":\"ABCDEFGHIJ\",\"typ\":\"JWT\"}", claims: Self.claims(fixture))
            ),
            (
                "typ missing",
                Self.forge(header: "{\"alg\":\"ES256\",\"kid\":\"ABCDEFGHIJ\"}", claims: Self.claims(fixture))
            ),
        ]
        for (name, authorization) in cases {
            let response = await Self.status(fixture, authorization)
            #expect(response.status == 401, "\(name)")
            #expect(SimulatorFixture.object(response)["errorCode"] == nil, "\(name)")
        }
        // A token minted by AppStoreDomain's AppStoreJWT is refused once the clock passes exp.
        let token = fixture.token(lifetime: .seconds(60))
        fixture.clock.advance(by: .seconds(61))
        #expect(await Self.status(fixture, "Bearer \(token)").status == 401)
    }

    @Test func eachKeyOnlyReachesItsOwnApp() async {
        let fixture = SimulatorFixture()
        let id = fixture.busiestCustomer.transactions[0].transactionId
        let response = await fixture.send(
            "GET", "/inApps/v1/transactions/\(id)", authorization: "Bearer \(fixture.token(for: fixture.otherApp))")
        #expect(response.status == 404)
        #expect(SimulatorFixture.object(response)["errorCode"] as? Int == 4_040_010)
    }

    @Test func unknownPathsAndMethodsAre404WithEmptyBody() async {
        let fixture = SimulatorFixture()
        for (method, target) in [
            ("GET", "/inApps/v3/history/1"), ("GET", "/"), ("DELETE", "/inApps/v1/transactions/1"),
            ("POST", "/inApps/v2/history/1"), ("GET", "/inApps/v1/messaging/nothing"),
            ("GET", "/inApps/v1/messaging/image/a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"),
            ("GET", "/inApps/v1/notifications/history"),
        ] {
            let response = await fixture.simulator.handle(HTTPRequest(method: method, target: target))
            #expect(response.status == 404, "\(method) \(target)")
            #expect(response.body.isEmpty)
        }
    }
}
