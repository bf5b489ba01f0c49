import AppStoreClient
import AppleFixtures
import Foundation
import HTTPServer
import Testing

/// The response body buffer: sized once for the announced `Content-Length` (capped), never past the cap.
@Suite(.serialized) struct UpstreamResponseBodyTests {
    /// A body of `count` bytes that differ along its length, so a chunk copied twice or dropped shows.
    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    @Test(arguments: [0, 1, 16_384, 114_000, 1_500_000])
    func bodiesOfEverySizeArriveWhole(size: Int) async throws {
        // Over HTTP/2 the fake server announces each body's content-length; the largest is past the reservation
        // cap, so its buffer also grows as the bytes arrive.
        let body = Self.pattern(size)
        let fake = try FakeApple { _, _ in HTTPResponse(status: 200, body: body) }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        let response = try await client.send(UpstreamRequest(url: fake.baseURL + "/"))
        #expect(response.httpVersion == 2)
        #expect(response.body.count == size)
        #expect(response.body == body)
    }

    @Test func aSlowBodyInSeveralChunksArrivesWhole() async throws {
        let body = Self.pattern(50_000)
        let fake = try FakeApple { _, _ in
            HTTPResponse(status: 200, body: body, delivery: .slowBody(chunks: 7, interval: .milliseconds(5)))
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: running.loop)
        #expect(try await client.send(UpstreamRequest(url: fake.baseURL + "/")).body == body)
    }

    @Test func anAnnouncedBodyOverTheCapIsRefused() async throws {
        let fake = try FakeApple { request, _ in
            HTTPResponse(status: 200, body: Self.pattern(request.target == "/exact" ? 100_000 : 300_000))
        }
        let running = try RunningLoop()
        defer { running.stop() }
        let client = try UpstreamHTTPClient(
            configuration: .init(caFile: fake.caFile, maxResponseBytes: 100_000), loop: running.loop)
        let outcome = await result { () async throws(UpstreamTransportError) in
            try await client.send(UpstreamRequest(url: fake.baseURL + "/big"))
        }
        #expect(outcome.failureKind == .responseTooLarge, "a 300 KB body must not pass a 100 KB cap")
        // A body just at the cap still passes.
        #expect(try await client.send(UpstreamRequest(url: fake.baseURL + "/exact")).body == Self.pattern(100_000))
    }
}
