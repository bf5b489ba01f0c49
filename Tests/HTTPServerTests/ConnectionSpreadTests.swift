import Configuration
import EventLoops
import GatewayFoundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Answers no request.
private struct SilentResponder: HTTP2Responder {
    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? { nil }
}

/// Connections are spread evenly over a server's loops, whichever loop's listener the kernel picks.
@Suite struct ConnectionSpreadTests {
    @Test func aLoopServingMoreThanAnotherHandsTheNewConnectionOver() {
        let spread = ConnectionSpread(loops: 3)
        #expect(spread.destination(acceptedBy: 2) == 2)  // all equal: the loop that accepted keeps it
        #expect(spread.destination(acceptedBy: 2) == 0)  // loop 2 serves more than 0 and 1: the lowest takes it
        #expect(spread.destination(acceptedBy: 2) == 1)
        #expect(spread.destination(acceptedBy: 1) == 1)
        #expect(spread.perLoop == [1, 2, 1])
        spread.removed(from: 1)
        spread.removed(from: 1)
        #expect(spread.destination(acceptedBy: 0) == 1)
        #expect(spread.perLoop == [1, 1, 1])
    }

    /// Twelve clients connect to a four-loop server (the kernel hashes each to some loop's listener): every
    /// loop ends up serving three, and closing them leaves none counted anywhere.
    @Test func everyLoopOfARealServerServesItsShare() throws {
        let server = try HTTP2Server(
            address: ListenAddress(host: "127.0.0.1", port: 0), threads: 4, configuration: HTTP2Configuration(),
            responder: SilentResponder())
        server.start()
        defer { server.stop() }
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        for _ in 0..<12 {
            let client = try #require(connectedLoopbackClient(port: server.port))
            clients.append(client)
            // One at a time: each accept sees the counts the previous ones left.
            let deadline = MonotonicInstant.now() + .seconds(10)
            while server.heldConnections < clients.count && MonotonicInstant.now() < deadline { usleep(1_000) }
        }
        try #require(server.heldConnections == 12)
        #expect(server.connectionsPerLoop == [3, 3, 3, 3])
        clients.forEach { close($0) }
        clients = []
        let deadline = MonotonicInstant.now() + .seconds(10)
        while server.heldConnections > 0 && MonotonicInstant.now() < deadline { usleep(1_000) }
        #expect(server.connectionsPerLoop == [0, 0, 0, 0])
    }
}
