/// The configured apps, found by the name callers put in `app` (an app's name or its bundle id).
package struct AppDirectory: Sendable {
    /// Every configured app, in configuration order.
    package let apps: [App]
    private let byAlias: [String: Int]
    private let byBundleID: [String: Int]

    package init(_ apps: [App]) {
        self.apps = apps
        var byAlias: [String: Int] = [:]
        for (index, app) in apps.enumerated() {
            byAlias[app.name] = index
            byAlias[app.bundleId] = index
        }
        self.byAlias = byAlias
        byBundleID = Dictionary(apps.enumerated().map { ($1.bundleId, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The app whose bundle id is `bundleId` (what Apple's signed data names), or nil.
    package func app(bundleId: String) -> App? { byBundleID[bundleId].map { apps[$0] } }

    /// The app a request names. An empty name is allowed when exactly one app is configured.
    package func app(named name: String) throws(GatewayError) -> App {
        if name.isEmpty {
            guard apps.count == 1 else {
                throw GatewayError.invalidArgument(
                    field: "app",
                    problem: apps.isEmpty
                        ? "no app is configured on this gateway"
                        : "is required when several apps are configured (\(apps.map(\.name).joined(separator: ", ")))")
            }
            return apps[0]
        }
        guard let index = byAlias[name] else { throw GatewayError.unknownApp(name) }
        return apps[index]
    }
}
