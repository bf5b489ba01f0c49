/// How an app's calls pick Apple's environment.
package enum EnvironmentPolicy: String, Sendable, Hashable, CaseIterable {
    /// Production only.
    case production
    /// Sandbox only.
    case sandbox
    /// Production, then sandbox when production does not know the transaction (4040010).
    case auto
    /// Xcode and LocalTesting data only (StoreKit testing): signed by Xcode, not Apple, so VerifyJWS decodes
    /// it without a signature check and says so; Apple's API is never called for such an app.
    case xcode
}

/// One Apple app and its In-App Purchase key.
package struct App: Sendable, Hashable {
    /// What callers put in `app`. `apps[i].name`.
    package var name: String
    /// The app's bundle id (callers may use it as `app` too). `apps[i].bundleId`.
    package var bundleId: String
    /// The App Store app id; required to verify production data. `apps[i].appAppleId`.
    package var appAppleId: Int64?
    /// The In-App Purchase key's issuer id (UUID). `apps[i].issuerId`.
    package var issuerId: String
    /// The key id (10 characters). `apps[i].keyId`.
    package var keyId: String
    /// Path of the `.p8` private key. `apps[i].privateKeyFile`.
    package var privateKeyFile: String
    /// `apps[i].environment`: production, sandbox or auto (default auto).
    package var environment: EnvironmentPolicy
    /// With `auto`, also try sandbox when production answers 401 (some teams' keys only work in
    /// sandbox before release). `apps[i].sandboxFallbackOnUnauthorized`, default false.
    package var sandboxFallbackOnUnauthorized: Bool
    /// This app's rate limits (the global `rateLimits` with `apps[i].rateLimits` applied on top);
    /// nil when the app has no overrides.
    package var rateLimits: RateLimits?
    /// Entitlement name → the product ids that unlock it (`apps[i].entitlements`; many-to-many). Empty: the
    /// subscription state grants no entitlement (statuses are still derived).
    package var entitlements: [String: Set<String>] = [:]

    package init(
        name: String, bundleId: String, appAppleId: Int64?, issuerId: String, keyId: String,
        privateKeyFile: String, environment: EnvironmentPolicy,
        sandboxFallbackOnUnauthorized: Bool = false, rateLimits: RateLimits? = nil
    ) {
        self.name = name
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyFile = privateKeyFile
        self.environment = environment
        self.sandboxFallbackOnUnauthorized = sandboxFallbackOnUnauthorized
        self.rateLimits = rateLimits
    }
}
