import GRPC
import GatewayCore
import ProtoCodec
import SignedData

/// VerifyJWS: Apple's chain of trust and signature rules on a caller's JWS, with typed payloads.
///
/// A JWS that fails verification is a normal answer (status OK, a failing `VerificationStatus` and a
/// message); RPC errors are only for requests the gateway cannot act on (an unknown app, a bad enum).
struct VerifyJWSHandler: Sendable {
    let verifier: SignedDataVerifier
    let apps: AppDirectory
    var events: any GatewayEvents = SilentGatewayEvents()

    func verify(_ request: VerifyJWSRequest) throws(GatewayError) -> VerifyJWSResponse {
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
        var requirements = VerificationRequirements.none
        do {
            if request.app.isEmpty {
                requirements = try VerificationRequirements(environment: environment)
            } else {
                let app = try apps.app(named: request.app)
                requirements = try VerificationRequirements(
                    bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment)
            }
        } catch let error as SignedDataConfigurationError {
            throw GatewayError.invalidArgument(field: "app", problem: error.description)
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError.internalBug("unexpected error \(error)", requestID: nil)
        }

        let result = verifier.verify(request.jws, kind: kind, requirements: requirements)
        events.verification(verdict: "\(result.status)")
        var response = VerifyJWSResponse()
        response.status = result.status.protoStatus
        response.message = result.message
        if let kind = result.kind { response.kind = kind.protoKind }
        if let date = result.signedDate {
            response.signedDate = ProtoTimestamp(unixMilliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))
        }
        if result.status == .ok, let payload = PayloadDecoder.decode(result) {
            switch payload {
            case .transaction(let transaction): response.payload = .transaction(transaction)
            case .renewalInfo(let renewal): response.payload = .renewalInfo(renewal)
            case .notification(let notification): response.payload = .notification(notification)
            case .appTransaction(let appTransaction): response.payload = .appTransaction(appTransaction)
            }
        }
        return response
    }
}
