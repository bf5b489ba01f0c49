import Cryptography
import GRPC
import GatewayCore
import ProtoCodec
import SignedData

/// appstore.gateway.v1.AppStoreGateway: the three RPCs of the public contract.
public struct AppStoreGatewayService: GRPCService {
    /// The service's full name, as health checks and reflection name it.
    public static let name = "appstore.gateway.v1.AppStoreGateway"

    private let verifyJWS: VerifyJWSHandler

    /// Builds the service from the configuration: the trusted roots are read and checked here, so a bad
    /// file fails start-up rather than the first call.
    public init(configuration: GatewayConfiguration) throws(ConfigurationError) {
        var roots: [Certificate] = []
        if configuration.verification.rootCertificates.isEmpty || configuration.verification.trustBuiltInAppleRoot {
            do {
                roots.append(try Certificate(derEncoded: AppleRootCertificates.rootCAG3))
            } catch {
                throw ConfigurationError(key: "verification.rootCertificates", problem: "the built-in Apple root: \(error)")
            }
        }
        for (index, path) in configuration.verification.rootCertificates.enumerated() {
            do {
                roots.append(try Certificate(contentsOfFile: path))
            } catch {
                throw ConfigurationError(
                    key: "verification.rootCertificates[\(index)]",
                    problem: "cannot load a DER or PEM certificate from '\(path)': \(error)")
            }
        }
        var verifierConfiguration = SignedDataVerifier.Configuration(trustedRoots: roots)
        verifierConfiguration.chainCacheCapacity = configuration.verification.chainCacheSize
        verifierConfiguration.validationTime = configuration.verification.useCurrentTime ? .now : .signedDate
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(configuration: verifierConfiguration)
        } catch {
            throw ConfigurationError(key: "verification", problem: "\(error)")
        }
        verifyJWS = VerifyJWSHandler(verifier: verifier, apps: AppDirectory(configuration.apps))
    }

    public var methods: [String: MethodHandler] {
        let verifyJWS = self.verifyJWS
        return [
            "/\(Self.name)/GetHistory": .unary(GetHistoryRequest.self) {
                _, _ throws(RPCStatus) -> GetHistoryResponse in
                throw RPCStatus(.unimplemented, "GetHistory is not available in this build yet (upstream client pending)")
            },
            "/\(Self.name)/StreamNotifications": .serverStreaming(StreamNotificationsRequest.self, NotificationEvent.self) {
                _, _, _ throws(RPCStatus) in
                throw RPCStatus(.unimplemented, "StreamNotifications is not available in this build yet (upstream client pending)")
            },
            // Inline on the event loop: a warm verification is one ECDSA verify plus parsing.
            "/\(Self.name)/VerifyJWS": .unaryInline(VerifyJWSRequest.self) { request, _ -> Result<VerifyJWSResponse, RPCStatus> in
                do throws(GatewayError) {
                    return .success(try verifyJWS.verify(request))
                } catch {
                    return .failure(error.rpcStatus)
                }
            },
        ]
    }
}
