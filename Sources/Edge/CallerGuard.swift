import AppStoreDomain
import CallerAuthentication
import GRPC
import HTTPServer
import Metrics
import ProtoCodec
import Services

/// The gateway's `CallGuard`: authentication and the `callers` policy, with refusals as `GatewayError`s (so
/// their status comes from the one mapping) and counted by reason.
package final class CallerGuard: CallGuard {
    package let authenticator: CallerAuthenticator
    /// `tls.identityFromCommonName`: a client certificate's subject CN counts as a name (`cn:<name>`).
    package let identityFromCommonName: Bool
    private let metrics: CallerAccessMetrics

    /// Refusals and listed callers' admissions count in `metrics`.
    package init(
        authenticator: CallerAuthenticator, identityFromCommonName: Bool = false,
        metrics: CallerAccessMetrics = CallerAccessMetrics(registry: MetricsRegistry())
    ) {
        self.authenticator = authenticator
        self.identityFromCommonName = identityFromCommonName
        self.metrics = metrics
    }

    package func admit(method: String, metadata: [(name: String, value: String)], peer: PeerCertificateIdentity?)
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
            // Callers without `permissions` (and every caller in open mode) hold all four: no lookup.
            if let caller, caller.permissions != .all,
                let refusal = caller.refusal(needing: MethodPermissions.required(forMethod: method), method: method)
            {
                metrics.callRefused(reason: refusal.reason)
                return .failure(GatewayError.permissionDenied(refusal).rpcStatus)
            }
            if let caller, caller.listed { metrics.callerAdmitted(caller.identity) }
            return .success(caller)
        case .failure(.unauthenticated(let failure)):
            metrics.callRefused(reason: failure.rawValue)
            return .failure(GatewayError.unauthenticated(failure).rpcStatus)
        case .failure(.permissionDenied(let refusal)):
            metrics.callRefused(reason: refusal.reason)
            return .failure(GatewayError.permissionDenied(refusal).rpcStatus)
        }
    }

    package func authorize(_ caller: (any AdmittedCaller)?, app: String, method: String) -> RPCStatus? {
        // `caller` is what `admit` returned: a `CallerIdentity` or nil.
        let caller = caller as? CallerIdentity
        guard let refusal = authenticator.withPolicy({ $0.authorize(caller, app: app) }) else { return nil }
        metrics.callRefused(reason: refusal.reason)
        return GatewayError.permissionDenied(refusal).rpcStatus
    }

    /// After a reload of `callers`: an open call goes on only if its caller is still listed, still holds the
    /// method's permission and may still use every app the call was allowed (counted like any refusal).
    package func recheck(_ caller: (any AdmittedCaller)?, method: String, apps: [String]) -> RPCStatus? {
        // Anonymous calls exist in open mode only, which a reload never closes.
        guard let caller = caller as? CallerIdentity else { return nil }
        let refusal: AccessRefusal? = authenticator.withPolicy { policy in
            switch policy.admit([caller.name]) {
            case .failure(let refusal): return refusal
            case .success(let current):
                guard let current else { return nil }
                if let refusal = current.refusal(needing: MethodPermissions.required(forMethod: method), method: method)
                {
                    return refusal
                }
                return apps.lazy.compactMap { policy.authorize(current, app: $0) }.first
            }
        }
        guard let refusal else { return nil }
        metrics.callRefused(reason: refusal.reason)
        return GatewayError.permissionDenied(refusal).rpcStatus
    }
}

extension CallerIdentity: AdmittedCaller {
    /// The identity as configured (or the name's notation).
    package var displayName: String { identity }

    /// Runs `body` with this caller as `CallerIdentity.current` (the rate budget's fair share reads it).
    package func bindingCurrent<Result: Sendable>(_ body: () async -> Result) async -> Result {
        await Self.$current.withValue(self) { await body() }
    }
}
