import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer

/// The Retention Messaging API's 14 endpoints (Apple's Retention Messaging API documentation): each app's images,
/// messages, default messages, realtime URL and performance tests per environment (`RetentionMessagingState`).
/// With a directory (the state directory's `retention/`), every change is written there — `<bundleId>/<environment>
/// .json` and the uploaded PNGs as `<bundleId>/<environment>/images/<imageIdentifier>.png` — and read back on start,
/// so uploads survive a restart. A performance test runs in its own task through `sender`, the seam that calls the
/// realtime URL.
final class RetentionMessagingEndpoints: Sendable {
    private let states = Lock<[String: RetentionMessagingState]>([:])
    private let directory: URL?
    private let sender: PerformanceTestSender
    private let random: Lock<DeterministicRandom>

    init(directory: URL?, seed: UInt64, sender: @escaping PerformanceTestSender) {
        self.directory = directory
        self.sender = sender
        random = Lock(DeterministicRandom(seed: seed, stream: "retention-messaging"))
    }

    /// Answers one Retention Messaging request of `app` in `route.environment`, whose purchases are `dataset`.
    func respond(
        _ request: HTTPRequest, route: SimulatorRoute, app: SimulatedApp, dataset: SimulatedDataset
    ) -> HTTPResponse {
        let key = Self.key(app.bundleId, route.environment)
        let parameter = route.parameters.first ?? ""
        do throws(AppleRejection) {
            switch route.endpoint {
            case .uploadImage:
                let size = request.queryItems.first { $0.name == "imageSize" }?.value
                let id = try change(key) { state throws(AppleRejection) in
                    try state.uploadImage(identifier: parameter, sizeQuery: size, png: request.body)
                    return parameter.lowercased()
                }
                writeImage(request.body, key: key, identifier: id)
            case .deleteImage:
                let id = try change(key) { state throws(AppleRejection) in try state.deleteImage(identifier: parameter)
                }
                removeImage(key: key, identifier: id)
            case .getImageList:
                return SimulatorResponse.json(state(key).imageList)
            case .uploadMessage:
                try change(key) { state throws(AppleRejection) in
                    try state.uploadMessage(identifier: parameter, body: request.body)
                }
            case .deleteMessage:
                try change(key) { state throws(AppleRejection) in try state.deleteMessage(identifier: parameter) }
            case .getMessageList:
                return SimulatorResponse.json(state(key).messageList)
            case .configureDefaultMessage:
                let locale = route.parameters.dropFirst().first ?? ""
                try change(key) { state throws(AppleRejection) in
                    try state.configureDefault(productId: parameter, locale: locale, body: request.body)
                }
            case .deleteDefaultMessage:
                let locale = route.parameters.dropFirst().first ?? ""
                try change(key) { state throws(AppleRejection) in
                    try state.deleteDefault(productId: parameter, locale: locale)
                }
            case .getDefaultMessage:
                let locale = route.parameters.dropFirst().first ?? ""
                return SimulatorResponse.json(try state(key).defaultMessage(productId: parameter, locale: locale))
            case .configureRealtimeUrl:
                // Production takes a URL once the app's server passed a performance test, of whatever URL: Apple
                // recommends separate sandbox and production URLs, and tests run in sandbox.
                let passed =
                    route.environment == .sandbox
                    || [AppleEnvironment.production, .sandbox].contains {
                        state(Self.key(app.bundleId, $0)).hasPassedTest
                    }
                try change(key) { state throws(AppleRejection) in
                    try state.configureRealtimeURL(body: request.body, hasPassedTest: passed)
                }
            case .deleteRealtimeUrl:
                try change(key) { state throws(AppleRejection) in try state.deleteRealtimeURL() }
            case .getRealtimeUrl:
                return SimulatorResponse.json(try state(key).realtimeURLJSON())
            case .initiatePerformanceTest:
                let requestId = random.withLock { $0.uuid() }
                let plan = try change(key) { state throws(AppleRejection) in
                    try state.startTest(
                        body: request.body, requestId: requestId, bundleId: app.bundleId,
                        environment: route.environment.appleName,
                        checkTransaction: dataset.checkPerformanceTestTransaction)
                }
                let sender = self.sender
                Task.detached { [self] in
                    let attempts = await sender(plan)
                    try? change(key) { state throws(AppleRejection) in
                        state.finishTest(requestId: plan.requestId, attempts: attempts)
                    }
                }
                return SimulatorResponse.json(
                    .object([("config", plan.configJSON), ("requestId", .string(requestId))]))
            case .getPerformanceTestResults:
                return SimulatorResponse.json(try state(key).testResult(requestId: parameter))
            default:
                return SimulatorResponse.notFound()
            }
            return HTTPResponse(status: 200)
        } catch {
            return SimulatorResponse.error(error)
        }
    }

    // MARK: State and files

    private static func key(_ bundleId: String, _ environment: AppleEnvironment) -> String {
        "\(bundleId)/\(environment.rawValue)"
    }

    /// The state of `key`, read from the directory on first use.
    private func state(_ key: String) -> RetentionMessagingState {
        states.withLock { states in
            if let state = states[key] { return state }
            let loaded = load(key) ?? RetentionMessagingState()
            states[key] = loaded
            return loaded
        }
    }

    /// Applies `body` to the state of `key` and, when it did not throw, keeps and writes the changed state (under
    /// the lock, so the file always holds the newest state).
    @discardableResult
    private func change<Result>(
        _ key: String, _ body: (inout RetentionMessagingState) throws(AppleRejection) -> Result
    ) throws(AppleRejection) -> Result {
        let outcome: Swift.Result<Result, AppleRejection> = states.withLock { states in
            var state = states[key] ?? load(key) ?? RetentionMessagingState()
            do throws(AppleRejection) {
                let result = try body(&state)
                states[key] = state
                save(state, key: key)
                return .success(result)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    private func file(_ key: String) -> URL? { directory?.appendingPathComponent(key + ".json") }

    private func load(_ key: String) -> RetentionMessagingState? {
        guard let file = file(key), let data = try? Data(contentsOf: file) else { return nil }
        return try? JSONDecoder().decode(RetentionMessagingState.self, from: data)
    }

    private func save(_ state: RetentionMessagingState, key: String) {
        guard let file = file(key), let data = try? JSONEncoder().encode(state) else { return }
        try? FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? data.write(to: file, options: .atomic)
    }

    private func imageFile(_ key: String, _ identifier: String) -> URL? {
        directory?.appendingPathComponent(key).appendingPathComponent("images")
            .appendingPathComponent(identifier + ".png")
    }

    private func writeImage(_ png: [UInt8], key: String, identifier: String) {
        guard let file = imageFile(key, identifier) else { return }
        try? FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? Data(png).write(to: file, options: .atomic)
    }

    private func removeImage(key: String, identifier: String) {
        guard let file = imageFile(key, identifier) else { return }
        try? FileManager.default.removeItem(at: file)
    }
}

extension SimulatedDataset {
    /// Apple's transaction-id errors of Initiate Performance Test, which needs the original transaction id of a
    /// purchase made in the environment: InvalidTransactionId (4000006) for an id that is not one of its
    /// transactions, AppTransactionIdNotSupported (4000048) for an app transaction id,
    /// FamilyTransactionNotSupported (4000185) for a Family Sharing purchase and
    /// TransactionIdIsNotOriginalTransactionId (4000187) for a renewal's or a later purchase's id.
    func checkPerformanceTestTransaction(_ transactionId: String) throws(AppleRejection) {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        if customer(owning: transactionId)?.appTransactionId == transactionId {
            throw AppleRejection(4_000_048, "Invalid request. App transaction ids are not supported by this endpoint.")
        }
        guard let transaction = transaction(transactionId) else { throw .invalidTransactionId() }
        guard transaction.inAppOwnershipType != "FAMILY_SHARED" else {
            throw AppleRejection(4_000_185, "Invalid request. Family Sharing transactions are not supported.")
        }
        guard transaction.originalTransactionId == transactionId else {
            throw AppleRejection(4_000_187, "The transaction id is not an original transaction id.")
        }
    }
}
