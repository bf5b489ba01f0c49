import AppStoreDomain
import CallerAuthentication
import GRPC
import HTTPServer
import ProtoCodec

/// The gateway's `CallGuard`: authentication and the `callers` policy, with refusals as `GatewayError`s (so
/// their status comes from the one mapping) and counted by reason.
public final class CallerGuard: CallGuard {
    public let authenticator: CallerAuthenticator
    /// `tls.identityFromCommonName`: a client certificate's subject CN counts as a name (`cn:<name>`).
    public let identityFromCommonName: Bool
    private let events: any AccessEvents

    public init(
        authenticator: CallerAuthenticator, identityFromCommonName: Bool = false,
        events: any AccessEvents = SilentAccessEvents()
    ) {
        self.authenticator = authenticator
        self.identityFromCommonName = identityFromCommonName
        self.events = events
    }

    public func admit(method: String, metadata: [(name: String, value: String)], peer: PeerCertificateIdentity?)
        -> Result<(any AdmittedCaller)?, RPCStatus>
    {
        let authorization = metadata.first(where: { $0.name == "authorization" })?.value
        let names = peer.map {
            CallerName.certificateNames(
                uris: $0.uriNames, dnsNames: $0.dnsNames, commonName: $0.commonName,
                includeCommonName: identityFromCommonName)
        }
        switch authenticator.authenticate(authorization: authorization, certificateNames: names) {
        case .success(let caller):
            if let caller, caller.listed { events.callerAdmitted(caller: caller.identity) }
            return .success(caller)
        case .failure(.unauthenticated(let failure)):
            events.callRefused(reason: failure.rawValue)
            return .failure(GatewayError.unauthenticated(failure).rpcStatus)
        case .failure(.permissionDenied(let refusal)):
            events.callRefused(reason: refusal.reason)
            return .failure(GatewayError.permissionDenied(refusal).rpcStatus)
        }
    }

    public func authorize(_ caller: (any AdmittedCaller)?, app: String, method: String) -> RPCStatus? {
        // `caller` is what `admit` returned: a `CallerIdentity` or nil.
        guard let refusal = authenticator.policy.authorize(caller as? CallerIdentity, app: app) else { return nil }
        events.callRefused(reason: refusal.reason)
        return GatewayError.permissionDenied(refusal).rpcStatus
    }
}

extension CallerIdentity: AdmittedCaller {
    /// The identity as configured (or the name's notation).
    public var displayName: String { identity }

    /// Runs `body` with this caller as `CallerIdentity.current` (the rate budget's fair share reads it).
    public func bindingCurrent<Result: Sendable>(_ body: () async -> Result) async -> Result {
        await Self.$current.withValue(self) { await body() }
    }
}
