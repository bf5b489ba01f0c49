import Cryptography
import Foundation

/// A throwaway PKI for a TLS redis-server: a CA, a server certificate for `serverNames` and a client
/// certificate (for `tls-auth-clients yes`), all issued by the CA, and a second, unrelated CA whose trust must
/// get nobody in. PEM files in a temporary folder, removed on deinit.
package final class RedisTLSFixture {
    /// The folder holding the files.
    package let directory: URL
    /// The CA that issued the server and client certificates.
    package var caFile: String { path("ca.pem") }
    /// A CA that issued nothing here.
    package var otherCAFile: String { path("other-ca.pem") }
    /// The server's certificate and key.
    package var serverCertificateFile: String { path("server.pem") }
    package var serverKeyFile: String { path("server-key.pem") }
    /// A client certificate and key issued by `caFile`'s CA.
    package var clientCertificateFile: String { path("client.pem") }
    package var clientKeyFile: String { path("client-key.pem") }

    /// Issues everything; the server certificate names `serverNames` (DNS names and IP addresses).
    package init(serverNames: [String] = ["localhost", "127.0.0.1"]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let now = Date()
        func template(_ name: String, serial: UInt64, role: CertificateTemplate.Role, names: [String] = [])
            -> CertificateTemplate
        {
            CertificateTemplate(
                subject: DistinguishedName(commonName: name), serialNumber: serial,
                notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(3600), role: role,
                subjectAlternativeNames: names)
        }
        let ca = try CertificateIssuer.selfSignedRoot(
            template("Redis Test CA", serial: 1, role: .certificateAuthority(pathLength: 0)),
            key: try ECPrivateKey(generatingOn: .p256))
        let other = try CertificateIssuer.selfSignedRoot(
            template("Other Test CA", serial: 1, role: .certificateAuthority(pathLength: 0)),
            key: try ECPrivateKey(generatingOn: .p256))
        let serverKey = try ECPrivateKey(generatingOn: .p256)
        let server = try ca.issue(
            template("redis server", serial: 2, role: .endEntity, names: serverNames), for: serverKey.publicKey)
        let clientKey = try ECPrivateKey(generatingOn: .p256)
        let client = try ca.issue(template("appstore-gateway", serial: 3, role: .endEntity), for: clientKey.publicKey)
        try write(ca.certificate.pemEncoded, "ca.pem")
        try write(other.certificate.pemEncoded, "other-ca.pem")
        try write(server.pemEncoded, "server.pem")
        try write(try serverKey.pkcs8PEM(), "server-key.pem", secret: true)
        try write(client.pemEncoded, "client.pem")
        try write(try clientKey.pkcs8PEM(), "client-key.pem", secret: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Writes `name`; a `secret` (a key) readable by its owner only, as the gateway demands of key files.
    private func write(_ text: String, _ name: String, secret: Bool = false) throws {
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        if secret { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path) }
    }
}
