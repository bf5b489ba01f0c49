import Foundation
import GatewayFoundation

/// Where a notification carries a nested JWS.
package enum NestedPayloadField: String, Sendable, Hashable {
    /// `data.signedTransactionInfo`
    case signedTransactionInfo
    /// `data.signedRenewalInfo`
    case signedRenewalInfo
    /// `appData.signedAppTransactionInfo`
    case signedAppTransactionInfo

    /// The kind the nested payload must be.
    package var kind: SignedDataKind {
        switch self {
        case .signedTransactionInfo: .transaction
        case .signedRenewalInfo: .renewalInfo
        case .signedAppTransactionInfo: .appTransaction
        }
    }
}

/// The outcome of verifying one JWS.
package struct VerificationResult: Sendable {
    /// The verdict.
    package let status: VerificationVerdict
    /// Why, in words a person can act on (`"verified"` when OK).
    package let message: String
    /// What the payload is, once known (nil when the JWS could not be parsed that far).
    package let kind: SignedDataKind?
    /// The payload's `signedDate` (`receiptCreationDate` for app transactions), when present, in whole
    /// milliseconds (Xcode's fractions truncated); always inside `AppleDateRange` (a payload with a date outside
    /// is `malformed`).
    package let signedDate: Date?
    /// The environment the payload names (`environment`, or `receiptType` for app transactions), once
    /// the payload could be read; nil when absent or unknown.
    package let environment: AppStoreEnvironment?
    /// The decoded payload JSON exactly as Apple sent it. Set only once the signature has verified, so a
    /// caller can never mistake unauthenticated bytes for Apple's; it stays set when a later binding or
    /// kind check fails, for diagnostics.
    package let rawJSON: Data?
    /// For notifications: each nested JWS, verified the same way (in payload order).
    package let nestedPayloads: [NestedPayload]
    /// `rawJSON` as the verifier parsed it, so `PayloadDecoder` need not parse the same bytes again.
    let payloadObject: JSONMembers?

    /// Whether the status is `.ok`.
    package var isVerified: Bool { status == .ok }

    /// A `retryableFailure`: nothing is wrong with the data, a check could not be made now.
    static func retryable(_ message: String) -> VerificationResult {
        VerificationResult(status: .retryableFailure, message: message)
    }

    init(
        status: VerificationVerdict, message: String, kind: SignedDataKind? = nil, signedDate: Date? = nil,
        environment: AppStoreEnvironment? = nil, rawJSON: Data? = nil, payloadObject: JSONMembers? = nil,
        nestedPayloads: [NestedPayload] = []
    ) {
        self.status = status
        self.environment = environment
        self.payloadObject = payloadObject
        self.message = message
        self.kind = kind
        self.signedDate = signedDate
        self.rawJSON = rawJSON
        self.nestedPayloads = nestedPayloads
    }
}

/// A nested JWS of a notification and its own verification result.
package struct NestedPayload: Sendable {
    /// Where it was found.
    package let field: NestedPayloadField
    /// Its verification result.
    package let result: VerificationResult
}

/// The app and environment a payload must belong to (Apple's App Store Server API documentation). Unset fields are not
/// checked.
package struct VerificationRequirements: Sendable, Hashable {
    /// Bundle id the payload must carry (not checked for renewal info, which has none).
    package let bundleID: String?
    /// App Apple id; required to bind Production notifications and app transactions.
    package let appAppleID: Int64?
    /// Environment the payload must be in.
    package let environment: AppStoreEnvironment?
    /// Environments the payload may be in (nil: any); `[environment]` when `environment` is set.
    package let acceptedEnvironments: Set<AppStoreEnvironment>?
    /// Environments whose data is decoded without any signature or chain check, as Apple's verifier does for
    /// Xcode and LocalTesting data (signed by Xcode, not Apple): the result is `.unverifiedByDesign`. Empty
    /// (the default) for every app not explicitly configured for such data.
    package private(set) var unverifiedEnvironments: Set<AppStoreEnvironment> = []

    /// No binding: signature and chain only.
    package static let none = VerificationRequirements(unchecked: nil, nil, nil, accepted: nil)

    /// Requirements for one app whose payload may be in any of `acceptedEnvironments` (nil: any), as an
    /// app's configured environment policy allows. Production data is always bound by the app Apple id too.
    package init(bundleID: String, appAppleID: Int64?, acceptedEnvironments: Set<AppStoreEnvironment>?)
        throws(SignedDataConfigurationError)
    {
        if acceptedEnvironments == [.production] {
            try self.init(bundleID: bundleID, appAppleID: appAppleID, environment: .production)
            return
        }
        self.init(unchecked: bundleID, appAppleID, nil, accepted: acceptedEnvironments)
    }

    /// These requirements, also accepting data of `environments` unverified (only Xcode and LocalTesting are
    /// allowed: Apple signs everything else). Bundle id and environment are still checked.
    package func acceptingUnverified(_ environments: Set<AppStoreEnvironment>) -> VerificationRequirements {
        var copy = self
        copy.unverifiedEnvironments = environments.intersection([.xcode, .localTesting])
        return copy
    }

    /// Requirements for one app. Binding Production data to a bundle needs the app Apple id too, as in
    /// Apple's libraries, so that combination without one throws.
    package init(bundleID: String? = nil, appAppleID: Int64? = nil, environment: AppStoreEnvironment? = nil)
        throws(SignedDataConfigurationError)
    {
        if environment == .production, bundleID != nil, appAppleID == nil {
            throw SignedDataConfigurationError(
                "binding Production data to \(bundleID ?? "") needs the app's Apple id (appAppleId) as well")
        }
        self.init(unchecked: bundleID, appAppleID, environment, accepted: environment.map { [$0] })
    }

    private init(
        unchecked bundleID: String?, _ appAppleID: Int64?, _ environment: AppStoreEnvironment?,
        accepted: Set<AppStoreEnvironment>?
    ) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.acceptedEnvironments = accepted
    }
}

/// A verifier or requirement set that cannot work as configured.
package struct SignedDataConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
