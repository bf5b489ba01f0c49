import AppStoreDomain

extension UpstreamHTTPClient {
    /// The client for the gateway's `apple` keys (CA file, system CAs, connect timeout), its thread started.
    public convenience init(_ apple: AppStoreAPIClient.Apple) throws(ConfigurationError) {
        var configuration = Configuration(
            caFile: apple.caFile, connectTimeout: apple.connectTimeout)
        configuration.trustSystemCAs = apple.trustSystemCAs
        do {
            try self.init(configuration: configuration)
        } catch {
            throw ConfigurationError(key: "apple", problem: "cannot start the upstream HTTP client: \(error)")
        }
    }
}
