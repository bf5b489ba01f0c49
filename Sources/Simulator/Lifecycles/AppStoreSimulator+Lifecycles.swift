import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// Scripted subscription lifecycles, in Swift and over HTTP. A lifecycle's clock is its own: each step moves it
/// (`LifecycleAdvance`), its notifications are signed at that instant and delivered in order to a webhook, and Get
/// All Subscription Statuses and Get Transaction Info answer for its ids at that instant.
extension AppStoreSimulator {
    /// The control paths' root: `GET` lists the named lifecycles, `POST` starts one.
    package static let lifecyclesPath = "/simulator/lifecycles"

    /// Starts `lifecycle` (its steps are performed one by one with `performLifecycleStep`) for the app `bundleId`
    /// (nil: the first app) in `environment`, its clock at `start` (nil: the configured clock's now).
    /// Notifications go to `webhookURL`, else `configuration.webhookURL`, else the gateway's webhook a `serve
    /// --simulator` names (`deliverLifecycles(to:)`); `deliver` false keeps them undelivered; failed tries are
    /// retried (unless `retries` is false) after Apple's delays divided by `webhookTimeFactor` (nil: the
    /// configuration's). Returns the lifecycle's original transaction id (that of its first transaction, known
    /// before it exists).
    package func startLifecycle(
        _ lifecycle: Lifecycle, bundleId: String? = nil, environment: AppleEnvironment = .sandbox,
        start: WallTime? = nil, webhookURL: URL? = nil, deliver: Bool = true, retries: Bool = true,
        webhookTimeFactor: Double? = nil
    ) throws(LifecycleControlError) -> String {
        let bundleId = bundleId ?? configuration.apps.first?.bundleId ?? ""
        guard configuration.apps.contains(where: { $0.bundleId == bundleId }) else {
            throw LifecycleControlError(code: 4_040_003, message: "App not found.")
        }
        let probe = LifecycleState(bundleId: bundleId, environment: environment, number: 0, start: 0, seed: 0)
        for step in lifecycle.steps {
            for reference in step.event.productReferences where probe.product(reference) == nil {
                throw .invalid("product: \(LifecycleStep.bounded(reference)) is not a product of \(bundleId)")
            }
        }
        var delivery: LifecycleDelivery?
        if deliver,
            let url = webhookURL ?? configuration.webhookURL.flatMap(URL.init(string:))
                ?? fallbackWebhookURL.withLock({ $0 })
        {
            delivery = LifecycleDelivery(
                url: url, retries: retries, timeFactor: webhookTimeFactor ?? configuration.webhookTimeFactor)
        }
        return try startLifecycle(
            lifecycle, bundleId: bundleId, environment: environment, start: start, delivery: delivery
        ).originalTransactionId
    }

    /// Performs the lifecycle's next scripted step, or `step` (then the script stays where it is): the new state is
    /// committed, its notifications are signed at the step's instant and delivered in order (each first try
    /// awaited; failed tries are retried on Apple's schedule with the same bytes), and reported with the statuses
    /// Get All Subscription Statuses now answers. One step of a lifecycle at a time.
    package func performLifecycleStep(_ originalTransactionId: String, step: LifecycleStep? = nil)
        async
        throws(LifecycleControlError) -> LifecycleStepReport
    {
        let signing = signingPKI(revoked: false)
        let validity =
            Int64(
                signing.leaf.notBefore.timeIntervalSince1970 * 1000)...Int64(
                signing.leaf.notAfter.timeIntervalSince1970 * 1000)
        let reserved = try lifecycles.reserveStep(originalTransactionId, adHoc: step, validity: validity)
        defer { lifecycles.finish(originalTransactionId) }
        let state = reserved.transition.state
        guard let app = configuration.apps.first(where: { $0.bundleId == state.bundleId }) else {
            throw LifecycleControlError(code: 4_040_003, message: "App not found.")
        }
        let signer = SignedPayloads(pki: signing, app: app, environment: state.environment, memo: signatures)
        var report: LifecycleStepReport
        do {
            report = try signer.report(
                of: reserved.transition, step: reserved.step, index: reserved.index, remaining: reserved.remaining)
        } catch {
            throw LifecycleControlError(code: 5_000_000, message: "An unknown error occurred.")
        }
        guard let delivery = reserved.delivery else { return report }
        let webhook = WebhookDelivery(timeFactor: delivery.timeFactor)
        for index in report.notifications.indices {
            let status = await webhook.deliver(
                report.notifications[index].signedPayload, to: delivery.url, retries: delivery.retries,
                record: { _, _ in }, now: { 0 })
            report.notifications[index].deliveryStatus = status ?? 0
        }
        return report
    }

    /// Ends a lifecycle (its ids are unknown from then on); false if none was live under that id.
    @discardableResult
    package func endLifecycle(_ originalTransactionId: String) -> Bool { lifecycles.end(originalTransactionId) }

    /// Where lifecycles deliver when neither the start nor `configuration.webhookURL` names a webhook: `serve
    /// --simulator` sets the gateway's own webhook here.
    package func deliverLifecycles(to url: URL?) { fallbackWebhookURL.withLock { $0 = url } }

    func startLifecycle(
        _ lifecycle: Lifecycle, bundleId: String, environment: AppleEnvironment, start: WallTime?,
        delivery: LifecycleDelivery?
    ) throws(LifecycleControlError) -> LifecycleState {
        try lifecycles.start(
            name: lifecycle.name, script: lifecycle.steps, bundleId: bundleId, environment: environment,
            start: (start ?? configuration.clock.wallNow()).millisecondsSince1970, seed: configuration.seed,
            delivery: delivery)
    }
}

extension LifecycleEvent {
    /// The products the event names (checked against the app's catalog when a lifecycle starts).
    var productReferences: [String] {
        switch self {
        case .buy(let product, _), .upgrade(let product), .downgrade(let product), .crossgrade(let product),
            .purchase(let product):
            [product]
        case .refund(.purchase(let product)), .declineRefund(.purchase(let product)),
            .reverseRefund(.purchase(let product)):
            [product]
        default: []
        }
    }
}
