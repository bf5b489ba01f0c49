import AppStoreClient
import AppleFixtures
import EventLoops
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

/// A client's callers on no loop are handed over to the loop it was given (`init(configuration:loop:)`), whose
/// handle is driven as a caller's own loop's is, with the same cancellation path.
@Suite(.serialized) struct UpstreamHTTPClientGivenLoopTests {
    @Test func callersOnNoLoopAreServedOnTheGivenLoop() async throws {
        let fake = try FakeApple { request, _ in HTTPResponse(status: 200, body: Array(request.target.utf8)) }
        let running = try RunningLoop()
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        defer { client.shutdown() }
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let response = try await client.send(UpstreamRequest(url: fake.baseURL + "/n\(index)"))
                    return String(decoding: response.body, as: UTF8.self)
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(bodies == Set((0..<20).map { "/n\($0)" }))
        let metrics = client.metrics
        #expect(metrics.transfersStarted == 20 && metrics.transfersSucceeded == 20)
        #expect(metrics.transfersOnCallerLoops == 0, "handed over, not on the caller's loop")
        #expect(metrics.connectionsOpened == 1, "one handle, one connection: \(metrics.connectionsOpened)")

        // A caller on the given loop itself is a caller on its loop.
        let status = await running.run {
            try? await client.send(UpstreamRequest(url: fake.baseURL + "/on")).status
        }
        #expect(status == 200)
        #expect(client.metrics.transfersOnCallerLoops == 1)
    }

    @Test func cancellingACallerOnNoLoopRemovesItsTransfer() async throws {
        let fake = try FakeApple { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return HTTPResponse(status: 200)
        }
        let running = try RunningLoop()
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        defer { client.shutdown() }
        let task = Task {
            await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/slow"))
            }
        }
        for _ in 0..<1_000 where client.metrics.transfersStarted == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let started = ContinuousClock.now
        task.cancel()
        #expect(await task.value.failureKind == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(2), "removed, not waited for")
        #expect(client.metrics.transfersCancelled == 1)

        // One cancelled before it is handed over never starts a transfer.
        let early = Task {
            while !Task.isCancelled { await Task.yield() }
            return await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/never"))
            }
        }
        early.cancel()
        #expect(await early.value.failureKind == .cancelled)
        #expect(client.metrics.transfersStarted == 1)
    }

    @Test func aStoppedLoopOrAShutdownAnswersItsCallers() async throws {
        let fake = try FakeApple { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return HTTPResponse(status: 200)
        }
        let running = try RunningLoop()
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let task = Task {
            await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/slow"))
            }
        }
        for _ in 0..<1_000 where client.metrics.transfersStarted == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let started = ContinuousClock.now
        running.stop()
        #expect(await task.value.failureKind == .shutDown)
        #expect(ContinuousClock.now - started < .seconds(2))
        // Once the loop is gone a call is refused at once, and so is any call after a shutdown.
        let late = await result { () throws(UpstreamTransportError) in
            try await client.send(UpstreamRequest(url: fake.baseURL + "/late"))
        }
        #expect(late.failureKind == .shutDown)
        client.shutdown()
        let afterShutdown = await result { () throws(UpstreamTransportError) in
            try await client.send(UpstreamRequest(url: fake.baseURL + "/late"))
        }
        #expect(afterShutdown.failureKind == .shutDown)
    }
}
