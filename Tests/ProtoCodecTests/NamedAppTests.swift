import ProtoCodec
import Testing

/// `namedApp` is what the per-app authorization reads from every decoded request: it must be the `app`
/// field of each message that has one, reached through a generic `ProtoMessage` (as the typed handlers do),
/// and nil for the others.
@Suite struct NamedAppTests {
    private func named<Message: ProtoMessage>(_ message: Message) -> String? { message.namedApp }

    @Test func anEmptyAppIsStillNamed() {
        // An empty app (the only configured one) is still named: the authorization decides what it means.
        #expect(named(FinishTransactionRequest()) == "")
        let existential: any AppNamingMessage = LookUpOrderIdRequest()
        #expect((existential as? any ProtoMessage)?.namedApp == "")
    }

    /// Every generated request with an `app` field, through the generic path the typed handlers take.
    @Test func everyAppNamingRequestAnswersItsApp() {
        let answers: [String?] = [
            named(SendConsumptionInformationRequest(app: "a")), named(GetHistoryRequest(app: "a")),
            named(StreamNotificationsRequest(app: "a")), named(GetRefundHistoryRequest(app: "a")),
            named(CreatePromotionalOfferSignatureRequest(app: "a")),
            named(CreateIntroductoryOfferEligibilitySignatureRequest(app: "a")),
            named(GetAllSubscriptionStatusesRequest(app: "a")), named(ExtendSubscriptionRenewalDateRequest(app: "a")),
            named(ExtendRenewalDatesForAllActiveSubscribersRequest(app: "a")),
            named(GetStatusOfSubscriptionRenewalDateExtensionsRequest(app: "a")),
            named(RequestTestNotificationRequest(app: "a")), named(GetTestNotificationStatusRequest(app: "a")),
            named(GetTransactionInfoRequest(app: "a")), named(GetAppTransactionInfoRequest(app: "a")),
            named(LookUpOrderIdRequest(app: "a")), named(SetAppAccountTokenRequest(app: "a")),
            named(FinishTransactionRequest(app: "a")), named(VerifyJWSRequest(app: "a")),
        ]
        #expect(answers.count == 18)
        #expect(answers.allSatisfy { $0 == "a" })
    }

    @Test func otherMessagesNameNone() {
        #expect(named(HealthCheckRequest()) == nil)
        #expect(named(VerifyJWSResponse()) == nil)
        #expect(named(Transaction()) == nil)
    }
}
