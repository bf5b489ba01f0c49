import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Foundation
import HTTPServer
import Testing

@Suite(.serialized) struct UpstreamHTTPClientTests {
    @Test func http2OverTLSReturnsStatusHeadersAndBody() async throws {
        let fake = try FakeApple { request, _ in
            HTTPResponse(
                status: 201, headers: [("x-apple-request-uuid", "abc-123"), ("retry-after", "5")],
                body: Array("\(request.method) \(request.target) \(String(decoding: request.body, as: UTF8.self))".utf8)
            )
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let get = try await client.send(UpstreamRequest(url: fake.baseURL + "/a?x=1", headers: [("x-test", "1")]))
        #expect(get.status == 201)
        #expect(get.httpVersion == 2)
        #expect(String(decoding: get.body, as: UTF8.self) == "GET /a?x=1 ")
        #expect(get.appleRequestID == "abc-123")
        #expect(get.header("retry-after") == "5")
        #expect(fake.requests.first?.header("x-test") == "1")
        let post = try await client.send(
            UpstreamRequest(method: .post, url: fake.baseURL + "/b", body: Array("hi".utf8)))
        #expect(String(decoding: post.body, as: UTF8.self) == "POST /b hi")
        let put = try await client.send(UpstreamRequest(method: .put, url: fake.baseURL + "/c", body: Array("{}".utf8)))
        #expect(String(decoding: put.body, as: UTF8.self) == "PUT /c {}")
    }

    @Test func unknownCAIsAConnectionFailure() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200) }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(loop: running.loop)
        await #expect(throws: UpstreamTransportError.self) {
            _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
        }
        #expect(client.metrics.transfersFailed == 1)
    }

    @Test func hundredConcurrentCallsShareAtMostTwoConnections() async throws {
        let fake = try FakeApple { request, _ in HTTPResponse(status: 200, body: Array(request.path.utf8)) }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let response = try await client.send(UpstreamRequest(url: fake.baseURL + "/n\(index)"))
                    #expect(String(decoding: response.body, as: UTF8.self) == "/n\(index)")
                    return response.httpVersion
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(versions.count == 100 && versions.allSatisfy { $0 == 2 })
        let metrics = client.metrics
        #expect(metrics.transfersStarted == 100)
        #expect(metrics.transfersSucceeded == 100)
        #expect(metrics.connectionsOpened >= 1 && metrics.connectionsOpened <= 2, "opened \(metrics.connectionsOpened)")
        print("UpstreamHTTPClient: 100 concurrent calls used \(metrics.connectionsOpened) connection(s)")
    }

    @Test func fiveHundredConcurrentCallsStayWithinTheConnectionCap() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200, body: Array(repeating: 0x61, count: 2_000)) }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask { _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/n\(index)")) }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        let metrics = client.metrics
        #expect(metrics.transfersSucceeded == 500)
        // At most 200 streams per connection (our server allows 256), 8 connections per host.
        #expect(metrics.connectionsOpened <= 8, "opened \(metrics.connectionsOpened)")
        print("UpstreamHTTPClient: 500 concurrent calls in \(elapsed) over \(metrics.connectionsOpened) connection(s)")
    }

    @Test func timeoutEndsASlowTransfer() async throws {
        let fake = try FakeApple { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return HTTPResponse(status: 200)
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let started = ContinuousClock.now
        do {
            _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/slow", timeout: .milliseconds(300)))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.kind == .timedOut)
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func slowBodyArrivesWhole() async throws {
        let fake = try FakeApple { _, _ in
            HTTPResponse(
                status: 200, body: Array("abcdefgh".utf8), delivery: .slowBody(chunks: 4, interval: .milliseconds(30)))
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let response = try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
        #expect(String(decoding: response.body, as: UTF8.self) == "abcdefgh")
    }

    @Test func cancellationRemovesTheTransfer() async throws {
        let fake = try FakeApple { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return HTTPResponse(status: 200)
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let task = Task {
            await result { () throws(UpstreamTransportError) in
                try await client.send(UpstreamRequest(url: fake.baseURL + "/slow"))
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        task.cancel()
        let outcome = await task.value
        #expect(ContinuousClock.now - started < .milliseconds(500))
        #expect(outcome.failureKind == .cancelled)
        #expect(client.metrics.transfersCancelled == 1)
        #expect(client.metrics.transfersStarted == 1)
    }

    @Test func alreadyCancelledCallNeverStarts() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(loop: running.loop)
        let task = Task {
            await result { () throws(UpstreamTransportError) in
                while !Task.isCancelled { await Task.yield() }
                return try await client.send(UpstreamRequest(url: "https://127.0.0.1:1/"))
            }
        }
        task.cancel()
        #expect(await task.value.failureKind == .cancelled)
        #expect(client.metrics.transfersStarted == 0)
    }

    @Test func resetAndShutdownFailCleanly() async throws {
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200, delivery: .resetConnection) }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        do {
            _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .connectionFailed)
        }
        client.shutdown()
        do {
            _ = try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
            Issue.record("expected shutDown")
        } catch {
            #expect(error.kind == .shutDown)
        }
    }

    @Test func plainHTTPAndBadURLs() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(loop: running.loop)
        do {
            _ = try await client.send(UpstreamRequest(url: "ftp://example.com/"))
            Issue.record("expected invalidRequest")
        } catch {
            #expect(error.kind == .invalidRequest)
        }
        do {
            _ = try await client.send(UpstreamRequest(url: "http://127.0.0.1:1/", timeout: .seconds(2)))
            Issue.record("expected connection refused")
        } catch {
            #expect(error.kind == .connectionFailed)
        }
    }
}

/// The outcome of a typed-throwing call as a value.
func result<T>(_ body: () async throws(UpstreamTransportError) -> T) async -> Result<T, UpstreamTransportError> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

extension Result where Failure == UpstreamTransportError {
    /// The kind of failure; nil for a success (so `#expect(outcome.failureKind == .cancelled)` fails on one).
    var failureKind: UpstreamTransportError.Kind? {
        guard case .failure(let error) = self else { return nil }
        return error.kind
    }
}
