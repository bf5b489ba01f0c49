import Configuration
import Redis

extension RedisTLSContext {
    /// Why the `redis` keys' TLS files cannot be loaded, naming the key; nil when they load or the URL is not
    /// `rediss://`. Start-up and `check-config` ask, so a bad file stops the gateway instead of every connect.
    package static func problem(_ redis: GatewayConfiguration.Redis) -> ConfigurationError? {
        guard redis.url?.tls == true else { return nil }
        let files = RedisTLSFiles(redis)
        do {
            _ = try RedisTLSContext(files: RedisTLSFiles(caFile: files.caFile))
        } catch {
            return ConfigurationError(key: "redis.caFile", problem: error.message)
        }
        do {
            _ = try RedisTLSContext(files: files)
        } catch {
            return ConfigurationError(key: "redis.certFile", problem: error.message)
        }
        return nil
    }
}
