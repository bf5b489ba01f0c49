import Redis

extension SharedRateBudget {
    /// The Redis that holds the rate budget shared by every replica (keys under `redis`). Without
    /// `redis.url` each replica spends `rateLimits` on its own, as before.
    package struct Settings: Sendable, Hashable {
        /// `redis.url`: `redis://[[user]:password@]host[:port][/db]`, or `rediss://…` for TLS; nil (absent or
        /// empty) = per-replica buckets.
        package var url: RedisURL?
        /// `redis.caFile`: PEM CA certificates that verify a `rediss://` server (whose certificate must also
        /// name the URL's host). Default "" = the system's CAs.
        package var caFile = ""
        /// `redis.certFile` / `redis.keyFile`: a PEM client certificate chain and its key for a `rediss://`
        /// server that asks for one (`tls-auth-clients yes`). Default "" = none.
        package var certFile = ""
        package var keyFile = ""
        /// `redis.keyPrefix`: prepended to every key, so several gateways can share one Redis. Default
        /// "appstore-gateway:".
        package var keyPrefix = "appstore-gateway:"
        /// `redis.timeout`: the longest one Redis command (and the connect) may take before this replica
        /// falls back to its local share. Default 50ms.
        package var timeout: Duration = .milliseconds(50)
        /// `redis.fallbackShare`: the share of each budget one replica spends on its own while Redis is
        /// unreachable; 1 / the expected number of replicas. Default 1/3.
        package var fallbackShare = 1.0 / 3.0

        package init() {}
    }
}

extension RedisTLSFiles {
    /// The files the `redis` keys name.
    package init(_ redis: SharedRateBudget.Settings) {
        self.init(caFile: redis.caFile, certFile: redis.certFile, keyFile: redis.keyFile)
    }
}
