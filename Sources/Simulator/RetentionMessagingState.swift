import AppStoreDomain
import Foundation
import GatewayFoundation

/// One app's Retention Messaging data in one environment, and every rule Apple applies to changing it, answered
/// with Apple's error codes. A value: no I/O (`RetentionMessagingEndpoints` stores it and the image files).
///
/// Apple reviews uploads; the simulator approves images at once, and messages too unless their header contains
/// `[pending]` or `[rejected]`, which keeps them in that state (so MessageNotApproved can be tested).
struct RetentionMessagingState: Sendable, Hashable, Codable {
    struct Image: Sendable, Hashable, Codable {
        var identifier: String
        var size: String
        var state: String
    }

    struct Message: Sendable, Hashable, Codable {
        var identifier: String
        var state: String
        /// The images the message shows: its image first, then its bullet points' images.
        var images: [String]
    }

    struct DefaultMessage: Sendable, Hashable, Codable {
        var productId: String
        var locale: String
        var messageIdentifier: String
    }

    struct PerformanceTest: Sendable, Hashable, Codable {
        var plan: PerformanceTestPlan
        /// Nil while the test runs.
        var summary: PerformanceTestSummary?
    }

    var images: [Image] = []
    var messages: [Message] = []
    var defaults: [DefaultMessage] = []
    var realtimeURL: String?
    /// The newest tests, oldest first (at most `maxTests`).
    var tests: [PerformanceTest] = []

    static let maxTests = 100

    // MARK: Images

    /// Upload Image: the identifier free, the count under Apple's limit, the PNG as Apple documents it.
    mutating func uploadImage(identifier: String, sizeQuery: String?, png: [UInt8]) throws(AppleRejection) {
        let id = try Self.uuid(identifier)
        let size: RetentionMessagingLimits.ImageSize
        if let sizeQuery {
            guard let named = RetentionMessagingLimits.ImageSize(rawValue: sizeQuery) else {
                throw AppleRejection(4_000_216, "Invalid request. The image size is invalid.")
            }
            size = named
        } else {
            size = .fullSize
        }
        if let problem = RetentionMessagingLimits.imageProblem(png, size: size) {
            throw AppleRejection(4_000_161, "Invalid request. The image is invalid: \(problem).")
        }
        guard !images.contains(where: { $0.identifier == id }) else {
            throw AppleRejection(4_090_000, "The image identifier already exists.")
        }
        guard images.count < RetentionMessagingLimits.imagesPerApp else {
            throw AppleRejection(4_030_014, "The maximum number of images has been reached.")
        }
        images.append(Image(identifier: id, size: size.rawValue, state: "APPROVED"))
    }

    /// Delete Image: known and used by no message.
    mutating func deleteImage(identifier: String) throws(AppleRejection) -> String {
        let id = try Self.uuid(identifier)
        guard let index = images.firstIndex(where: { $0.identifier == id }) else { throw Self.imageNotFound }
        guard !messages.contains(where: { $0.images.contains(id) }) else {
            throw AppleRejection(4_030_019, "The image is in use by a message.")
        }
        images.remove(at: index)
        return id
    }

    /// Apple's GetImageListResponse.
    var imageList: OrderedJSON {
        .object([
            (
                "imageIdentifiers",
                .array(
                    images.map {
                        .object([
                            ("imageIdentifier", .string($0.identifier)), ("imageState", .string($0.state)),
                            ("imageSize", .string($0.size)),
                        ])
                    })
            )
        ])
    }

    // MARK: Messages

    private struct UploadMessageBody: Decodable {
        struct Image: Decodable {
            var imageIdentifier: String
            var altText: String
        }

        struct BulletPoint: Decodable {
            var text: String
            var imageIdentifier: String
            var altText: String
        }

        var header: String
        var body: String
        var image: Image?
        var headerPosition: String?
        var bulletPoints: [BulletPoint]?
    }

    /// Upload Message: Apple's text limits, images that exist in the right size, the identifier free.
    mutating func uploadMessage(identifier: String, body: [UInt8]) throws(AppleRejection) {
        typealias Limits = RetentionMessagingLimits
        let id = try Self.uuid(identifier)
        let request = try JSONBody.decode(UploadMessageBody.self, body)
        guard Limits.characters(request.header) <= Limits.headerCharacters else {
            throw AppleRejection(4_000_162, "Invalid request. The header is too long.")
        }
        guard Limits.characters(request.body) <= Limits.bodyCharacters else {
            throw AppleRejection(4_000_163, "Invalid request. The body is too long.")
        }
        let bullets = request.bulletPoints ?? []
        guard bullets.count <= Limits.bulletPoints else {
            throw AppleRejection(4_000_218, "Invalid request. There are too many bullet points.")
        }
        let altTexts = [request.image?.altText].compactMap { $0 } + bullets.map(\.altText)
        guard altTexts.allSatisfy({ Limits.characters($0) <= Limits.altTextCharacters }) else {
            throw AppleRejection(4_000_175, "Invalid request. The alt text is too long.")
        }
        guard bullets.allSatisfy({ Limits.characters($0.text) <= Limits.bulletPointTextCharacters }) else {
            throw AppleRejection(4_000_219, "Invalid request. The bullet point text is too long.")
        }
        switch request.headerPosition {
        case nil, "ABOVE_BODY": break
        case "ABOVE_IMAGE":
            guard request.image != nil else {
                throw AppleRejection(4_000_224, "Invalid request. A header above the image requires an image.")
            }
        default: throw AppleRejection(4_000_000, "Invalid request.")
        }
        var used: [String] = []
        if let image = request.image { used.append(try imageForMessage(image.imageIdentifier, size: .fullSize)) }
        for bullet in bullets { used.append(try imageForMessage(bullet.imageIdentifier, size: .bulletPoint)) }
        guard !messages.contains(where: { $0.identifier == id }) else {
            throw AppleRejection(4_090_001, "The message identifier already exists.")
        }
        guard messages.count < Limits.messagesPerApp else {
            throw AppleRejection(4_030_016, "The maximum number of messages has been reached.")
        }
        let state =
            request.header.contains("[pending]")
            ? "PENDING" : request.header.contains("[rejected]") ? "REJECTED" : "APPROVED"
        messages.append(Message(identifier: id, state: state, images: used))
    }

    private func imageForMessage(_ identifier: String, size: RetentionMessagingLimits.ImageSize) throws(AppleRejection)
        -> String
    {
        let id = try Self.uuid(identifier)
        guard let image = images.first(where: { $0.identifier == id }) else { throw Self.imageNotFound }
        guard image.size == size.rawValue else {
            throw AppleRejection(4_000_216, "Invalid request. The image size is invalid for its use.")
        }
        return id
    }

    /// Delete Message (its default configurations go with it).
    mutating func deleteMessage(identifier: String) throws(AppleRejection) {
        let id = try Self.uuid(identifier)
        guard let index = messages.firstIndex(where: { $0.identifier == id }) else { throw Self.messageNotFound }
        messages.remove(at: index)
        defaults.removeAll { $0.messageIdentifier == id }
    }

    /// Apple's GetMessageListResponse.
    var messageList: OrderedJSON {
        .object([
            (
                "messageIdentifiers",
                .array(
                    messages.map {
                        .object([("messageIdentifier", .string($0.identifier)), ("messageState", .string($0.state))])
                    })
            )
        ])
    }

    // MARK: Default messages

    private struct DefaultConfigurationBody: Decodable {
        var messageIdentifier: String?
    }

    /// Configure Default Message: a valid locale, an approved message whose images are approved.
    mutating func configureDefault(productId: String, locale: String, body: [UInt8]) throws(AppleRejection) {
        try Self.checkLocale(locale)
        let request = try JSONBody.decode(DefaultConfigurationBody.self, body)
        guard let identifier = request.messageIdentifier else { throw AppleRejection(4_000_000, "Invalid request.") }
        let id = try Self.uuid(identifier)
        guard let message = messages.first(where: { $0.identifier == id }) else { throw Self.messageNotFound }
        guard message.state == "APPROVED" else {
            throw AppleRejection(4_030_017, "The message is not approved.")
        }
        guard message.images.allSatisfy({ id in images.contains { $0.identifier == id && $0.state == "APPROVED" } })
        else { throw AppleRejection(4_030_018, "An image of the message is not approved.") }
        defaults.removeAll { $0.productId == productId && $0.locale == locale }
        defaults.append(DefaultMessage(productId: productId, locale: locale, messageIdentifier: id))
    }

    /// Delete Default Message.
    mutating func deleteDefault(productId: String, locale: String) throws(AppleRejection) {
        try Self.checkLocale(locale)
        guard let index = defaults.firstIndex(where: { $0.productId == productId && $0.locale == locale }) else {
            throw Self.defaultNotFound
        }
        defaults.remove(at: index)
    }

    /// Apple's DefaultConfigurationResponse.
    func defaultMessage(productId: String, locale: String) throws(AppleRejection) -> OrderedJSON {
        try Self.checkLocale(locale)
        guard let found = defaults.first(where: { $0.productId == productId && $0.locale == locale }) else {
            throw Self.defaultNotFound
        }
        return .object([("messageIdentifier", .string(found.messageIdentifier))])
    }

    // MARK: Realtime URL

    private struct RealtimeURLBody: Decodable {
        var realtimeURL: String
    }

    /// Configure Realtime URL: an `https://` URL Apple accepts (or a loopback `http://` one, the simulator's
    /// allowance: `isLoopbackHTTP`); `hasPassedTest` is false in production until a performance test passed.
    mutating func configureRealtimeURL(body: [UInt8], hasPassedTest: Bool) throws(AppleRejection) {
        let request = try JSONBody.decode(RealtimeURLBody.self, body)
        guard RetentionMessagingLimits.isRealtimeURL(request.realtimeURL) || Self.isLoopbackHTTP(request.realtimeURL)
        else {
            throw AppleRejection(4_000_215, "Invalid request. The realtime URL is invalid.")
        }
        guard hasPassedTest else {
            throw AppleRejection(4_030_026, "A passing performance test is required before setting this URL.")
        }
        realtimeURL = request.realtimeURL
    }

    /// Whether `url` is `http://` to this machine (127.0.0.1, localhost or [::1], any port): Apple takes only
    /// `https://`, but the simulator's performance tests can reach a realtime URL on the test machine only in
    /// cleartext (its sender trusts no private CA), so it takes these too.
    static func isLoopbackHTTP(_ url: String) -> Bool {
        guard url.hasPrefix("http://"), RetentionMessagingLimits.isRealtimeURL("https://" + url.dropFirst(7)) else {
            return false
        }
        let authority = url.dropFirst(7).prefix { !"/?#".contains($0) }
        let host =
            authority.hasPrefix("[")
            ? String(authority.prefix { $0 != "]" }) + "]" : String(authority.prefix { $0 != ":" })
        return ["127.0.0.1", "localhost", "[::1]"].contains(host)
    }

    /// Delete Realtime URL.
    mutating func deleteRealtimeURL() throws(AppleRejection) {
        guard realtimeURL != nil else { throw Self.realtimeURLNotFound }
        realtimeURL = nil
    }

    /// Apple's RealtimeUrlResponse.
    func realtimeURLJSON() throws(AppleRejection) -> OrderedJSON {
        guard let realtimeURL else { throw Self.realtimeURLNotFound }
        return .object([("realtimeURL", .string(realtimeURL))])
    }

    // MARK: Performance tests

    private struct PerformanceTestBody: Decodable {
        var originalTransactionId: String
    }

    /// Initiate Performance Test: an original transaction id `checkTransaction` accepts (it throws Apple's
    /// transaction-id errors), a realtime URL configured and no test running; returns the plan to run.
    mutating func startTest(
        body: [UInt8], requestId: String, bundleId: String, environment: String,
        checkTransaction: (String) throws(AppleRejection) -> Void
    ) throws(AppleRejection) -> PerformanceTestPlan {
        guard body.count <= 65_536, let request = try? JSONDecoder().decode(PerformanceTestBody.self, from: Data(body))
        else { throw AppleRejection(4_000_211, "Invalid request. The performance test request is invalid.") }
        try checkTransaction(request.originalTransactionId)
        guard let realtimeURL else { throw Self.realtimeURLNotFound }
        guard !tests.contains(where: { $0.summary == nil }) else {
            throw AppleRejection(4_000_213, "A performance test is already running.")
        }
        let plan = PerformanceTestPlan(
            requestId: requestId, target: realtimeURL, bundleId: bundleId, environment: environment,
            originalTransactionId: request.originalTransactionId, maxConcurrentRequests: 10, totalRequests: 100,
            totalDurationMilliseconds: 60_000, responseTimeThresholdMilliseconds: 500, successRateThreshold: 95)
        tests.append(PerformanceTest(plan: plan))
        if tests.count > Self.maxTests { tests.removeFirst(tests.count - Self.maxTests) }
        return plan
    }

    /// Records the outcome of a test's requests.
    mutating func finishTest(requestId: String, attempts: [PerformanceTestAttempt]) {
        guard let index = tests.firstIndex(where: { $0.plan.requestId == requestId }) else { return }
        tests[index].summary = PerformanceTestSummary(plan: tests[index].plan, attempts: attempts)
    }

    /// Whether a performance test passed (of any URL: Apple recommends separate sandbox and production URLs, and
    /// tests run only in sandbox).
    var hasPassedTest: Bool { tests.contains { $0.summary?.passed == true } }

    /// Apple's PerformanceTestResultResponse: PENDING with every request pending while the test runs.
    func testResult(requestId: String) throws(AppleRejection) -> OrderedJSON {
        guard UUID(uuidString: requestId) != nil else {
            throw AppleRejection(4_000_212, "Invalid request. The request id is invalid.")
        }
        guard let test = tests.first(where: { $0.plan.requestId == requestId.lowercased() }) else {
            throw AppleRejection(4_040_018, "The performance test run was not found.")
        }
        guard let summary = test.summary else {
            return .object([
                ("config", test.plan.configJSON), ("target", .string(test.plan.target)), ("result", .string("PENDING")),
                ("numPending", .integer(test.plan.totalRequests)),
            ])
        }
        return summary.json(plan: test.plan)
    }

    // MARK: Shared checks

    /// A UUID in Apple's lowercase form; anything else is GeneralBadRequest.
    static func uuid(_ text: String) throws(AppleRejection) -> String {
        guard text.utf8.count == 36, UUID(uuidString: text) != nil else {
            throw AppleRejection(4_000_000, "Invalid request. The identifier is not a UUID.")
        }
        return text.lowercased()
    }

    private static func checkLocale(_ locale: String) throws(AppleRejection) {
        guard locale.utf8.count <= 64, RetentionMessagingLimits.isLocale(locale) else {
            throw AppleRejection(4_000_164, "Invalid request. The locale is invalid.")
        }
    }

    private static let imageNotFound = AppleRejection(4_040_014, "The image was not found.")
    private static let messageNotFound = AppleRejection(4_040_015, "The message was not found.")
    private static let defaultNotFound = AppleRejection(4_040_020, "No default message is configured.")
    private static let realtimeURLNotFound = AppleRejection(4_040_021, "No realtime URL is configured.")
}
