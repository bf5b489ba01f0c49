import AppStoreDomain
import Cryptography
import Foundation

/// Signs request JWTs with an app's In-App Purchase key (ES256 over OpenSSL, raw R‖S).
///
/// The key never leaves this type: it has no description of its contents, and every error it throws
/// names the configuration key and the file, never the key material.
package struct AppKeySigner: ES256Signer, CustomStringConvertible {
    private let key: ECPrivateKey
    /// The public half, for tests and for logging a fingerprint-free identity check.
    package let publicKey: ECPublicKey

    /// A signer for a P-256 private key; nil for another curve or an unusable key.
    package init?(key: ECPrivateKey) {
        guard key.curve == .p256, let publicKey = try? key.publicKey else { return nil }
        self.key = key
        self.publicKey = publicKey
    }

    package func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        try key.signature(for: signingInput)
    }

    package var description: String { "AppKeySigner(P-256)" }

    /// Loads `apps[index].privateKeyFile`: an unencrypted PKCS#8 PEM P-256 key (Apple's `.p8`).
    ///
    /// Follows symlinks and judges the file they lead to (`KeyFileAccess`): refused when others may read it,
    /// or a group other than the process's own, unless `allowReadableFile`, since the key signs for the
    /// whole App Store Connect team. Errors are `ConfigurationError`s naming `apps[i].privateKeyFile`.
    package static func load(
        app: App, index: Int, allowReadableFile: Bool
    ) throws(ConfigurationError) -> AppKeySigner {
        let key = "apps[\(index)].privateKeyFile"
        let path = app.privateKeyFile
        try KeyFileAccess.check(path, key: key, allowReadableFile: allowReadableFile)
        guard let data = FileManager.default.contents(atPath: path), data.count <= 64 * 1024 else {
            throw ConfigurationError(key: key, problem: "cannot read '\(path)' (unreadable or larger than 64 KiB)")
        }
        let pem = String(decoding: data, as: UTF8.self)
        let problem =
            "'\(path)' is not an unencrypted PKCS#8 PEM P-256 private key (an App Store Connect In-App "
            + "Purchase .p8 key)"
        let privateKey: ECPrivateKey
        do {
            privateKey = try ECPrivateKey(pkcs8PEM: pem)
        } catch {
            // The OpenSSL reason is safe to show (it never quotes key bytes); the file content is not shown.
            throw ConfigurationError(key: key, problem: "\(problem): \(error.reason)")
        }
        guard let signer = AppKeySigner(key: privateKey) else {
            throw ConfigurationError(key: key, problem: "\(problem): the key is on \(privateKey.curve), not P-256")
        }
        return signer
    }
}
