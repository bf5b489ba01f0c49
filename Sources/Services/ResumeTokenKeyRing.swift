import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The keys that authenticate StreamNotifications resume tokens (`notifications.resumeTokenKeyFile`): the
/// first key signs new tokens, every key verifies. Nothing is derived from the apps' keys, so adding or
/// rotating an app key leaves tokens valid, and replicas given the same ring accept each other's tokens.
///
/// Rotation without refusing a valid token: add the new key after the current one (every replica then
/// verifies it), move it to the front once every replica has that ring (it signs from then on), and remove
/// the old key once `notifications.resumeTokenMaxAge` has passed (no unexpired token is signed with it).
/// `replace` swaps in a reloaded ring while calls read it.
package final class ResumeTokenKeyRing: Sendable {
    /// Keys in one ring at most.
    package static let maximumKeys = 16
    /// The size of one key, in bytes: at least HMAC-SHA256's output (RFC 2104 §3), at most 256.
    package static let keyBytes = 32...256
    /// The largest ring file read.
    package static let maximumFileBytes = 64 * 1024
    static let configurationKey = "notifications.resumeTokenKeyFile"

    private let ring: Lock<[[UInt8]]>

    /// A ring of `keys`, the first signing; a ring is never empty (an empty list is a ring of one random key).
    package init(keys: [[UInt8]]) {
        ring = Lock(keys.isEmpty ? [Self.randomKey()] : keys)
    }

    /// A ring of one random key, for this process alone: its tokens survive neither a restart nor a trip to
    /// another replica.
    package static func random() -> ResumeTokenKeyRing { ResumeTokenKeyRing(keys: [randomKey()]) }

    /// The keys in force, the signing key first.
    package var keys: [[UInt8]] { ring.withLock { $0 } }

    /// Puts `keys` in force (a reloaded file); an empty list is ignored.
    package func replace(with keys: [[UInt8]]) {
        guard !keys.isEmpty else { return }
        ring.withLock { $0 = keys }
    }

    /// Reads and parses the ring file at `path`. It holds secrets, so it is judged like the apps' `.p8`
    /// keys: through symlinks (a Kubernetes Secret volume), refused when others may read it or a group other
    /// than the process's own (`KeyFileAccess`), unless `allowReadableFile` (`apple.allowReadableKeyFiles`).
    package static func load(path: String, allowReadableFile: Bool) throws(ConfigurationError) -> [[UInt8]] {
        try KeyFileAccess.check(path, key: configurationKey, allowReadableFile: allowReadableFile)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(key: configurationKey, problem: "cannot read '\(path)'")
        }
        defer { try? handle.close() }
        return try parse([UInt8](handle.readData(ofLength: maximumFileBytes + 1)), path: path)
    }

    /// The keys of a ring file: one key per line in standard base64 (RFC 4648 §4, padded or not, as
    /// `openssl rand -base64 32` writes it), spaces around it ignored; blank lines and lines starting with
    /// `#` are skipped. Each key is 32 to 256 bytes; 1 to 16 keys, none repeated. A problem names the line,
    /// never its content: the content is a secret.
    package static func parse(_ bytes: [UInt8], path: String) throws(ConfigurationError) -> [[UInt8]] {
        func refuse(_ problem: String) -> ConfigurationError {
            ConfigurationError(key: configurationKey, problem: problem)
        }
        guard bytes.count <= maximumFileBytes else { throw refuse("'\(path)' is larger than 64 KiB") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw refuse("'\(path)' is not UTF-8 text")
        }
        var keys: [[UInt8]] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
            let text = String(line)
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            let at = "line \(index + 1) of '\(path)'"
            guard
                let key = Base64.decode(text, variant: .standard) ?? Base64.decode(text, variant: .standardUnpadded)
            else {
                throw refuse("\(at) is not a base64 key (one key per line, # starts a comment)")
            }
            guard keyBytes.contains(key.count) else {
                throw refuse(
                    "\(at) holds a \(key.count)-byte key; a key is 32 to 256 random bytes "
                        + "(e.g. `openssl rand -base64 32`)")
            }
            guard !keys.contains(key) else { throw refuse("\(at) repeats an earlier key") }
            guard keys.count < maximumKeys else { throw refuse("'\(path)' holds more than \(maximumKeys) keys") }
            keys.append(key)
        }
        guard !keys.isEmpty else {
            throw refuse("'\(path)' holds no key (one base64 key of 32 or more random bytes per line)")
        }
        return keys
    }

    private static func randomKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
