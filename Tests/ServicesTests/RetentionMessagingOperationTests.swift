import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import ProtoCodec
import SignedData
import TestSupport
import Testing

@testable import Services

/// The Retention Messaging RPCs: each operation's request to Apple (method, path, query, body, content type), the
/// checks made before any call, and the decoding of Apple's answers (the samples of Apple's libraries) through the
/// shared call path against a scripted Apple.
@Suite(.serialized) struct RetentionMessagingOperationTests {
    private let image = "A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890"
    private let message = "b2c3d4e5-f6a7-8901-b2c3-d4e5f6a78901"

    private static func png(width: UInt32, height: UInt32, colorType: UInt8 = 2) -> [UInt8] {
        PNGBytes.png(width: width, height: height, colorType: colorType)
    }

    private func violations(_ plan: () throws(GatewayError) -> AppleRequest) -> [String] {
        do {
            _ = try plan()
            return []
        } catch {
            guard case .badRequest(let fields) = error else { return ["not a bad request: \(error)"] }
            return fields.map(\.field)
        }
    }

    // MARK: Requests to Apple

    @Test func imagesGoToApplesPathsWithTheirSizeAndTheIdentifierInLowercase() throws {
        let png = Self.png(width: 3840, height: 400)
        let upload = try AppleOperation.uploadImage.plan(
            UploadImageRequest(imageIdentifier: image, image: png, imageSize: .fullSize))
        #expect(upload.endpoint.method == .put && upload.body == png && upload.query == "imageSize=FULL_SIZE")
        #expect(
            upload.endpoint.path(values: upload.pathValues)
                == "/inApps/v1/messaging/image/a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890")
        let bullet = try AppleOperation.uploadImage.plan(
            UploadImageRequest(imageIdentifier: image, image: Self.png(width: 96, height: 96), imageSize: .bulletPoint))
        #expect(bullet.query == "imageSize=BULLET_POINT")
        let unsized = try AppleOperation.uploadImage.plan(UploadImageRequest(imageIdentifier: image, image: png))
        #expect(unsized.query.isEmpty)
        let delete = try AppleOperation.deleteImage.plan(
            DeleteImageRequest(environment: .sandbox, imageIdentifier: image))
        #expect(delete.endpoint == .deleteImage && delete.endpoint.method == .delete && delete.environment == .sandbox)
        let list = try AppleOperation.getImageList.plan(GetImageListRequest())
        #expect(list.endpoint.path(values: list.pathValues) == "/inApps/v1/messaging/image/list")
    }

    @Test func imagesAreCheckedBeforeUpload() {
        let cases: [(UploadImageRequest, String)] = [
            (
                UploadImageRequest(imageIdentifier: "not-a-uuid", image: Self.png(width: 3840, height: 400)),
                "image_identifier"
            ),
            (UploadImageRequest(imageIdentifier: image), "image"),
            (UploadImageRequest(imageIdentifier: image, image: Array("GIF89a".utf8)), "image"),
            (UploadImageRequest(imageIdentifier: image, image: Self.png(width: 1920, height: 1080)), "image"),
            (
                UploadImageRequest(imageIdentifier: image, image: Self.png(width: 3840, height: 400, colorType: 6)),
                "image"
            ),
            (
                UploadImageRequest(
                    imageIdentifier: image, image: Self.png(width: 3840, height: 400), imageSize: .unrecognized(9)),
                "image_size"
            ),
        ]
        for (request, field) in cases {
            #expect(violations { () throws(GatewayError) in try AppleOperation.uploadImage.plan(request) } == [field])
        }
    }

    @Test func aMessageBecomesApplesUploadMessageRequestBody() throws {
        let request = UploadMessageRequest(
            messageIdentifier: message, header: "Stay with us", body: "Half price for 3 months",
            image: RetentionMessageImage(imageIdentifier: image, altText: "A gift"), headerPosition: .aboveImage,
            bulletPoints: [RetentionBulletPoint(text: "Offline mode", imageIdentifier: image, altText: "Check")])
        let plan = try AppleOperation.uploadMessage.plan(request)
        #expect(plan.endpoint.method == .put && plan.endpoint.requestContentType == "application/json")
        #expect(plan.endpoint.path(values: plan.pathValues) == "/inApps/v1/messaging/message/\(message)")
        let body = String(decoding: plan.body ?? [], as: UTF8.self)
        let lower = image.lowercased()
        #expect(
            body == #"{"body":"Half price for 3 months","bulletPoints":[{"altText":"Check","imageIdentifier":""#
                + lower + #"","text":"Offline mode"}],"header":"Stay with us","headerPosition":"ABOVE_IMAGE","#
                + #""image":{"altText":"A gift","imageIdentifier":""# + lower + #""}}"#)
    }

    @Test func messagesAreCheckedAgainstApplesLimits() {
        let point = RetentionBulletPoint(text: "x", imageIdentifier: image, altText: "y")
        let cases: [(UploadMessageRequest, [String])] = [
            (UploadMessageRequest(messageIdentifier: message, header: "h"), ["body"]),
            (
                UploadMessageRequest(
                    messageIdentifier: message, header: String(repeating: "é", count: 67), body: "b"), ["header"]
            ),
            (
                UploadMessageRequest(messageIdentifier: message, header: "h", body: String(repeating: "b", count: 145)),
                ["body"]
            ),
            (
                UploadMessageRequest(messageIdentifier: message, header: "h", body: "b", headerPosition: .aboveImage),
                ["header_position"]
            ),
            (
                UploadMessageRequest(
                    messageIdentifier: message, header: "h", body: "b",
                    image: RetentionMessageImage(imageIdentifier: image, altText: String(repeating: "a", count: 151))),
                ["image.alt_text"]
            ),
            (
                UploadMessageRequest(
                    messageIdentifier: message, header: "h", body: "b",
                    bulletPoints: Array(repeating: point, count: 6)),
                ["bullet_points"]
            ),
            (
                UploadMessageRequest(
                    messageIdentifier: message, header: "h", body: "b",
                    bulletPoints: [
                        RetentionBulletPoint(text: String(repeating: "t", count: 67), imageIdentifier: "x")
                    ]),
                ["bullet_points[0].text", "bullet_points[0].image_identifier", "bullet_points[0].alt_text"]
            ),
        ]
        for (request, fields) in cases {
            #expect(violations { () throws(GatewayError) in try AppleOperation.uploadMessage.plan(request) } == fields)
        }
        let fine = UploadMessageRequest(
            messageIdentifier: message, header: String(repeating: "é", count: 66), body: "b",
            bulletPoints: Array(repeating: point, count: 5))
        #expect(violations { () throws(GatewayError) in try AppleOperation.uploadMessage.plan(fine) }.isEmpty)
    }

    /// Apple's `realtimeURL` must begin with `https://` (BadRequestRealtimeUrl otherwise): refused before Apple.
    @Test func aRealtimeURLThatIsNotHTTPSIsRefusedBeforeApple() {
        for refused in ["http://example.com/realtime", "http://127.0.0.1:8080/rt", "example.com/realtime"] {
            #expect(
                violations { () throws(GatewayError) in
                    try AppleOperation.configureRealtimeUrl.plan(ConfigureRealtimeUrlRequest(realtimeUrl: refused))
                } == ["realtime_url"], "\(refused)")
        }
    }

    /// Apple's locales are the App Store's short codes, case-sensitive: anything else is refused, naming the field.
    @Test func aLocaleOffApplesListIsRefusedBeforeApple() throws {
        for refused in ["en_US", "en-us", "EN-US", "pt_BR", "zh-hans", "en", "de", "fr-BE", "xx-XX"] {
            #expect(
                violations { () throws(GatewayError) in
                    try AppleOperation.deleteDefaultMessage.plan(
                        DeleteDefaultMessageRequest(productId: "com.example.monthly", locale: refused))
                } == ["locale"], "\(refused)")
        }
        for accepted in ["en-US", "de-DE", "zh-Hans", "pt-BR", "ja", "ur-PK"] {
            let plan = try AppleOperation.deleteDefaultMessage.plan(
                DeleteDefaultMessageRequest(productId: "com.example.monthly", locale: accepted))
            #expect(plan.pathValues == ["com.example.monthly", accepted])
        }
    }

    @Test func defaultMessagesRealtimeURLAndPerformanceTestsBuildApplesRequests() throws {
        let configure = try AppleOperation.configureDefaultMessage.plan(
            ConfigureDefaultMessageRequest(
                productId: "com.example.monthly", locale: "en-US", messageIdentifier: message))
        #expect(
            configure.endpoint.path(values: configure.pathValues)
                == "/inApps/v1/messaging/default/com.example.monthly/en-US")
        #expect(configure.body == Array(#"{"messageIdentifier":"\#(message)"}"#.utf8))
        #expect(
            violations { () throws(GatewayError) in
                try AppleOperation.getDefaultMessage.plan(
                    GetDefaultMessageRequest(productId: "../x", locale: "english"))
            } == ["product_id", "locale"])
        let url = try AppleOperation.configureRealtimeUrl.plan(
            ConfigureRealtimeUrlRequest(realtimeUrl: "https://example.com/realtime"))
        #expect(url.body == Array(#"{"realtimeURL":"https://example.com/realtime"}"#.utf8))
        #expect(
            violations { () throws(GatewayError) in
                try AppleOperation.configureRealtimeUrl.plan(ConfigureRealtimeUrlRequest(realtimeUrl: "ftp://x"))
            } == ["realtime_url"])
        let test = try AppleOperation.initiatePerformanceTest.plan(
            InitiatePerformanceTestRequest(originalTransactionId: "2000000123"))
        #expect(test.endpoint.method == .post && test.body == Array(#"{"originalTransactionId":"2000000123"}"#.utf8))
        #expect(
            violations { () throws(GatewayError) in
                try AppleOperation.getPerformanceTestResults.plan(GetPerformanceTestResultsRequest(requestId: "a/b"))
            } == ["request_id"])
    }

    // MARK: Answers through the shared call path

    private func handler<Request, Response>(
        _ operation: AppleOperation<Request, Response>, _ fixture: UpstreamFixture, _ mint: TransactionMint
    ) -> AppleOperationHandler<Request, Response> {
        AppleOperationHandler(
            operation, client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 1)
    }

    @Test func applesSampleAnswersDecode() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { request, _ in
            switch request.path {
            case "/production/inApps/v1/messaging/image/list":
                AppleJSON.response([
                    "imageIdentifiers": [
                        [
                            "imageIdentifier": "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890", "imageState": "APPROVED",
                            "imageSize": "FULL_SIZE",
                        ],
                        ["imageIdentifier": "x", "imageState": "IN_REVIEW"],
                    ]
                ])
            case "/production/inApps/v1/messaging/message/list":
                AppleJSON.response([
                    "messageIdentifiers": [
                        ["messageIdentifier": "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890", "messageState": "APPROVED"]
                    ]
                ])
            case "/production/inApps/v1/messaging/realtime/url":
                AppleJSON.response(["realtimeURL": "https://example.com/realtime"])
            case "/production/inApps/v1/messaging/default/p/en-US":
                AppleJSON.response(["messageIdentifier": "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"])
            case "/production/inApps/v1/messaging/performanceTest":
                AppleJSON.response([
                    "config": [
                        "maxConcurrentRequests": 10, "totalRequests": 100, "totalDuration": 60000,
                        "responseTimeThreshold": 500, "successRateThreshold": 95,
                    ],
                    "requestId": "c4b87a1d-2e3f-4a5b-9c6d-7e8f9a0b1c2d",
                ])
            default:
                AppleJSON.response([
                    "config": ["totalRequests": 100], "target": "https://example.com/retention", "result": "PASS",
                    "successRate": 98, "numPending": 0,
                    "responseTimes": ["average": 120, "p50": 100, "p90": 200, "p95": 250, "p99": 400],
                    "failures": ["TIMED_OUT": 1, "NO_RESPONSE": 1],
                ])
            }
        }
        let images = try await handler(.getImageList, fixture, mint).handle(
            GetImageListRequest(), remaining: .seconds(5))
        #expect(images.images.count == 2 && images.environment == .production)
        #expect(images.images[0].state == .approved && images.images[0].size == .fullSize)
        #expect(images.images[1].state == .unspecified && images.images[1].stateRaw == "IN_REVIEW")
        let messages = try await handler(.getMessageList, fixture, mint).handle(
            GetMessageListRequest(), remaining: .seconds(5))
        #expect(messages.messages.map(\.state) == [.approved])
        let url = try await handler(.getRealtimeUrl, fixture, mint).handle(
            GetRealtimeUrlRequest(), remaining: .seconds(5))
        #expect(url.realtimeUrl == "https://example.com/realtime")
        let preset = try await handler(.getDefaultMessage, fixture, mint).handle(
            GetDefaultMessageRequest(productId: "p", locale: "en-US"), remaining: .seconds(5))
        #expect(preset.messageIdentifier == "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890")
        let started = try await handler(.initiatePerformanceTest, fixture, mint).handle(
            InitiatePerformanceTestRequest(originalTransactionId: "1"), remaining: .seconds(5))
        #expect(started.config?.totalDurationMillis == 60000 && started.requestId.hasPrefix("c4b87a1d"))
        let results = try await handler(.getPerformanceTestResults, fixture, mint).handle(
            GetPerformanceTestResultsRequest(requestId: started.requestId), remaining: .seconds(5))
        #expect(results.result == .pass && results.successRate == 98 && results.responseTimes?.p99Millis == 400)
        #expect(results.failures.map(\.resultRaw) == ["NO_RESPONSE", "TIMED_OUT"])
        #expect(results.failures.map(\.result) == [.noResponse, .timedOut])
    }

    @Test func anImageGoesUpAsPNGAndDeletionsAsDELETE() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in HTTPResponse(status: 200) }
        let png = Self.png(width: 3840, height: 400)
        _ = try await handler(.uploadImage, fixture, mint).handle(
            UploadImageRequest(imageIdentifier: image, image: png), remaining: .seconds(5))
        _ = try await handler(.deleteMessage, fixture, mint).handle(
            DeleteMessageRequest(messageIdentifier: message), remaining: .seconds(5))
        let sent = fixture.fake.requests
        #expect(sent.map(\.method) == ["PUT", "DELETE"])
        #expect(sent[0].header("content-type") == "image/png" && sent[0].body == png)
        #expect(sent[1].body.isEmpty && sent[1].path == "/production/inApps/v1/messaging/message/\(message)")
    }

    @Test func anUploadIsNotRepeatedAfterAnAmbiguousFailureButConfiguringIs() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in HTTPResponse(status: 502) }
        _ = await gatewayError { () async throws(GatewayError) in
            try await handler(.uploadMessage, fixture, mint).handle(
                UploadMessageRequest(messageIdentifier: message, header: "h", body: "b"), remaining: .seconds(5))
        }
        #expect(fixture.fake.requests.count == 1)
        _ = await gatewayError { () async throws(GatewayError) in
            try await handler(.configureRealtimeUrl, fixture, mint).handle(
                ConfigureRealtimeUrlRequest(realtimeUrl: "https://example.com/rt"), remaining: .seconds(5))
        }
        #expect(fixture.fake.requests.count == 1 + fixture.configuration.retries.maxAttempts)
    }

    @Test func applesRetentionErrorsKeepTheirNames() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in AppleJSON.error(4_090_001, status: 409) }
        let error = await gatewayError { () async throws(GatewayError) in
            try await handler(.uploadMessage, fixture, mint).handle(
                UploadMessageRequest(messageIdentifier: message, header: "h", body: "b"), remaining: .seconds(5))
        }
        let status = try #require(error).rpcStatus
        #expect(status.code == .alreadyExists)
        #expect(status.message.contains("MessageAlreadyExists (4090001)"))
    }
}
