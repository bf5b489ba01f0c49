import AppStoreDomain
import Redis

extension RedisTLSContext {
    /// Why the `redis` keys' TLS files cannot be loaded, naming the key; nil when they load or the URL is not
    /// `rediss://`. Start-up and `check-config` ask, so a bad file stops the gateway instead of every connect. The
    /// client key is a secret: a file others may read is refused like an app's `.p8` (`KeyFileAccess`), unless
    /// `allowReadableKeyFiles` (`apple.allowReadableKeyFiles`).
    package static func problem(
        _ redis: SharedRateBudget.Settings, allowReadableKeyFiles: Bool = false
    ) -> ConfigurationError? {
        guard redis.url?.tls == true else { return nil }
        let files = RedisTLSFiles(redis)
        if !files.keyFile.isEmpty {
            do {
                try KeyFileAccess.check(files.keyFile, key: "redis.keyFile", allowReadableFile: allowReadableKeyFiles)
            } catch {
                return error
            }
        }
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
