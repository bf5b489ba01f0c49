import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// Request a Test Notification and Get Test Notification Status.
extension AppleOperation where Request == RequestTestNotificationRequest, Response == RequestTestNotificationResponse {
    static var requestTestNotification: Self {
        Self(app: \.app) { request throws(GatewayError) in
            AppleRequest(.requestTestNotification, environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(SendTestWire.self, what: "test notification request")
            guard let token = wire.testNotificationToken, !token.isEmpty else {
                throw .appleDataRejected(
                    app: answer.app.name, environment: answer.response.environment,
                    problem: "the test notification answer has no testNotificationToken")
            }
            return RequestTestNotificationResponse(environment: answer.environment, testNotificationToken: token)
        }
    }
}

extension AppleOperation
where Request == GetTestNotificationStatusRequest, Response == GetTestNotificationStatusResponse {
    static var getTestNotificationStatus: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.segment(
                request.testNotificationToken, field: "test_notification_token", max: RequestContract.maxTokenBytes)
            try contract.check()
            return AppleRequest(
                .getTestNotificationStatus, pathValues: [request.testNotificationToken],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(AppleNotificationDeliveries.self, what: "test notification status")
            guard let jws = wire.signedPayload else {
                throw .appleDataRejected(
                    app: answer.app.name, environment: answer.response.environment,
                    problem: "the test notification status has no signedPayload")
            }
            let attempts = (wire.sendAttempts ?? []).map { attempt in
                SendAttempt(
                    attemptDate: answer.date(attempt.attemptDate),
                    result: StreamNotificationsHandler.sendAttemptResults[attempt.sendAttemptResult ?? ""]
                        ?? .unspecified,
                    resultRaw: attempt.sendAttemptResult ?? "")
            }
            return GetTestNotificationStatusResponse(
                environment: answer.environment, signedPayload: jws,
                notification: try answer.notification(jws, what: "signedPayload"), sendAttempts: attempts)
        }
    }
}

/// SendTestNotificationResponse on the wire.
private struct SendTestWire: AppleJSONShape {
    var testNotificationToken: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        testNotificationToken = try object.string("testNotificationToken")
    }
}
