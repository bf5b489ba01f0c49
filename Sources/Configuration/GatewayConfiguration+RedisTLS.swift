import Redis

extension RedisTLSFiles {
    /// The files the `redis` keys name.
    public init(_ redis: GatewayConfiguration.Redis) {
        self.init(caFile: redis.caFile, certFile: redis.certFile, keyFile: redis.keyFile)
    }
}
