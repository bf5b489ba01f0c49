import AppStoreClient
import AppStoreDomain
import Configuration
import Edge
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import Metrics
import NotificationStore
import Redis
import Services

/// The notification webhook: its store, its HTTP/1.1 port and its reconciler.
struct WebhookRuntime {
    let server: HTTP2Server
    let reconciler: Task<Void, Never>?
    /// Projects the log into the subscription state (nil without a state).
    let projector: Task<Void, Never>?
    let address: ListenAddress
    let path: String
    /// Whether the receiver speaks TLS (`notifications.webhook.tlsCertificate`).
    let tls: Bool
    let storeDescription: String
    /// The realtime URL's path on the listener ("" = none).
    let realtimePath: String

    /// The store `configuration` asks for, with its metrics: nil when no webhook is configured.
    static func feed(
        _ configuration: GatewayConfiguration, registry: MetricsRegistry
    ) throws(GatewayStartError) -> (feed: LiveNotificationFeed, backend: StoreBackend)? {
        guard configuration.notifications.webhook.listen != nil else { return nil }
        let backend = try StoreBackend.open(configuration, registry: registry)
        let feed = LiveNotificationFeed(
            store: backend.log, metrics: NotificationMetrics(registry: registry), states: backend.states,
            stateMetrics: SubscriptionStateMetrics(registry: registry), sinks: backend.sinks)
        return (feed, backend)
    }

    /// Binds and starts the webhook port and the reconciler.
    static func start(
        _ configuration: GatewayConfiguration, feed: LiveNotificationFeed, storeDescription: String,
        fleet: FleetLease, service: AppStoreGatewayService,
        tracer: any Tracer = SilentTracer(), registry: MetricsRegistry? = nil
    ) throws(GatewayStartError) -> WebhookRuntime {
        let webhook = configuration.notifications.webhook
        guard let address = webhook.listen else { throw GatewayStartError("no webhook address") }
        var handler = service.webhook(path: webhook.path, live: feed)
        handler.tracer = tracer
        // The realtime URL shares the listener: Apple reaches both through the same ingress.
        handler.realtime = service.realtimeEndpoint(
            configuration.notifications.realtime, metrics: RealtimeMetrics(registry: registry))
        var transport = ServerTransport.cleartextHTTP1
        if !webhook.tlsCertificateFile.isEmpty {
            do throws(ConfigurationError) {
                try KeyFileAccess.check(
                    webhook.tlsKeyFile, key: "notifications.webhook.tlsKey",
                    allowReadableFile: configuration.apple.allowReadableKeyFiles)
            } catch {
                throw .invalidConfiguration(error)
            }
            do {
                transport = .tls(
                    try TLSContext(
                        certificateChainFile: webhook.tlsCertificateFile, privateKeyFile: webhook.tlsKeyFile))
            } catch {
                throw .invalidConfiguration(
                    ConfigurationError(key: "notifications.webhook.tlsCertificate", problem: "\(error)"))
            }
        }
        var limits = NotificationWebhook.transportLimits(webhook)
        // The handshake deadline and its cap are the gateway's, on every port that takes TLS or HTTP/2.
        limits.handshakeTimeout = configuration.grpc.http2.handshakeTimeout
        limits.maxPendingHandshakes = configuration.grpc.http2.maxPendingHandshakes
        limits.maxPendingHandshakesPerAddress = configuration.grpc.http2.maxPendingHandshakesPerAddress
        limits.headerBlockTimeout = configuration.grpc.http2.headerBlockTimeout
        let server: HTTP2Server
        do {
            server = try HTTP2Server(
                address: address, threads: 1, configuration: limits,
                transport: transport,
                // HTTP/2 requests (TLS with ALPN h2) under the bounds of the HTTP/1.1 ones: body size and deadline.
                responder: HTTPRequestResponder(
                    handler: handler, maxBodyBytes: webhook.maxBodyBytes,
                    requestTimeout: webhook.requestTimeout),
                requestHandler: handler, threadName: "hook-loop")
        } catch {
            throw GatewayStartError("cannot listen on the webhook address \(address): \(error)")
        }
        server.start()
        var reconciler: Task<Void, Never>?
        let store = configuration.notifications.store
        // Always started: with reconcileInterval 0 it still prunes what is past the retention.
        if let pass = service.reconciler {
            let schedule = NotificationReconciler.Schedule(
                reconcileInterval: store.reconcileInterval)
            reconciler = Task.detached { await pass.run(schedule, fleet: fleet) }
        }
        let projector = service.subscriptionProjector.map { projector in
            Task.detached { await projector.run(fleet: fleet) }
        }
        return WebhookRuntime(
            server: server, reconciler: reconciler, projector: projector, address: address, path: webhook.path,
            tls: !webhook.tlsCertificateFile.isEmpty,
            storeDescription: storeDescription,
            realtimePath: configuration.notifications.realtime.path)
    }

    var url: String {
        let scheme = tls ? "https" : "http"
        return "\(scheme)://\(address.host):\(server.port)\(path)"
    }

    /// The realtime URL as bound (nil without one).
    var realtimeURL: String? {
        guard !realtimePath.isEmpty else { return nil }
        let scheme = tls ? "https" : "http"
        return "\(scheme)://\(address.host):\(server.port)\(realtimePath)"
    }

    func stop() {
        reconciler?.cancel()
        projector?.cancel()
        server.beginGracefulShutdown()
        server.closeAllConnections()
        server.stop()
    }
}
