extension AppStoreGatewayService {
    /// Transaction history paging.
    package struct History: Sendable, Hashable {
        /// Most pages one `all_pages` GetHistory call fetches. `history.maxPages`, 50.
        package var maxPages = 50
        /// Largest `all_pages` GetHistory response, in bytes: paging stops before the response would grow past
        /// it (then `has_more` and `revision` continue). `history.maxResponseBytes`, 4,000,000 (under the 4 MiB
        /// default receive limit of grpcio, grpc-go and grpc-java).
        package var maxResponseBytes = 4_000_000
        package init() {}
    }
}
