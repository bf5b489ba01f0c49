import Cryptography
import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// Echoes the request line and body, and injects faults on request.
private struct EchoHandler: HTTPRequestHandler {
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch request.path {
        case "/reset":
            return HTTPResponse(status: 200, delivery: .resetConnection)
        case "/slow":
            return HTTPResponse(
                status: 200, body: Array("abcdef".utf8), delivery: .slowBody(chunks: 3, interval: .milliseconds(50)))
        default:
            let query = request.queryItems.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            let text = "\(request.method) \(request.path) [\(query)] \(String(decoding: request.body, as: UTF8.self))"
            return HTTPResponse(
                status: 201, headers: [("content-type", "text/plain"), ("x-test", "yes")], body: Array(text.utf8))
        }
    }
}

/// A TLS server on a free port with a CA-issued certificate for localhost and 127.0.0.1.
private final class TLSFixture {
    private let tls: TLSTestServer
    var server: HTTP2Server { tls.server }
    var caFile: String { tls.caFile }
    var url: String { "https://localhost:\(server.port)" }

    init() throws {
        tls = try TLSTestServer(handler: EchoHandler())
    }

    /// Runs curl; returns its exit status and standard output. Waits without blocking a thread of the
    /// cooperative pool, which the server's request handlers need.
    func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments =
            ["-sS", "--cacert", caFile, "--resolve", "localhost:\(server.port):127.0.0.1", "--max-time", "3", "-v"]
            + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        // Read on a thread of its own from the start, so a chatty child never blocks on a full pipe.
        let reader = pipe.fileHandleForReading
        let output = Task { await offPool { reader.readDataToEndOfFile() } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in continuation.resume() }
            do { try process.run() } catch { continuation.resume() }
        }
        return (process.terminationStatus, String(decoding: await output.value, as: UTF8.self))
    }
}

@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl"))
struct TLSServerTests {
    @Test func http2OverTLSWithALPN() async throws {
        let fixture = try TLSFixture()
        let result = try await fixture.curl([
            "--http2", "-w", "\n%{http_version} %{http_code}", "-d", "hello", "\(fixture.url)/echo?a=1&b=x%20y&a=2",
        ])
        #expect(result.status == 0)
        #expect(result.output == "POST /echo [a=1&b=x y&a=2] hello\n2 201")
    }

    @Test func http1FallbackWithKeepAlive() async throws {
        let fixture = try TLSFixture()
        let result = try await fixture.curl([
            "--http1.1", "-w", " %{http_version} %{http_code} %{num_connects}\n",
            "\(fixture.url)/one", "\(fixture.url)/two",
        ])
        #expect(result.status == 0)
        // Two requests, one connection: keep-alive works.
        #expect(result.output == "GET /one []  1.1 201 1\nGET /two []  1.1 201 0\n")
    }

    @Test func multiplexedHTTP2RequestsShareOneConnection() async throws {
        let fixture = try TLSFixture()
        let urls = (0..<20).map { "\(fixture.url)/n\($0)" }
        let result = try await fixture.curl(
            ["--http2", "--parallel", "--parallel-max", "20", "-w", "%{num_connects}\n"] + urls)
        #expect(result.status == 0)
        let connects = result.output.split(separator: "\n").compactMap { line in
            line.split(separator: " ").last.flatMap { Int($0) }
        }
        #expect(connects.reduce(0, +) <= 2)
    }

    @Test func slowBodyArrivesWholeAndResetFails() async throws {
        let fixture = try TLSFixture()
        for version in ["--http1.1", "--http2"] {
            let slow = try await fixture.curl([version, "\(fixture.url)/slow"])
            #expect(slow.status == 0)
            #expect(slow.output == "abcdef")
            let reset = try await fixture.curl([version, "\(fixture.url)/reset"])
            #expect(reset.status != 0, "\(version) reset should fail the transfer")
        }
    }

    @Test func plainHTTPToTheTLSPortIsRefusedWithoutHarm() async throws {
        let fixture = try TLSFixture()
        let plain = try await fixture.curl(["http://localhost:\(fixture.server.port)/echo"])
        #expect(plain.status != 0)
        let after = try await fixture.curl(["--http2", "\(fixture.url)/after"])
        #expect(after.output == "GET /after [] ")
    }
}
