/// One of Apple's two server environments (Apple's App Store Server API documentation).
package enum AppleEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `api.storekit.apple.com`.
    case production
    /// `api.storekit-sandbox.apple.com` (also TestFlight).
    case sandbox

    /// The spelling Apple uses in JSON payloads (`Production`, `Sandbox`).
    package var appleName: String {
        switch self {
        case .production: "Production"
        case .sandbox: "Sandbox"
        }
    }

    /// The lowercase config spelling (`production`, `sandbox`), also used in error metadata.
    package var description: String { rawValue }
}
