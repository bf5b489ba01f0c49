import GatewayFoundation
import HTTPServer
import Testing

@testable import GRPC

@Suite struct ServerContextTests {
    /// The annotations are made on first use (a call nobody logs never makes them), once: every reader, the
    /// handler's task and the log line alike, gets the same object, carrying the call's identity.
    @Test func annotationsAreMadeOnceOnFirstUseWithTheCallsIdentity() async {
        let context = ServerContext(
            method: "/a.B/C", metadata: [("x-request-id", "caller-id-1")], deadline: nil)
        let first = context.annotations
        first.note("app", "one")
        #expect(context.annotations === first)
        #expect(context.annotations.noted.map(\.value) == ["one"])
        #expect(context.annotations.identity?.requestID == "caller-id-1")
        #expect(context.annotations.identity?.trace.traceID == context.trace.traceID)
        // Readers on other threads race for the first use and still share one.
        let other = ServerContext(method: "/a.B/C", metadata: [], deadline: nil)
        let made = await withTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<8 { group.addTask { ObjectIdentifier(other.annotations) } }
            return await Set(group.reduce(into: []) { $0.append($1) })
        }
        #expect(made.count == 1)
    }
}

/// A guard whose allowed apps can change, as a reload of its policy would change them.
private final class ChangingGuard: CallGuard {
    let allowed = Lock<Set<String>>(["a", "b"])
    let rechecked = Lock<[String]>([])

    func admit(method: String, metadata: [(name: String, value: String)], peer: PeerCertificateIdentity?)
        -> Result<(any AdmittedCaller)?, RPCStatus>
    { .success(nil) }

    func authorize(_ caller: (any AdmittedCaller)?, app: String, method: String) -> RPCStatus? {
        allowed.withLock { $0.contains(app) } ? nil : RPCStatus(.permissionDenied, "not \(app)")
    }

    func recheck(_ caller: (any AdmittedCaller)?, method: String, apps: [String]) -> RPCStatus? {
        rechecked.withLock { $0 = apps }
        return apps.lazy.compactMap { self.authorize(caller, app: $0, method: method) }.first
    }
}

private struct NamedCaller: AdmittedCaller {
    let displayName: String
    func bindingCurrent<Result: Sendable>(_ body: () async -> Result) async -> Result { await body() }
}

@Suite struct ServerContextRecheckTests {
    @Test func aRecheckSeesTheAppsTheCallWasAllowedAndEndsItWhenOneIsTakenAway() {
        let guardian = ChangingGuard()
        let context = ServerContext(
            method: "/s.S/Stream", metadata: [], deadline: nil, caller: NamedCaller(displayName: "team"),
            callGuard: guardian)
        #expect(context.authorization(forApp: "a") == nil)
        #expect(context.authorization(forApp: "a") == nil)
        #expect(context.authorization(forApp: "b") == nil)
        #expect(context.authorization(forApp: "c") != nil)
        // Each app once, in the order named; the refused one too (its call ends anyway, and a check that raced a
        // policy change must still find the app it named).
        #expect(context.recheck()?.code == .permissionDenied)
        #expect(guardian.rechecked.withLock { $0 } == ["a", "b", "c"])
        guardian.allowed.withLock { $0 = ["a", "b", "c"] }
        #expect(context.recheck() == nil)
        guardian.allowed.withLock { $0 = ["a", "c"] }
        #expect(context.recheck()?.code == .permissionDenied)
    }

    @Test func aCallWithoutAGuardIsNeverEnded() {
        let context = ServerContext(method: "/s.S/Stream", metadata: [], deadline: nil)
        #expect(context.authorization(forApp: "a") == nil && context.recheck() == nil)
    }
}
