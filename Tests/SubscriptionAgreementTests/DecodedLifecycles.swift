import AppStoreDomain
import Cryptography
import Foundation
import ProtoCodec
import SignedData
import Simulator
import SubscriptionState

/// What one signed notification (or one record of a Get All Subscription Statuses answer) gives the state: its
/// transaction and renewal info, verified and decoded by the gateway's own verifier and decoder.
struct Delivery: Sendable, Hashable {
    /// "TYPE/SUBTYPE" of the notification ("statuses" for an answer), for messages.
    var label: String
    /// `data.status` of the notification (`.unspecified` for a one-time purchase or an answer).
    var status: SubscriptionStatus
    /// The transaction, as signed and as decoded.
    var transaction: SignedTransaction
    /// The renewal info, as signed and as decoded (nil for a one-time purchase).
    var renewalInfo: SignedRenewalInfo?
}

/// One step of a simulator lifecycle as the gateway receives it, with what the simulator says about its instant.
struct DecodedStep: Sendable {
    /// The step's position in its lifecycle (0 first).
    var index: Int
    /// The step's instant (UNIX ms): every `signedDate` of the step.
    var instant: Int64
    /// The step's notifications, in sending order.
    var notifications: [Delivery]
    /// Get All Subscription Statuses at the instant, one item per record (the purchaser's first).
    var statuses: [LifecycleSubscriptionStatus]
    /// The same answer's `signedTransactionInfo` and `signedRenewalInfo`, verified and decoded (an Apple read).
    var answers: [Delivery]
    /// The simulator's world after the step: its records and one-time purchases, to read them at other instants.
    var state: LifecycleState
}

/// A whole lifecycle, run and decoded once.
struct DecodedRun: Sendable {
    var name: String
    var environment: AppleEnvironment
    var steps: [DecodedStep]

    /// Every notification of the lifecycle, in sending order.
    var notifications: [Delivery] { steps.flatMap(\.notifications) }

    /// The instant of the last step.
    var lastInstant: Int64 { steps.last?.instant ?? DecodedLifecycles.start }

    /// The products of the app: each unlocks an entitlement named after it, and all of them "all".
    var policies: [SubscriptionPolicy] {
        let products = ProductCatalog(bundleId: DecodedLifecycles.app.bundleId).products.map(\.productId)
        var entitlements = Dictionary(uniqueKeysWithValues: products.map { ($0, Set([$0])) })
        entitlements["all"] = Set(products)
        return [
            SubscriptionPolicy(refundPolicy: .immediate, entitlements: entitlements),
            SubscriptionPolicy(refundPolicy: .untilExpiry, entitlements: entitlements),
        ]
    }
}

/// Why a lifecycle could not be run or decoded.
struct DecodingFailure: Error, CustomStringConvertible {
    var description: String
}

/// Every simulator lifecycle in both environments, run once with the simulator's PKI, and every JWS verified and
/// decoded once by the gateway's `SignedDataVerifier` (trusting the simulator's root) and `PayloadDecoder`; the
/// tests reuse the decoded values.
enum DecodedLifecycles {
    /// Where every lifecycle's clock starts: 2025-06-15T15:06:40Z, inside the PKI's validity.
    static let start: Int64 = 1_750_000_000_000

    static let pki: SimulatorPKI = {
        do {
            return try SimulatorPKI(generatingAround: Date(timeIntervalSince1970: 1_750_000_000), serialSeed: 46)
        } catch {
            preconditionFailure("test PKI: \(error)")
        }
    }()

    static let app: SimulatedApp = {
        do {
            return SimulatedApp(
                name: "example", bundleId: "com.example.app", appAppleId: 1_234_567_890,
                issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "ABCDEFGHIJ",
                publicKey: try ECPrivateKey(generatingOn: .p256).publicKey)
        } catch {
            preconditionFailure("app key: \(error)")
        }
    }()

    /// The names of the lifecycles, the tests' arguments.
    static let names = Lifecycle.all.map(\.name)

    /// Each lifecycle's run by "name/environment".
    private static let runs: [String: Result<DecodedRun, DecodingFailure>] = {
        var runs: [String: Result<DecodedRun, DecodingFailure>] = [:]
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        } catch {
            preconditionFailure("verifier: \(error)")
        }
        for (number, lifecycle) in Lifecycle.all.enumerated() {
            for environment in AppleEnvironment.allCases {
                runs["\(lifecycle.name)/\(environment)"] = Result { () throws(DecodingFailure) in
                    try decode(lifecycle, environment: environment, number: UInt64(number), verifier: verifier)
                }
            }
        }
        return runs
    }()

    /// The decoded run of the lifecycle called `name` in `environment`.
    static func run(_ name: String, _ environment: AppleEnvironment) throws -> DecodedRun {
        guard let run = runs["\(name)/\(environment)"] else {
            throw DecodingFailure(description: "no lifecycle \(name)")
        }
        return try run.get()
    }

    /// The record key of a Get All Subscription Statuses item of `environment`.
    static func key(_ status: LifecycleSubscriptionStatus, _ environment: AppleEnvironment) -> SubscriptionKey {
        SubscriptionKey(
            bundleId: app.bundleId, environment: environment.protoEnvironment,
            originalTransactionId: status.originalTransactionId)
    }

    private static func decode(
        _ lifecycle: Lifecycle, environment: AppleEnvironment, number: UInt64, verifier: SignedDataVerifier
    ) throws(DecodingFailure) -> DecodedRun {
        let reports: [LifecycleStepReport]
        do {
            reports = try SignedLifecycle.run(
                lifecycle, app: app, environment: environment, pki: pki, start: start, number: number, seed: 46)
        } catch {
            throw DecodingFailure(description: "\(lifecycle.name) step \(error.step): \(error.description)")
        }
        let decoder: GatewayDecoder
        do {
            decoder = GatewayDecoder(
                verifier: verifier,
                requirements: try VerificationRequirements(
                    bundleID: app.bundleId, appAppleID: app.appAppleId, environment: AppStoreEnvironment(environment)))
        } catch {
            throw DecodingFailure(description: "requirements: \(error)")
        }
        // The simulator's own world, replayed beside the signed run (same inputs, same ids).
        var state = LifecycleState(
            bundleId: app.bundleId, environment: environment, number: number, start: start, seed: 46)
        var steps: [DecodedStep] = []
        for (report, step) in zip(reports, lifecycle.steps) {
            do {
                state = try state.applying(step).state
            } catch {
                throw DecodingFailure(description: "\(lifecycle.name) step \(report.index): \(error)")
            }
            guard state.now == report.instant else {
                throw DecodingFailure(description: "\(lifecycle.name) step \(report.index): the replay is elsewhere")
            }
            let notifications = try report.notifications.map { sent throws(DecodingFailure) in
                try decoder.notification(sent.signedPayload)
            }
            let answers = try report.subscriptions.map { status throws(DecodingFailure) in
                Delivery(
                    label: "statuses", status: .unspecified,
                    transaction: try decoder.transaction(status.signedTransactionInfo),
                    renewalInfo: try decoder.renewalInfo(status.signedRenewalInfo))
            }
            steps.append(
                DecodedStep(
                    index: report.index, instant: report.instant, notifications: notifications,
                    statuses: report.subscriptions, answers: answers, state: state))
        }
        return DecodedRun(name: lifecycle.name, environment: environment, steps: steps)
    }
}

/// The gateway's verification and decoding of one app's signed data. A notification's nested JWS are verified with
/// it; a JWS met again on its own (Get All Subscription Statuses answers the same bytes) is verified once.
private final class GatewayDecoder {
    let verifier: SignedDataVerifier
    let requirements: VerificationRequirements
    private var transactions: [String: SignedTransaction] = [:]
    private var renewals: [String: SignedRenewalInfo] = [:]

    init(verifier: SignedDataVerifier, requirements: VerificationRequirements) {
        self.verifier = verifier
        self.requirements = requirements
    }

    /// A notification's `signedPayload` → its decoded `data.transaction` and `data.renewalInfo` with their JWS.
    func notification(_ jws: String) throws(DecodingFailure) -> Delivery {
        let result = try verified(jws, .notification)
        for nested in result.nestedPayloads where !nested.result.isVerified {
            throw DecodingFailure(
                description: "nested \(nested.field.rawValue): \(nested.result.status): \(nested.result.message)")
        }
        guard case .notification(let notification)? = PayloadDecoder.decode(result), let data = notification.data,
            let transaction = data.transaction, !data.signedTransactionInfo.isEmpty
        else { throw DecodingFailure(description: "a notification without data.transaction") }
        guard (data.renewalInfo == nil) == data.signedRenewalInfo.isEmpty else {
            throw DecodingFailure(description: "data.renewalInfo and data.signedRenewalInfo disagree")
        }
        let label = [notification.notificationTypeRaw, notification.subtypeRaw].filter { !$0.isEmpty }
            .joined(separator: "/")
        let signedTransaction = SignedTransaction(jws: data.signedTransactionInfo, payload: transaction)
        let signedRenewal = data.renewalInfo.map { SignedRenewalInfo(jws: data.signedRenewalInfo, payload: $0) }
        return Delivery(
            label: label, status: data.status, transaction: signedTransaction, renewalInfo: signedRenewal)
    }

    /// A `signedTransactionInfo` → its decoded transaction.
    func transaction(_ jws: String) throws(DecodingFailure) -> SignedTransaction {
        if let known = transactions[jws] { return known }
        guard case .transaction(let payload)? = PayloadDecoder.decode(try verified(jws, .transaction)) else {
            throw DecodingFailure(description: "signedTransactionInfo does not decode to a transaction")
        }
        let snapshot = SignedTransaction(jws: jws, payload: payload)
        transactions[jws] = snapshot
        return snapshot
    }

    /// A `signedRenewalInfo` → its decoded renewal info.
    func renewalInfo(_ jws: String) throws(DecodingFailure) -> SignedRenewalInfo {
        if let known = renewals[jws] { return known }
        guard case .renewalInfo(let payload)? = PayloadDecoder.decode(try verified(jws, .renewalInfo)) else {
            throw DecodingFailure(description: "signedRenewalInfo does not decode to a renewal info")
        }
        let snapshot = SignedRenewalInfo(jws: jws, payload: payload)
        renewals[jws] = snapshot
        return snapshot
    }

    private func verified(_ jws: String, _ kind: SignedDataKind) throws(DecodingFailure) -> VerificationResult {
        let result = verifier.verify(jws, kind: kind, requirements: requirements)
        guard result.isVerified else {
            throw DecodingFailure(description: "\(kind.rawValue): \(result.status): \(result.message)")
        }
        return result
    }
}
