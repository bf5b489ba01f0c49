import AppStoreClient
import AppleFixtures
import Foundation
import HTTPServer
import Testing

/// Hand-overs to the client's loop race its shutdown, which frees the loop's handle there: sends racing a
/// shutdown, and a client released right after, end cleanly.
@Suite(.serialized) struct UpstreamClientShutdownRaceTests {
    @Test func sendsRacingAShutdownAllEnd() async throws {
        let fake = try FakeApple { _, _ in
            HTTPResponse(
                status: 200, body: Array("ok".utf8), delivery: .slowBody(chunks: 2, interval: .milliseconds(20)))
        }
        let running = try RunningLoop()
        defer { running.stop() }
        for _ in 0..<5 {
            // Released at the end of each pass, right after its shutdown.
            let shared = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
            let outcomes = await withTaskGroup(of: Result<Int, UpstreamTransportError>.self) { group in
                group.addTask {
                    // Once the first sends are in flight (their bodies take 20 ms).
                    try? await Task.sleep(for: .milliseconds(5))
                    shared.shutdown()
                    return .success(200)
                }
                for index in 0..<40 {
                    group.addTask {
                        await result { () async throws(UpstreamTransportError) in
                            try await shared.send(UpstreamRequest(url: fake.baseURL + "/\(index)")).status
                        }
                    }
                }
                var all: [Result<Int, UpstreamTransportError>] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            #expect(outcomes.count == 41)
            for outcome in outcomes {
                switch outcome {
                case .success(let status): #expect(status == 200)
                case .failure(let error): #expect(error.kind == .shutDown)
                }
            }
            // Shut down: every later call is refused at once, and the client goes away with its handle.
            let late = await result { () async throws(UpstreamTransportError) in
                try await shared.send(UpstreamRequest(url: fake.baseURL + "/late"))
            }
            #expect(late.failureKind == .shutDown, "a send after shutdown is refused")
        }
    }
}
