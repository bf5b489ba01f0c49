import GatewayFoundation
import HTTPServer

/// The simulator on the wire: HTTPS with ALPN h2 (libcurl, the gateway) and HTTP/1.1 (Apple's Python
/// library), on the project's HTTP server, with a TLS certificate from the state directory's CA.
package final class SimulatorServer: Sendable {
    /// The HTTPS server.
    package let server: HTTP2Server
    /// The state it serves.
    package let state: SimulatorState
    /// The TLS credentials; `caCertificatePath` is what clients trust (`apple.caFile`).
    package let tls: SimulatorState.TLSCredentials
    /// The production base URL, e.g. "https://localhost:8443"; sandbox is the same + "/sandbox".
    package let productionURL: String
    /// The simulator it serves (for its Swift API: lifecycles, refunds, datasets).
    package let simulator: AppStoreSimulator

    /// Binds `listen` (port 0 picks one) and starts serving.
    package init(
        state: SimulatorState, listen: ListenAddress, threads: Int = 1,
        customize: (inout SimulatorConfiguration) -> Void = { _ in }
    ) throws {
        let tls = try state.issueTLSServerCertificate()
        let context = try TLSContext(certificateChainFile: tls.certificatePath, privateKeyFile: tls.privateKeyPath)
        let simulator = state.makeSimulator(customize: customize)
        var transport = HTTP2Configuration()
        // The gateway's one upstream connection lives as long as the simulator: no maximum age.
        transport.maxConnectionAge = nil
        // No caller guard here: no connection is ever admitted, so none is closed for it.
        transport.unauthenticatedIdleTimeout = nil
        // Room for an uploaded image (Retention Messaging) over HTTP/1.1 too.
        transport.http1.maxBodyBytes = 8 * 1024 * 1024
        server = try HTTP2Server(
            address: listen, threads: threads, configuration: transport, transport: .tls(context),
            responder: HTTPRequestResponder(handler: simulator), requestHandler: simulator, threadName: "sim-loop")
        server.start()
        self.simulator = simulator
        self.state = state
        self.tls = tls
        // The certificate names localhost and 127.0.0.1; a wildcard bind is reached through localhost.
        let host = ["0.0.0.0", "::", "127.0.0.1", "localhost"].contains(listen.host) ? "localhost" : listen.host
        productionURL = "https://\(host):\(server.port)"
        // Certificates that name this server's OCSP responder, so online checks work end to end.
        try simulator.enableOCSP(responderURL: productionURL + AppStoreSimulator.ocspPath)
        _ = try? state.writeTransactionIndex(from: simulator)
    }

    /// Writes `gateway.yaml` in the state directory for a gateway listening on `gatewayListen`; returns its path.
    @discardableResult
    package func writeGatewayConfiguration(gatewayListen: String = "127.0.0.1:50051") throws -> String {
        try state.writeGatewayConfiguration(
            productionURL: productionURL, caFile: tls.caCertificatePath, listen: gatewayListen)
    }

    /// Stops serving.
    package func stop() {
        server.beginGracefulShutdown()
        server.closeAllConnections()
        server.stop()
    }
}
