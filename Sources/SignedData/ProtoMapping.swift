import ProtoCodec

extension VerificationVerdict {
    /// The contract's wire enum for this verdict.
    package var protoStatus: VerificationStatus {
        switch self {
        case .ok: .ok
        case .malformed: .malformed
        case .unsupportedAlgorithm: .unsupportedAlgorithm
        case .invalidChainLength: .invalidChainLength
        case .invalidCertificate: .invalidCertificate
        case .untrustedChain: .untrustedChain
        case .invalidSignature: .invalidSignature
        case .invalidAppIdentifier: .invalidAppIdentifier
        case .invalidEnvironment: .invalidEnvironment
        case .wrongKind: .wrongKind
        case .retryableFailure: .retryableFailure
        case .unverifiedByDesign: .unverifiedByDesign
        }
    }
}

extension SignedDataKind {
    /// The contract's wire enum for this kind.
    package var protoKind: JWSKind {
        switch self {
        case .transaction: .transaction
        case .renewalInfo: .renewalInfo
        case .notification: .notification
        case .appTransaction: .appTransaction
        case .realtimeRequest: .realtimeRequest
        }
    }

    /// The kind a request asks for; nil for UNSPECIFIED (detect) and for unknown numbers.
    package init?(_ kind: JWSKind) {
        guard let match = Self.allCases.first(where: { $0.protoKind == kind }) else { return nil }
        self = match
    }
}

extension AppStoreEnvironment {
    /// The contract's wire enum for this environment.
    package var protoEnvironment: Environment {
        switch self {
        case .production: .production
        case .sandbox: .sandbox
        case .xcode: .xcode
        case .localTesting: .localTesting
        }
    }

    /// The environment a request names; nil for UNSPECIFIED and unknown numbers.
    package init?(_ environment: Environment) {
        guard let match = Self.allCases.first(where: { $0.protoEnvironment == environment }) else { return nil }
        self = match
    }
}
