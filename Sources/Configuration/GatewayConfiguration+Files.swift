import AppStoreClient
import AppStoreDomain
import Edge
import Services

// The files the configuration names, read and checked at start-up (and by `check-config`): each layer reads
// one file of its own (`AppKeySigner.load`, `ResumeTokenKeyRing.load`, `AdminBearerToken.load`); these pick the
// paths out of the whole configuration.

extension AppKeySigner {
    /// The key of every app that calls Apple (all but Xcode apps), by bundle id, from their key files.
    package static func loadAll(_ configuration: GatewayConfiguration) throws(ConfigurationError) -> [String:
        any ES256Signer]
    {
        var signers: [String: any ES256Signer] = [:]
        // An Xcode app never calls Apple, so it has no key.
        for (index, app) in configuration.apps.enumerated() where app.environment != .xcode {
            signers[app.bundleId] = try load(
                app: app, index: index, allowReadableFile: configuration.apple.allowReadableKeyFiles)
        }
        return signers
    }
}

extension ResumeTokenKeyRing {
    /// The ring the configuration names, read and checked; nil when `notifications.resumeTokenKeyFile` is unset.
    package static func keys(_ configuration: GatewayConfiguration) throws(ConfigurationError) -> [[UInt8]]? {
        let path = configuration.notifications.resumeTokenKeyFile
        guard !path.isEmpty else { return nil }
        return try load(path: path, allowReadableFile: configuration.apple.allowReadableKeyFiles)
    }
}

extension AdminBearerToken {
    /// The token the configuration names, read and checked; nil when `admin.bearerTokenFile` is unset or the
    /// admin port is off.
    package static func token(_ configuration: GatewayConfiguration) throws(ConfigurationError) -> [UInt8]? {
        let path = configuration.adminBearerTokenFile
        guard configuration.admin != nil, !path.isEmpty else { return nil }
        return try load(path: path, allowReadableFile: configuration.apple.allowReadableKeyFiles)
    }
}

extension TeamWebhook {
    /// The secrets of every `subscriptions.webhooks` entry, in order, read and checked: an unreadable or empty file
    /// is a problem naming its key (`subscriptions.webhooks[0].secretFile`).
    package static func secrets(_ configuration: GatewayConfiguration) throws(ConfigurationError) -> [[[UInt8]]] {
        var secrets: [[[UInt8]]] = []
        for (index, webhook) in configuration.subscriptions.webhooks.enumerated() {
            secrets.append(
                try loadSecrets(
                    path: webhook.secretFile, key: "subscriptions.webhooks[\(index)].secretFile",
                    allowReadableFile: configuration.apple.allowReadableKeyFiles))
        }
        return secrets
    }
}
