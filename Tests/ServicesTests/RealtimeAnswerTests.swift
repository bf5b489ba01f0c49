import AppStoreDomain
import Configuration
import Foundation
import ProtoCodec
import Testing

@testable import Services

/// Apple's RealtimeResponseBody as the gateway writes it, the answer contract, the configured defaults and the
/// broker's outcomes.
@Suite struct RealtimeAnswerTests {
    let message = "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"

    func parsed(_ body: RealtimeResponseBody) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body.json)) as? [String: Any])
    }

    @Test func noChoiceIsAnEmptyObject() {
        #expect(RealtimeResponseBody.none.text == "{}")
    }

    @Test func eachChoiceHasApplesMembers() throws {
        #expect(
            RealtimeResponseBody.message(messageIdentifier: message).text
                == #"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#)
        let product = try parsed(
            .alternateProduct(messageIdentifier: message, productId: "com.example.yearly", billingPlanType: "MONTHLY"))
        #expect(product.keys.sorted() == ["alternateProduct"])
        #expect(
            (product["alternateProduct"] as? [String: String])
                == ["messageIdentifier": message, "productId": "com.example.yearly", "billingPlanType": "MONTHLY"])
        let plain = try parsed(.alternateProduct(messageIdentifier: message, productId: "p", billingPlanType: ""))
        #expect((plain["alternateProduct"] as? [String: String])?["billingPlanType"] == nil)
        let v2 = try parsed(.promotionalOfferV2(messageIdentifier: message, signature: "x.y.z"))
        #expect(
            (v2["promotionalOffer"] as? [String: String])
                == ["messageIdentifier": message, "promotionalOfferSignatureV2": "x.y.z"])
        let v1 = try parsed(
            .promotionalOfferV1(
                messageIdentifier: message,
                signature: .init(
                    encodedSignature: "c2ln", productId: "p", nonce: "n", timestamp: 1_698_148_900_000, keyId: "K",
                    offerIdentifier: "o", appAccountToken: "")))
        let offer = try #require(v1["promotionalOffer"] as? [String: Any])
        let signature = try #require(offer["promotionalOfferSignatureV1"] as? [String: Any])
        #expect(signature["timestamp"] as? Int64 == 1_698_148_900_000)
        #expect(signature["appAccountToken"] == nil)
        #expect(
            Set(signature.keys) == ["encodedSignature", "productId", "nonce", "timestamp", "keyId", "offerIdentifier"])
    }

    @Test func anAdvancedCommerceAnswerHasApplesMembers() throws {
        let body = try parsed(.advancedCommerceInfo(messageIdentifier: message, advancedCommerceData: "eyJ9"))
        #expect(body.keys.sorted() == ["advancedCommerceInfo"])
        #expect(
            (body["advancedCommerceInfo"] as? [String: String])
                == ["messageIdentifier": message, "advancedCommerceData": "eyJ9"])
    }

    func modify(_ changes: Int = 1) -> AdvancedCommerceSubscriptionModify {
        let change = AdvancedCommerceModifyChangeItem(
            currentSku: "BASIC", sku: "PREMIUM", description: "Premium", displayName: "Premium", price: 4990,
            reason: "UPGRADE", effective: "IMMEDIATELY")
        return AdvancedCommerceSubscriptionModify(changeItems: Array(repeating: change, count: changes))
    }

    func advancedCommerce(_ modify: AdvancedCommerceSubscriptionModify?, id: String? = nil) -> RealtimeAnswer {
        RealtimeAnswer(
            requestIdentifier: "r",
            choice: .advancedCommerceInfo(
                RealtimeAdvancedCommerceInfo(messageIdentifier: id ?? message, modifySubscription: modify)))
    }

    @Test func anAdvancedCommerceAnswerCarriesOneChangeOfTheSubscription() {
        // The transaction and the reference id may be left empty: the gateway fills them in.
        #expect(RealtimeAnswering.problem(advancedCommerce(modify())) == nil)
        let field = "advanced_commerce_info"
        #expect(RealtimeAnswering.problem(advancedCommerce(nil))?.contains("\(field).modify_subscription") == true)
        #expect(
            RealtimeAnswering.problem(advancedCommerce(modify(), id: "nope"))?.contains("\(field).message_identifier")
                == true)
        for wrong in [modify(0), modify(2)] {
            #expect(
                RealtimeAnswering.problem(advancedCommerce(wrong))?.contains(
                    "\(field).modify_subscription.change_items") == true)
        }
        var removing = modify()
        removing.removeSkus = ["EXTRA"]
        #expect(RealtimeAnswering.problem(advancedCommerce(removing))?.contains("remove_skus") == true)
        var adding = modify()
        adding.addItems = [AdvancedCommerceModifyAddItem()]
        #expect(RealtimeAnswering.problem(advancedCommerce(adding))?.contains("add_items") == true)
        var unnamed = modify()
        unnamed.changeItems[0].reason = "WHY_NOT"
        #expect(RealtimeAnswering.problem(advancedCommerce(unnamed))?.contains("change_items[0].reason") == true)
    }

    @Test func anAnswerMayNameOnlyTheRequestsCustomer() {
        var request = RealtimeRequest()
        request.originalTransactionId = "2000000000000042"
        func offer(_ transaction: String) -> RealtimeAnswer {
            RealtimeAnswer(
                requestIdentifier: "r",
                choice: .promotionalOffer(
                    RealtimePromotionalOffer(
                        messageIdentifier: message, productId: "p", offerIdentifier: "o", transactionId: transaction)))
        }
        #expect(RealtimeAnswering.mismatch(offer(""), request: request) == nil)
        #expect(RealtimeAnswering.mismatch(offer("2000000000000042"), request: request) == nil)
        #expect(
            RealtimeAnswering.mismatch(offer("2000000000000043"), request: request)?.contains(
                "promotional_offer.transaction_id") == true)
        var other = modify()
        other.transactionId = "1"
        #expect(
            RealtimeAnswering.mismatch(advancedCommerce(other), request: request)?.contains(
                "advanced_commerce_info.modify_subscription.transaction_id") == true)
        other.transactionId = request.originalTransactionId
        #expect(RealtimeAnswering.mismatch(advancedCommerce(other), request: request) == nil)
        #expect(RealtimeAnswering.mismatch(advancedCommerce(modify()), request: request) == nil)
        #expect(
            RealtimeAnswering.mismatch(
                RealtimeAnswer(choice: .message(RealtimeMessage(messageIdentifier: message))), request: request) == nil)
    }

    @Test func hostileStringsAreEscaped() throws {
        let body = RealtimeResponseBody.alternateProduct(
            messageIdentifier: message, productId: "\"},\"x\":\u{0}", billingPlanType: "")
        let product = try #require(try parsed(body)["alternateProduct"] as? [String: String])
        #expect(product["productId"] == "\"},\"x\":\u{0}")
    }

    @Test func theAnswerContractNamesEachBrokenField() {
        #expect(RealtimeAnswering.problem(RealtimeAnswer()) == nil)
        #expect(
            RealtimeAnswering.problem(
                RealtimeAnswer(requestIdentifier: "r", choice: .message(RealtimeMessage(messageIdentifier: message))))
                == nil)
        let bad = RealtimeAnswer(
            requestIdentifier: "r",
            choice: .promotionalOffer(
                RealtimePromotionalOffer(
                    messageIdentifier: "nope", productId: "", offerIdentifier: String(repeating: "o", count: 300),
                    signature: .unrecognized(9), transactionId: "12a", appAccountToken: "x")))
        let problem = RealtimeAnswering.problem(bad) ?? ""
        for field in [
            "message_identifier", "product_id", "offer_identifier", "transaction_id", "app_account_token", "signature",
        ] {
            #expect(problem.contains("promotional_offer.\(field)"), "\(field) missing from \(problem)")
        }
    }

    @Test func configuredDefaultsBecomeAnswers() {
        #expect(RealtimeAnswering.answer(nil).choice == nil)
        #expect(
            RealtimeAnswering.answer(.message(messageIdentifier: message)).choice
                == .message(RealtimeMessage(messageIdentifier: message)))
        guard
            case .promotionalOffer(let offer)? = RealtimeAnswering.answer(
                .promotionalOffer(messageIdentifier: message, productId: "p", offerIdentifier: "o", v1: true)
            ).choice
        else {
            Issue.record("not an offer")
            return
        }
        #expect(offer.signature == .v1 && offer.productId == "p" && offer.offerIdentifier == "o")
    }

    @Test func outcomesHaveTheirMetricLabels() {
        #expect(RealtimeOutcome.answered(RealtimeAnswer()).label == "answered")
        #expect(RealtimeOutcome.late.label == "late")
        #expect(RealtimeOutcome.invalid("x").label == "invalid")
        for outcome in [RealtimeOutcome.noStream, .full, .duplicate, .streamClosed] {
            #expect(outcome.label == "defaulted")
        }
    }

    @Test func theBrokerRoutesAnswersAndDefaultsWithoutAStream() async {
        let broker = RealtimeBroker(maxPendingPerStream: 2, maxStreams: 2)
        var request = RealtimeRequest()
        request.requestIdentifier = "3DB5C98D-8ACF-4E29-831E-8E1F82F9F6E9"
        #expect(await broker.ask(app: "a", request: request, budget: .seconds(5)) == .noStream)
        guard let (stream, events) = broker.connect(apps: ["a"]) else {
            Issue.record("no stream")
            return
        }
        let answer = RealtimeAnswer(
            requestIdentifier: request.requestIdentifier, choice: .message(RealtimeMessage(messageIdentifier: message)))
        // The stream's side: answer what arrives (the identifier as Apple sent it, matched case-insensitively).
        let server = Task {
            for await event in events {
                #expect(event.app == "a" && event.budgetMillis > 0)
                broker.deliver(answer, problem: nil, from: stream)
            }
        }
        #expect(await broker.ask(app: "a", request: request, budget: .seconds(30)) == .answered(answer))
        broker.disconnect(stream)
        await server.value
        #expect(broker.streamCount == 0)
    }

    @Test func theBrokerAnswersLateWhenNoAnswerComes() async {
        let broker = RealtimeBroker(maxPendingPerStream: 2, maxStreams: 2)
        guard let (stream, _) = broker.connect(apps: ["a"]) else {
            Issue.record("no stream")
            return
        }
        var request = RealtimeRequest()
        request.requestIdentifier = "r1"
        #expect(await broker.ask(app: "a", request: request, budget: .milliseconds(20)) == .late)
        // The late answer matches nothing now.
        #expect(broker.deliver(RealtimeAnswer(requestIdentifier: "r1"), problem: nil, from: stream) == .unknown)
        broker.disconnect(stream)
    }

    @Test func aClosedStreamEndsItsWaitsAtOnce() async {
        let broker = RealtimeBroker(maxPendingPerStream: 2, maxStreams: 2)
        guard let (stream, events) = broker.connect(apps: ["a"]) else {
            Issue.record("no stream")
            return
        }
        let closer = Task {
            for await _ in events { broker.disconnect(stream) }
        }
        var request = RealtimeRequest()
        request.requestIdentifier = "r1"
        #expect(await broker.ask(app: "a", request: request, budget: .seconds(30)) == .streamClosed)
        await closer.value
    }
}

extension RealtimeBroker {
    /// An anonymous stream (open mode), nil when the replica is full.
    func connect(apps: Set<String>) -> (RealtimeRouter.StreamID, AsyncStream<RealtimeRequestEvent>)? {
        try? connect(apps: apps, caller: nil, callerLimit: nil).get()
    }
}
