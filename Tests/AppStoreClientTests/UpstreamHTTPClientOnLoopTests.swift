import AppStoreClient
import AppleFixtures
import EventLoops
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

/// A caller running on an event loop (a gRPC handler) is served by that loop's own multi handle: the transfer is
/// driven by the loop's epoll set and timers, and the caller never leaves the loop's thread.
@Suite(.serialized) struct UpstreamHTTPClientOnLoopTests {
    /// A call waiting on a loop for an Apple that answers only after 3 s, its transfer started.
    private struct SlowCall {
        let fake: FakeApple
        let client: UpstreamHTTPClient
        /// The loop the call runs on.
        let running: RunningLoop
        /// The client's loop for callers on no loop.
        let others: RunningLoop
        let task: Task<Result<UpstreamResponse, UpstreamTransportError>, Never>

        init() async throws {
            let fake = try FakeApple { _, _ in
                try? await Task.sleep(for: .seconds(3))
                return HTTPResponse(status: 200)
            }
            others = try RunningLoop(index: 1)
            let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
            running = try RunningLoop()
            task = Task(executorPreference: running.loop) {
                await result { () throws(UpstreamTransportError) in
                    try await client.send(UpstreamRequest(url: fake.baseURL + "/slow"))
                }
            }
            (self.fake, self.client) = (fake, client)
            // Waits until the transfer is in the loop's handle (no fixed sleep: a sanitizer build starts slower).
            for _ in 0..<1_000 where client.metrics.transfersStarted == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(client.metrics.transfersOnCallerLoops == 1)
        }

        /// The call's failure after `end`, checked to come well before Apple's answer.
        func failure(after end: () -> Void) async -> UpstreamTransportError.Kind? {
            let started = ContinuousClock.now
            end()
            let kind = await task.value.failureKind
            #expect(ContinuousClock.now - started < .seconds(2))
            return kind
        }
    }

    @Test func aCallOnALoopStaysOnItsThreadThroughout() async throws {
        let fake = try FakeApple { request, _ in
            HTTPResponse(status: 200, body: Array("\(request.method) \(request.target)".utf8))
        }
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
        let running = try RunningLoop()
        let loop = running.loop
        let (places, bodies, versions) = await running.run { () -> ([Bool], [String], [Int]) in
            var places = [loop.inEventLoop]
            var bodies: [String] = []
            var versions: [Int] = []
            for index in 0..<3 {
                let outcome = await result { () throws(UpstreamTransportError) in
                    try await client.send(UpstreamRequest(url: fake.baseURL + "/n\(index)"))
                }
                places.append(loop.inEventLoop)
                if case .success(let response) = outcome {
                    bodies.append(String(decoding: response.body, as: UTF8.self))
                    versions.append(response.httpVersion)
                }
            }
            return (places, bodies, versions)
        }
        #expect(places == [true, true, true, true])
        #expect(bodies == ["GET /n0", "GET /n1", "GET /n2"])
        #expect(versions == [2, 2, 2])
        var metrics = client.metrics
        #expect(metrics.transfersOnCallerLoops == 3)
        #expect(metrics.transfersSucceeded == 3)
        #expect(metrics.connectionsOpened == 1, "one connection, reused: \(metrics.connectionsOpened)")

        // A caller on no loop is handed over to the client's loop, counted with the rest.
        _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/off"))
        metrics = client.metrics
        #expect(metrics.transfersStarted == 4 && metrics.transfersSucceeded == 4)
        #expect(metrics.transfersOnCallerLoops == 3)
    }

    @Test func hundredConcurrentCallsOnOneLoopShareItsConnection() async throws {
        let fake = try FakeApple { request, _ in HTTPResponse(status: 200, body: Array(request.path.utf8)) }
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
        let running = try RunningLoop()
        let loop = running.loop
        let answered = await running.run { () -> Int in
            await withTaskGroup(of: Bool.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        let outcome = await result { () throws(UpstreamTransportError) in
                            try await client.send(UpstreamRequest(url: fake.baseURL + "/n\(index)"))
                        }
                        guard case .success(let response) = outcome else { return false }
                        return loop.inEventLoop && String(decoding: response.body, as: UTF8.self) == "/n\(index)"
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        #expect(answered == 100)
        let metrics = client.metrics
        #expect(metrics.transfersOnCallerLoops == 100)
        #expect(metrics.connectionsOpened >= 1 && metrics.connectionsOpened <= 2, "opened \(metrics.connectionsOpened)")
    }

    @Test func eachLoopHasItsOwnHandle() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 204) }
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
        let first = try RunningLoop(index: 0)
        let second = try RunningLoop(index: 1)
        for running in [first, second, first, second] {
            let status = await running.run {
                try? await client.send(UpstreamRequest(url: fake.baseURL + "/")).status
            }
            #expect(status == 204)
        }
        let metrics = client.metrics
        #expect(metrics.transfersOnCallerLoops == 4)
        #expect(metrics.connectionsOpened == 2, "a connection per loop: \(metrics.connectionsOpened)")
    }

    @Test func aSecondLoopResumesTheTLSSessionTheFirstGot() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 204) }
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
        let first = try RunningLoop(index: 0)
        let second = try RunningLoop(index: 1)
        for running in [first, second] {
            let status = await running.run { try? await client.send(UpstreamRequest(url: fake.baseURL + "/")).status }
            #expect(status == 204)
        }
        #expect(client.metrics.connectionsOpened == 2)
        let handshakes = fake.handshakes
        #expect(handshakes.all == 2 && handshakes.resumed == 1, "\(handshakes)")
    }

    @Test func aTimeoutFiresFromTheLoopsTimers() async throws {
        let fake = try FakeApple { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return HTTPResponse(status: 200)
        }
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
        let running = try RunningLoop()
        let started = ContinuousClock.now
        let outcome = await running.run {
            await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/slow", timeout: .milliseconds(300)))
            }
        }
        #expect(outcome.failureKind == .timedOut)
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func cancellingTheCallerRemovesItsTransferOnTheLoop() async throws {
        let call = try await SlowCall()
        let (fake, client, running) = (call.fake, call.client, call.running)
        #expect(await call.failure { call.task.cancel() } == .cancelled)
        #expect(client.metrics.transfersCancelled == 1)

        // A caller cancelled before it sends never starts a transfer.
        let early = Task(executorPreference: running.loop) {
            while !Task.isCancelled { await Task.yield() }
            return await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/never"))
            }
        }
        early.cancel()
        #expect(await early.value.failureKind == .cancelled)
        #expect(client.metrics.transfersStarted == 1)
    }

    @Test func shutdownAnswersTransfersInFlightOnLoops() async throws {
        let call = try await SlowCall()
        let (fake, client, running) = (call.fake, call.client, call.running)
        #expect(await call.failure { client.shutdown() } == .shutDown)
        let later = await running.run {
            await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
            }
        }
        #expect(later.failureKind == .shutDown)
    }

    @Test func aStoppingLoopAnswersItsTransfers() async throws {
        let call = try await SlowCall()
        let (fake, client) = (call.fake, call.client)
        #expect(await call.failure { call.running.stop() } == .shutDown)
        // The client itself still serves other callers.
        fake.setScript { _, _ in HTTPResponse(status: 200) }
        #expect(try await client.send(UpstreamRequest(url: fake.baseURL + "/")).status == 200)
    }

    @Test func aNewClientOnTheSameLoopGetsAHandleOfItsOwn() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200) }
        let running = try RunningLoop()
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        for _ in 0..<5 {
            // Each client is gone before the next is made (often at the same address): none may find the last
            // one's closed handle on the loop.
            let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: others.loop)
            let status = await running.run {
                try? await client.send(UpstreamRequest(url: fake.baseURL + "/")).status
            }
            #expect(status == 200)
            #expect(client.metrics.transfersOnCallerLoops == 1)
        }
    }

    @Test func aClientMadeWhereAnEarlierOneDiedOnTheSameLoopGetsAHandleOfItsOwn() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200) }
        let running = try RunningLoop()
        let others = try RunningLoop(index: 9)
        defer { others.stop() }
        let othersLoop = others.loop
        // All in one task on the loop: each client's shutdown (queued on the loop when it goes) has not run yet
        // when the next client, often at the same address, makes its first call.
        let counted = await running.run { () -> [Int] in
            var counted: [Int] = []
            for _ in 0..<5 {
                guard let client = try? UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: othersLoop)
                else { break }
                let status = try? await client.send(UpstreamRequest(url: fake.baseURL + "/")).status
                counted.append(status == 200 ? client.metrics.transfersOnCallerLoops : -1)
            }
            return counted
        }
        #expect(counted == [1, 1, 1, 1, 1])
    }
}
