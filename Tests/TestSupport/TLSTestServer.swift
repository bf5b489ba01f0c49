import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer

/// An HTTPS server for tests: the project's HTTP server with TLS (ALPN h2 and HTTP/1.1), a certificate
/// for `localhost` and `127.0.0.1` issued by a throwaway CA (trust `caFile`), serving `handler`.
package final class TLSTestServer: Sendable {
    /// The server; `server.port` is the bound port.
    package let server: HTTP2Server
    /// A temporary folder holding the CA, certificate and key; removed on deinit.
    package let directory: URL
    /// The CA certificate clients must trust.
    package var caFile: String { directory.appendingPathComponent("ca.pem").path }

    package init(handler: any HTTPRequestHandler, caName: String = "Test CA") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let now = Date()
        let ca = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(commonName: caName), serialNumber: 1,
                notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(3600),
                role: .certificateAuthority(pathLength: 0)),
            key: try ECPrivateKey(generatingOn: .p256))
        let serverKey = try ECPrivateKey(generatingOn: .p256)
        let certificate = try ca.issue(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "localhost"), serialNumber: 2,
                notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(3600), role: .endEntity,
                subjectAlternativeNames: ["localhost", "127.0.0.1"]),
            for: serverKey.publicKey)
        let certificatePath = directory.appendingPathComponent("cert.pem")
        let keyPath = directory.appendingPathComponent("key.pem")
        try ca.certificate.pemEncoded.write(
            to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try certificate.pemEncoded.write(to: certificatePath, atomically: true, encoding: .utf8)
        try serverKey.pkcs8PEM().write(to: keyPath, atomically: true, encoding: .utf8)
        let context = try TLSContext(certificateChainFile: certificatePath.path, privateKeyFile: keyPath.path)
        var configuration = HTTP2Configuration()
        configuration.maxConnectionAge = nil
        server = try HTTP2Server(
            address: ListenAddress(host: "127.0.0.1", port: 0), threads: 1, configuration: configuration,
            transport: .tls(context), responder: HTTPRequestResponder(handler: handler), requestHandler: handler)
        server.start()
    }

    deinit {
        server.beginGracefulShutdown()
        server.closeAllConnections()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
