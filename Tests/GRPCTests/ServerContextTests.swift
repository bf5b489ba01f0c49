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
