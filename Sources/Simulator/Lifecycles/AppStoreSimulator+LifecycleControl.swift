import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer

/// The lifecycle control surface (not Apple's; the gateway never calls it):
///
///     GET    /simulator/lifecycles                 the named lifecycles with their steps
///     POST   /simulator/lifecycles                 start one: {"lifecycle": name} or {"steps": [step, …]}
///     GET    /simulator/lifecycles/{id}            a live lifecycle's state
///     POST   /simulator/lifecycles/{id}/step       its next step, or {"step": …} ad hoc: what it sent
///     DELETE /simulator/lifecycles/{id}            end it
///
/// `{id}` is the lifecycle's original transaction id. Errors are `{"errorCode", "errorMessage"}` with the code's
/// first three digits as HTTP status: 400 bad body, 404 unknown app, name or id, 405 method, 409 a step that cannot
/// happen now (or one in progress), 429 too many live lifecycles.
extension AppStoreSimulator {
    func lifecycleControl(_ request: HTTPRequest) async -> HTTPResponse {
        let rest = request.path.dropFirst(Self.lifecyclesPath.count)
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        do throws(LifecycleControlError) {
            switch (request.method, parts.count) {
            case ("GET", 0): return SimulatorResponse.json(lifecycleCatalog)
            case ("POST", 0): return SimulatorResponse.json(try startLifecycle(body: try Self.jsonObject(request.body)))
            case ("GET", 1): return SimulatorResponse.json(try lifecycleSummary(parts[0]))
            case ("DELETE", 1):
                guard endLifecycle(parts[0]) else { throw .notFound("no live lifecycle \(Self.bounded(parts[0]))") }
                return SimulatorResponse.json(.object([("ended", .string(parts[0]))]))
            case ("POST", 2) where parts[1] == "step":
                let body = request.body.isEmpty ? [:] : try Self.jsonObject(request.body)
                var adHoc: LifecycleStep?
                if !body.isEmpty {
                    do throws(LifecycleStepError) {
                        adHoc = try LifecycleStep(json: body)
                    } catch {
                        throw .invalid(error.description)
                    }
                }
                guard lifecycles.live(parts[0]) != nil else {
                    throw .notFound("no live lifecycle \(Self.bounded(parts[0]))")
                }
                if let adHoc, let state = lifecycles.live(parts[0])?.state {
                    for reference in adHoc.event.productReferences where state.product(reference) == nil {
                        throw .invalid("product: \(Self.bounded(reference)) is not a product of \(state.bundleId)")
                    }
                }
                return SimulatorResponse.json(try await performLifecycleStep(parts[0], step: adHoc).json)
            case (_, 0), (_, 1):
                throw LifecycleControlError(code: 4_050_000, message: "method \(request.method) not allowed here")
            case (_, 2) where parts[1] == "step":
                throw LifecycleControlError(code: 4_050_000, message: "method \(request.method) not allowed here")
            default:
                throw .notFound("no such lifecycle path")
            }
        } catch {
            return SimulatorResponse.error(error.code, error.message)
        }
    }

    /// `{"lifecycles": [{name, summary, steps}], "live", "maximumLive"}`.
    private var lifecycleCatalog: OrderedJSON {
        .object([
            (
                "lifecycles",
                .array(
                    Lifecycle.all.map { lifecycle in
                        .object([
                            ("name", .string(lifecycle.name)), ("summary", .string(lifecycle.summary)),
                            ("steps", .array(lifecycle.steps.map(\.json))),
                        ])
                    })
            ),
            ("live", .integer(Int64(lifecycles.count))),
            ("maximumLive", .integer(Int64(lifecycles.limits.maximumLive))),
        ])
    }

    /// Starts a lifecycle from a request body (members: `startMembers`).
    private func startLifecycle(body: [String: Any]) throws(LifecycleControlError) -> OrderedJSON {
        if let unknown = body.keys.sorted().first(where: { !Self.startMembers.contains($0) }) {
            throw .invalid("\(Self.bounded(unknown)): not a member; use \(Self.startMembers.sorted())")
        }
        let lifecycle: Lifecycle
        switch (body["lifecycle"], body["steps"]) {
        case (let name as String, nil):
            guard let named = Lifecycle.named(name) else {
                throw .notFound("no lifecycle named \(Self.bounded(name)); GET \(Self.lifecyclesPath) lists them")
            }
            lifecycle = named
        case (nil, let steps as [Any]):
            guard (1...lifecycles.limits.maximumSteps).contains(steps.count) else {
                throw .invalid("steps: 1…\(lifecycles.limits.maximumSteps) steps")
            }
            var parsed: [LifecycleStep] = []
            for (index, item) in steps.enumerated() {
                guard let object = item as? [String: Any] else { throw .invalid("steps[\(index)]: an object") }
                do throws(LifecycleStepError) {
                    parsed.append(try LifecycleStep(json: object))
                } catch {
                    throw .invalid("steps[\(index)]: \(error.description)")
                }
            }
            let name = body["name"] as? String ?? "custom"
            guard (1...64).contains(name.utf8.count) else { throw .invalid("name: 1…64 bytes") }
            lifecycle = Lifecycle(name: name, summary: "", steps: parsed)
        default:
            throw .invalid("either lifecycle (a name) or steps (a list) is required")
        }
        var environment = AppleEnvironment.sandbox
        if let value = body["environment"] {
            guard let text = value as? String,
                let named = AppleEnvironment.allCases.first(where: { $0.appleName == text })
            else { throw .invalid("environment: Sandbox or Production") }
            environment = named
        }
        var start: WallTime?
        if let value = body["start"] {
            guard let milliseconds = value as? Int, milliseconds >= 0 else {
                throw .invalid("start: UNIX milliseconds")
            }
            start = WallTime(millisecondsSince1970: Int64(milliseconds))
        }
        var url: URL?
        if let value = body["url"] {
            guard let text = value as? String, let parsed = URL(string: text),
                ["http", "https"].contains(parsed.scheme)
            else { throw .invalid("url: an http(s) webhook URL") }
            url = parsed
        }
        let timeFactor = (body["timeFactor"] as? Double) ?? (body["timeFactor"] as? Int).map(Double.init)
        if body["timeFactor"] != nil, !(timeFactor.map { $0 > 0 && $0.isFinite } ?? false) {
            throw .invalid("timeFactor: a positive number")
        }
        let bundleId = body["bundleId"] as? String ?? configuration.apps.first?.bundleId ?? ""
        let originalTransactionId = try startLifecycle(
            lifecycle, bundleId: bundleId, environment: environment, start: start, webhookURL: url,
            deliver: body["deliver"] as? Bool ?? true, retries: body["retries"] as? Bool ?? true,
            webhookTimeFactor: timeFactor)
        return try lifecycleSummary(originalTransactionId)
    }

    private static let startMembers: Set<String> = [
        "lifecycle", "steps", "name", "bundleId", "environment", "start", "url", "deliver", "retries", "timeFactor",
    ]

    /// A live lifecycle: `{originalTransactionId, lifecycle, bundleId, environment, appTransactionId, now, status,
    /// performed, remaining, next, webhook, subscriptions: [{originalTransactionId, status, productId,
    /// autoRenewProductId, autoRenewStatus, expiresDate, inAppOwnershipType}]}`.
    private func lifecycleSummary(_ id: String) throws(LifecycleControlError) -> OrderedJSON {
        guard let live = lifecycles.live(id) else { throw .notFound("no live lifecycle \(Self.bounded(id))") }
        let state = live.state
        var json = JSONObjectBuilder()
        json.add("originalTransactionId", state.originalTransactionId)
        json.add("lifecycle", live.name)
        json.add("bundleId", state.bundleId)
        json.add("environment", state.environment.appleName)
        json.add("appTransactionId", state.appTransactionId)
        json.add("now", state.now)
        json.add("status", state.status.map { OrderedJSON.integer(Int64($0)) } ?? .null)
        json.add("performed", live.performed)
        json.add("remaining", live.script.count - live.next)
        json.add("next", live.next < live.script.count ? live.script[live.next].json : .null)
        json.add("webhook", live.delivery.map { OrderedJSON.string($0.url.absoluteString) } ?? .null)
        json.add(
            "subscriptions",
            .array(
                state.records.map { record in
                    var item = JSONObjectBuilder()
                    item.add("originalTransactionId", record.originalTransactionId)
                    item.add("status", record.renewal.status)
                    item.add("productId", record.current.productId)
                    item.add("autoRenewProductId", record.renewal.autoRenewProductId)
                    item.add("autoRenewStatus", record.renewal.autoRenewStatus)
                    item.add("expiresDate", record.current.expiresDate)
                    item.add("inAppOwnershipType", record.current.inAppOwnershipType)
                    return item.object
                }))
        return json.object
    }

    private static func jsonObject(_ body: [UInt8]) throws(LifecycleControlError) -> [String: Any] {
        guard body.count <= 64 * 1024,
            let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        else { throw .invalid("the body must be a JSON object (64 KiB at most)") }
        return object
    }

    private static func bounded(_ text: String) -> String { LifecycleStep.bounded(text) }
}
