import Configuration
import Dispatch
import Foundation
import GatewayFoundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Answers no request (every stream is nobody's).
private struct SilentResponder: HTTP2Responder {
    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? { nil }
}

/// What a thread of its own returned: `done` is signalled once `body` has returned its value.
private final class OnThread<Value: Sendable>: Sendable {
    let done = DispatchSemaphore(value: 0)
    private let value = Lock<Value?>(nil)

    init(_ body: @escaping @Sendable () -> Value) {
        Thread.detachNewThread { [self] in
            let result = body()
            value.withLock { $0 = result }
            done.signal()
        }
    }

    var result: Value? { value.withLock { $0 } }
}

/// A flag shared between threads.
private final class Flag: Sendable {
    private let value: Lock<Bool>
    init(_ value: Bool) { self.value = Lock(value) }
    var isSet: Bool {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

@Suite struct ConditionSignalTests {
    /// A waiter with an hour left is woken by the event that made it idle: it returns true long before its
    /// deadline (the 60 s bound only keeps a broken build from hanging the suite).
    @Test func aWaiterIsWokenByTheSignalNotByItsDeadline() {
        let signal = ConditionSignal()
        let busy = Flag(true)
        let waiter = OnThread { signal.wait(until: .now() + .seconds(3600)) { busy.isSet } }
        busy.isSet = false
        signal.signal()
        #expect(waiter.done.wait(timeout: .now() + 60) == .success)
        #expect(waiter.result == true)
    }

    /// Nothing to wait for: true at once, whatever the deadline.
    @Test func anIdleWaiterReturnsAtOnce() {
        #expect(ConditionSignal().wait(until: .now() - .seconds(1)) { false })
    }

    /// Still busy at the deadline: false.
    @Test func aBusyWaiterReturnsFalseAtItsDeadline() {
        #expect(!ConditionSignal().wait(until: .now() + .milliseconds(1)) { true })
    }

    /// `waitUntilIdle` returns true once the server's last connection closes (the client hung up), with an hour
    /// of its deadline left.
    @Test func theLastCloseWakesAServerWaitingForNone() throws {
        let server = try HTTP2Server(
            address: ListenAddress(host: "127.0.0.1", port: 0), threads: 1, configuration: HTTP2Configuration(),
            responder: SilentResponder())
        server.start()
        defer { server.stop() }
        let client = try #require(connectedLoopbackClient(port: server.port))
        let accepted = MonotonicInstant.now() + .seconds(60)
        while server.heldConnections == 0 && MonotonicInstant.now() < accepted { usleep(1_000) }
        try #require(server.heldConnections == 1)
        #expect(!server.waitUntilIdle(deadline: .now()))

        let waiter = OnThread { server.waitUntilIdle(deadline: .now() + .seconds(3600)) }
        close(client)
        #expect(waiter.done.wait(timeout: .now() + 60) == .success)
        #expect(waiter.result == true)
        #expect(server.heldConnections == 0)
    }
}
