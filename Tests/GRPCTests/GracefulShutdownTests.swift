import Dispatch
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

@testable import GRPC

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct GracefulShutdownTests {
    private let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// No connection held: the shutdown is over at once, and nothing was cut short.
    @Test func aServerHoldingNoConnectionStopsAtOnce() {
        var shutdown = GracefulShutdown(grace: .seconds(10), now: start)
        #expect(shutdown.next(heldConnections: 0, now: start) == .stop(.drained))
    }

    /// The step after a wait woken by the last close is to stop, whatever of the grace period is left.
    @Test func theLastCloseDuringTheGracePeriodStopsAtOnce() {
        var shutdown = GracefulShutdown(grace: .seconds(10), now: start)
        #expect(shutdown.next(heldConnections: 2, now: start) == .wait(until: start + .seconds(10)))
        #expect(shutdown.next(heldConnections: 1, now: start + .seconds(1)) == .wait(until: start + .seconds(10)))
        #expect(shutdown.next(heldConnections: 0, now: start + .seconds(2)) == .stop(.drained))
        #expect(shutdown.next(heldConnections: 0, now: start + .seconds(3)) == .stop(.drained))
    }

    /// Calls still running at the end of the grace period are ended; their statuses get the flush period, and
    /// the server stops at its end even if connections remain (stopping closes them).
    @Test func theGraceDeadlineEndsTheCallsThatDoNotFinish() {
        var shutdown = GracefulShutdown(grace: .seconds(10), flush: .milliseconds(500), now: start)
        #expect(shutdown.next(heldConnections: 1, now: start) == .wait(until: start + .seconds(10)))
        #expect(shutdown.next(heldConnections: 1, now: start + .seconds(10)) == .endCalls)
        let flushed = start + .seconds(10) + .milliseconds(500)
        #expect(shutdown.next(heldConnections: 1, now: start + .seconds(10)) == .wait(until: flushed))
        #expect(shutdown.next(heldConnections: 1, now: flushed) == .stop(.callsEnded))
    }

    /// Once the ended calls' connections have closed, the server stops without waiting out the flush period.
    @Test func theFlushEndsWithTheLastClose() {
        var shutdown = GracefulShutdown(grace: .zero, flush: .milliseconds(500), now: start)
        #expect(shutdown.next(heldConnections: 3, now: start) == .endCalls)
        #expect(shutdown.next(heldConnections: 0, now: start + .milliseconds(1)) == .stop(.callsEnded))
    }

    /// A negative grace is no grace.
    @Test func aNegativeGraceIsNone() {
        var shutdown = GracefulShutdown(grace: .seconds(-5), now: start)
        #expect(shutdown.next(heldConnections: 1, now: start) == .endCalls)
    }

    /// Through a real server: with an hour of grace, `shutdown` returns `.drained` once the one connection
    /// (HTTP/2 established, no call) has closed; the 60 s bound only keeps a broken build from hanging the suite.
    @Test func shutdownReturnsWhenTheLastConnectionCloses() throws {
        var configuration = GRPCServerConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.threads = 1
        let server = try GRPCServer(configuration: configuration, services: [])
        server.start()
        let client = try #require(Self.connectedClient(port: server.port))
        defer { close(client) }
        // The client preface and an empty SETTINGS frame: the connection is established.
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        try #require(write(client, preface, preface.count) == preface.count)
        let established = MonotonicInstant.now() + .seconds(60)
        while server.http2.openConnections == 0 && MonotonicInstant.now() < established { usleep(1_000) }
        try #require(server.http2.openConnections == 1)

        let done = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        Thread.detachNewThread {
            outcome.set(server.shutdown(grace: .seconds(3600)))
            done.signal()
        }
        shutdown(client, Int32(SHUT_RDWR))
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.value == .drained)
        #expect(server.http2.heldConnections == 0)
    }

    /// `serve()` serves until another thread calls `beginGracefulShutdown`, then drains and returns the outcome;
    /// a `shutdown` from a third thread waits for that same outcome instead of draining a second time.
    @Test func serveReturnsWhenAGracefulShutdownBegunElsewhereIsOver() throws {
        var configuration = GRPCServerConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.threads = 1
        let server = try GRPCServer(configuration: configuration, services: [])
        let served = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        Thread.detachNewThread {
            outcome.set(server.serve())
            served.signal()
        }
        // Serving: a client connects (the port is bound at init, accepted once the loop runs).
        let client = try #require(Self.connectedClient(port: server.port))
        defer { close(client) }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        try #require(write(client, preface, preface.count) == preface.count)
        let established = MonotonicInstant.now() + .seconds(60)
        while server.http2.openConnections == 0 && MonotonicInstant.now() < established { usleep(1_000) }
        try #require(server.http2.openConnections == 1)
        #expect(served.wait(timeout: .now() + .milliseconds(50)) == .timedOut)

        server.beginGracefulShutdown(grace: .seconds(3600))
        let second = OutcomeBox()
        let secondDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            second.set(server.shutdown(grace: .zero))
            secondDone.signal()
        }
        shutdown(client, Int32(SHUT_RDWR))
        #expect(served.wait(timeout: .now() + 60) == .success)
        #expect(secondDone.wait(timeout: .now() + 60) == .success)
        // The first request's hour of grace counted: the client's close drained it, nothing was cut short.
        #expect(outcome.value == .drained)
        #expect(second.value == .drained)
        #expect(server.http2.heldConnections == 0)
    }

    private static func connectedClient(port: UInt16) -> Int32? {
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard client >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(client)
            return nil
        }
        return client
    }
}

/// The outcome a shutdown thread returned.
private final class OutcomeBox: Sendable {
    private let outcome = Lock<ShutdownOutcome?>(nil)
    func set(_ value: ShutdownOutcome) { outcome.withLock { $0 = value } }
    var value: ShutdownOutcome? { outcome.withLock { $0 } }
}
