import AppStoreDomain
import FoundationEssentials
import GRPC
import GatewayFoundation
import Metrics
import ProtoCodec
import SignedData

/// VerifyJWS: Apple's chain of trust and signature rules on a caller's JWS, with typed payloads.
///
/// A JWS that fails verification is a normal answer (status OK, a failing `VerificationStatus` and a
/// message); RPC errors are only for requests the gateway cannot act on (an unknown app, a bad enum).
///
/// Never on an event loop: a full chain validation (on the verification pool) or an OCSP fetch (online checks,
/// awaited in a task).
///
/// Fail-closed: the payload is bound to an app (the named one, else the only configured one) and to the
/// environments that app's policy allows, as Apple's own verifier requires a bundle id and an environment.
/// Only `verification.allowUnboundVerification` lets an empty `app` verify signature and chain alone.
package struct VerifyJWSHandler: Sendable {
    let verifier: SignedDataVerifier
    let apps: AppDirectory
    var allowUnboundVerification = false
    /// Where uncached chains are validated (nil: inline, for tests of the verdicts alone).
    var pool: VerificationPool?
    /// Where each answer's verdict counts.
    var verifications = VerificationMetrics(registry: MetricsRegistry())

    /// The checked request: what to ask the verifier.
    struct Plan: Sendable {
        let kind: SignedDataKind?
        let requirements: VerificationRequirements
    }

    func verify(_ request: VerifyJWSRequest) throws(GatewayError) -> VerifyJWSResponse {
        let plan = try plan(request)
        return response(to: verifier.verify(request.jws, kind: plan.kind, requirements: plan.requirements))
    }

    /// On the event loop: the answer when the chain (or its recent failure) is cached, else the full
    /// validation as a task through the pool, refused with RESOURCE_EXHAUSTED + RetryInfo when it is full.
    func answer(_ request: VerifyJWSRequest) -> TypedInlineOrTask<VerifyJWSResponse> {
        let plan: Plan
        do throws(GatewayError) {
            plan = try self.plan(request)
        } catch {
            return .done(.failure(error.rpcStatus))
        }
        if let result = verifier.verifyIfChainCached(request.jws, kind: plan.kind, requirements: plan.requirements) {
            return .done(.success(response(to: result)))
        }
        let verifier = self.verifier
        let jws = request.jws
        guard let pool else {
            // Tests of the verdicts alone: inline, or with online checks in a task that awaits the OCSP fetch.
            guard verifier.configuration.onlineChecks else {
                return .done(
                    .success(response(to: verifier.verify(jws, kind: plan.kind, requirements: plan.requirements))))
            }
            return .task {
                let result = await verifier.verifyOnline(jws, kind: plan.kind, requirements: plan.requirements)
                return .success(response(to: result))
            }
        }
        return .task {
            // Chain validation on the pool; OCSP fetches (online checks) awaited in this task, on no thread.
            let result = await verifier.verifyOnline(
                jws, kind: plan.kind, requirements: plan.requirements, running: { await pool.run($0) })
            guard let result else {
                return .failure(GatewayError.verificationBusy(retryAfter: .milliseconds(200)).rpcStatus)
            }
            return .success(response(to: result))
        }
    }

    /// Checks `request` (contract limits, enums, app and environment binding) without verifying anything.
    func plan(_ request: VerifyJWSRequest) throws(GatewayError) -> Plan {
        try request.checkContract()
        var kind: SignedDataKind?
        if request.kind != .unspecified {
            guard let asked = SignedDataKind(request.kind) else {
                throw GatewayError.invalidArgument(field: "kind", problem: "unknown JWSKind \(request.kind.rawValue)")
            }
            kind = asked
        }
        var environment: AppStoreEnvironment?
        if request.environment != .unspecified {
            guard let asked = AppStoreEnvironment(request.environment) else {
                throw GatewayError.invalidArgument(
                    field: "environment", problem: "unknown Environment \(request.environment.rawValue)")
            }
            environment = asked
        }
        do {
            if request.app.isEmpty, allowUnboundVerification {
                return Plan(kind: kind, requirements: try VerificationRequirements(environment: environment))
            }
            // An empty `app` is the only configured app; with several it is INVALID_ARGUMENT (AppDirectory).
            let app = try apps.app(named: request.app)
            if app.environment == .xcode {
                // Xcode's own data, unverifiable by design: accepted only here, for an app configured for it.
                let accepted: Set<AppStoreEnvironment> = environment.map { [$0] } ?? [.xcode, .localTesting]
                return Plan(
                    kind: kind,
                    requirements: try VerificationRequirements(
                        bundleID: app.bundleId, appAppleID: app.appAppleId, acceptedEnvironments: accepted
                    ).acceptingUnverified(accepted))
            }
            if let environment {
                return Plan(
                    kind: kind,
                    requirements: try VerificationRequirements(
                        bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment))
            }
            return Plan(
                kind: kind,
                requirements: try VerificationRequirements(
                    bundleID: app.bundleId, appAppleID: app.appAppleId,
                    acceptedEnvironments: Self.accepted(by: app.environment)))
        } catch let error as SignedDataConfigurationError {
            throw GatewayError.invalidArgument(field: "app", problem: error.description)
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError.internalBug("unexpected error \(error)", requestID: nil)
        }
    }

    /// The environments an app's configured policy accepts when the request names none.
    package static func accepted(by policy: EnvironmentPolicy) -> Set<AppStoreEnvironment>? {
        switch policy {
        case .production: [.production]
        case .sandbox: [.sandbox, .xcode]
        case .auto: nil
        case .xcode: [.xcode, .localTesting]
        }
    }

    /// The answer for a verification result.
    func response(to result: VerificationResult) -> VerifyJWSResponse {
        verifications.verification(verdict: result.status.rawValue)
        var signedDate: ProtoTimestamp?
        if let date = result.signedDate,
            let milliseconds = Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded())
        {
            signedDate = ProtoTimestamp(unixMilliseconds: milliseconds)
        }
        // The decoded payload (nil unless verified or unverified by design) goes into the answer as it is.
        return VerifyJWSResponse(
            status: result.status.protoStatus, message: result.message, kind: result.kind?.protoKind ?? .unspecified,
            signedDate: signedDate, environment: result.environment?.protoEnvironment ?? .unspecified,
            payload: PayloadDecoder.decode(result))
    }
}
