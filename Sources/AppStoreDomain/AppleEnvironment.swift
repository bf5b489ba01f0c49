/// One of Apple's two server environments (Apple's App Store Server API documentation).
public enum AppleEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `api.storekit.apple.com`.
    case production
    /// `api.storekit-sandbox.apple.com` (also TestFlight).
    case sandbox

    /// The spelling Apple uses in JSON payloads (`Production`, `Sandbox`).
    public var appleName: String {
        switch self {
        case .production: "Production"
        case .sandbox: "Sandbox"
        }
    }

    /// The lowercase config spelling (`production`, `sandbox`), also used in error metadata.
    public var description: String { rawValue }
}
