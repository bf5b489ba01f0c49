import AppStoreClient
import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The bearer token the admin port asks for (`admin.bearerTokenFile`): who may scrape `/metrics`, whose
/// series name every caller identity, app and rate budget.
///
/// Only an HMAC of the token under a key of this process is kept, and a presented token is checked by
/// comparing its HMAC in constant time (`HMACSHA256.isValid`): how long a refusal takes tells nothing about
/// the token, not even its length. `replace` puts a reloaded token in force while requests read it.
package final class AdminBearerToken: Sendable {
    /// The longest token file read.
    package static let maximumFileBytes = 4096
    /// The shortest token accepted, in characters (`openssl rand -base64 32` writes 44).
    package static let minimumCharacters = 32
    static let configurationKey = "admin.bearerTokenFile"

    private let key: [UInt8]
    private let code: Lock<[UInt8]>

    /// A holder of `token` (its bytes as sent after `Bearer `).
    package init(token: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        code = Lock(HMACSHA256.authenticationCode(key: key, message: token))
    }

    /// Puts `token` in force (a reloaded file).
    package func replace(with token: [UInt8]) {
        let replacement = HMACSHA256.authenticationCode(key: key, message: token)
        code.withLock { $0 = replacement }
    }

    /// Whether `credentials` (what followed `Bearer `) is the token, compared in constant time.
    package func accepts(_ credentials: some Collection<UInt8>) -> Bool {
        let expected = code.withLock { $0 }
        return HMACSHA256.isValid(expected, key: key, message: Array(credentials))
    }

    /// Reads and parses the token file at `path`. It is a secret, so it is judged like the apps' `.p8` keys:
    /// through symlinks (a Kubernetes Secret volume), refused when others may read it or a group other than
    /// the process's own (`KeyFileAccess`), unless `allowReadableFile` (`apple.allowReadableKeyFiles`).
    package static func load(path: String, allowReadableFile: Bool) throws(ConfigurationError) -> [UInt8] {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigurationError(
                key: configurationKey, problem: "cannot read '\(path)' (missing, not accessible or not a file)")
        }
        if !allowReadableFile,
            let problem = KeyFileAccess.problem(
                mode: Int(info.st_mode & 0o777), fileGroup: info.st_gid, processGroups: KeyFileAccess.processGroups())
        {
            throw ConfigurationError(
                key: configurationKey,
                problem: "'\(path)' \(problem); chmod 600 it, or set apple.allowReadableKeyFiles: true")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(key: configurationKey, problem: "cannot read '\(path)'")
        }
        defer { try? handle.close() }
        return try parse([UInt8](handle.readData(ofLength: maximumFileBytes + 1)), path: path)
    }

    /// The token of a token file: one line, spaces and line ends around it ignored (`kubectl create secret
    /// --from-file` keeps the file's newline). It must be an RFC 6750 §2.1 `b64token` (letters, digits,
    /// `-._~+/`, then `=` padding), so a client can send it as is, and at least `minimumCharacters` long. A
    /// problem never quotes the content: it is a secret.
    package static func parse(_ bytes: [UInt8], path: String) throws(ConfigurationError) -> [UInt8] {
        func refuse(_ problem: String) -> ConfigurationError {
            ConfigurationError(key: configurationKey, problem: "'\(path)' \(problem)")
        }
        guard bytes.count <= maximumFileBytes else { throw refuse("is larger than 4 KiB") }
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let token = Array(bytes.drop(while: blank.contains).reversed().drop(while: blank.contains).reversed())
        guard !token.isEmpty else { throw refuse("holds no token") }
        guard isBearerToken(token) else {
            throw refuse("does not hold one bearer token (letters, digits, - . _ ~ + / then = padding, on one line)")
        }
        guard token.count >= minimumCharacters else {
            throw refuse(
                "holds a token of \(token.count) characters; use at least \(minimumCharacters) "
                    + "(e.g. `openssl rand -base64 32`)")
        }
        return token
    }

    /// RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isBearerToken(_ bytes: some Collection<UInt8>) -> Bool {
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, bytes.dropFirst(body.count).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default: "-._~+/".utf8.contains(byte)
            }
        }
    }

    /// What re-reads the token file at `path` when it changes (a Kubernetes Secret update): the new token is
    /// in force at once; a file that fails to load leaves the token in force (the watcher logs it at error level
    /// and counts it as `file="admin_token"`). Never logs the token.
    package func watching(path: String, allowReadableFile: Bool, logger: Logger) -> AccessFileWatcher.Watched {
        AccessFileWatcher.Watched(paths: [path], file: "admin_token", what: "admin bearer token") { [self] in
            replace(with: try Self.load(path: path, allowReadableFile: allowReadableFile))
            logger.info("reloaded the admin bearer token", metadata: ["file": "\(path)"])
        }
    }
}
