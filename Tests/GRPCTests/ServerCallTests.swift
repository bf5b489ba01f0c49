import Foundation
import GatewayFoundation
import HTTPServer
import ProtoCodec
import Synchronization
import Testing

@testable import GRPC

/// What the test service's handlers saw.
private final class HandlerLog: Sendable {
    let sent = Atomic<Int>(0)
    let cancelled = Atomic<Bool>(false)
    let finished = Atomic<Bool>(false)
    /// Where the unary probe ran: the thread's name as it started, after an await resumed from a thread of
    /// its own, and inside `offLoop`.
    let places = Lock<[String]>([])
}

/// The calling thread's name (what `ps -L` shows).
private func threadName() -> String {
    let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
    return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
}

/// A streaming service whose handlers report what happened to them.
private struct ProbeService: GRPCService {
    let log: HandlerLog

    var methods: [String: MethodHandler] {
        let log = self.log
        let chunk = HealthCheckRequest(service: String(repeating: "x", count: 1000))
        return [
            // Notes where it runs: on its connection's loop, back there after an await resumed elsewhere, and
            // elsewhere only inside `offLoop`.
            "/probe.Probe/Where": .unary(HealthCheckRequest.self) { request, _ throws(RPCStatus) in
                var places = [threadName()]
                _ = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    Thread.detachNewThread { continuation.resume(returning: 1) }
                }
                places.append(threadName())
                places.append(await offLoop { threadName() })
                places.append(threadName())
                log.places.withLock { $0 = places }
                return request
            },
            // Sends one message, then waits until the call is cancelled.
            "/probe.Probe/WaitForCancel": .serverStreaming(HealthCheckRequest.self, HealthCheckRequest.self) {
                _, _, stream throws(RPCStatus) in
                // The reset may land while `send` is still returning (it then throws CANCELLED) or while
                // waiting below: either way the task must end up cancelled.
                defer { log.cancelled.store(Task.isCancelled, ordering: .relaxed) }
                try await stream.send(chunk)
                log.sent.add(1, ordering: .relaxed)
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            },
            // Sends as fast as the client lets it, up to 100,000 messages.
            "/probe.Probe/Flood": .serverStreaming(HealthCheckRequest.self, HealthCheckRequest.self) {
                _, _, stream throws(RPCStatus) in
                defer { log.finished.store(true, ordering: .relaxed) }
                for _ in 0..<100_000 {
                    try await stream.send(chunk)
                    log.sent.add(1, ordering: .relaxed)
                }
            },
        ]
    }
}

private let python: String? = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    let venv = path + "/.venv/bin/python"
    return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
}()

private func runClient(port: UInt16, path: String, mode: String) async throws -> Int {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Clients/stream_client.py")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python!)
    process.arguments = [script.path, String(port), path, mode]
    let pipe = Pipe()
    process.standardOutput = pipe
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        process.terminationHandler = { _ in continuation.resume() }
        do { try process.run() } catch { continuation.resume() }
    }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
}

private func withServer(_ log: HandlerLog, _ body: (UInt16) async throws -> Void) async throws {
    var configuration = GRPCServerConfiguration()
    configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
    configuration.threads = 1
    configuration.http2.streamWriteHighWatermark = 64 * 1024
    let server = try GRPCServer(configuration: configuration, services: [ProbeService(log: log)])
    server.start()
    do {
        try await body(server.port)
    } catch {
        server.shutdown(grace: .zero)
        throw error
    }
    server.shutdown(grace: .zero)
}

@Suite(.serialized, .enabled(if: python != nil, "needs the test venv (make venv) for the Python h2 client"))
struct ServerCallTests {
    @Test func aHandlerRunsOnItsConnectionsLoopAndLeavesItOnlyOffLoop() async throws {
        let log = HandlerLog()
        try await withServer(log) { port in
            let received = try await runClient(port: port, path: "/probe.Probe/Where", mode: "unary")
            #expect(received > 0)
        }
        let places = log.places.withLock { $0 }
        #expect(places.count == 4)
        let loop = places.first ?? ""
        #expect(loop.hasPrefix("grpc-loop-") || loop.hasPrefix("h2-loop-"), "the handler started on \(loop)")
        #expect(places == [loop, loop, places[2], loop])
        #expect(places[2] != loop, "offLoop work ran on the loop")
    }

    @Test func clientResetCancelsTheHandler() async throws {
        let log = HandlerLog()
        try await withServer(log) { port in
            let received = try await runClient(port: port, path: "/probe.Probe/WaitForCancel", mode: "cancel")
            #expect(received > 0)
            // Generous: other suites' CPU-heavy tests (key generation, signing) share the cooperative pool
            // the handler task needs, so observing the cancellation can take seconds on a loaded 2-core box.
            for _ in 0..<3000 where !log.cancelled.load(ordering: .relaxed) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let cancelled = log.cancelled.load(ordering: .relaxed)
            #expect(cancelled, "the handler's task was not cancelled by RST_STREAM")
        }
    }

    @Test func aClientThatStopsReadingHoldsTheHandlerBack() async throws {
        let log = HandlerLog()
        try await withServer(log) { port in
            let received = try await runClient(port: port, path: "/probe.Probe/Flood", mode: "stall")
            // The client's 64 KiB window closes; the server buffers at most the 64 KiB high-water mark
            // (plus one message) before `send` waits. ~1 KiB messages: far fewer than 100,000 get sent.
            let sent = log.sent.load(ordering: .relaxed)
            #expect(received <= 65_535 + 16_384)
            #expect(sent < 200, "the handler sent \(sent) messages to a client that read \(received) bytes")
            // Closing the connection ends the waiting handler.
            for _ in 0..<3000 where !log.finished.load(ordering: .relaxed) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let released = log.finished.load(ordering: .relaxed)
            #expect(released, "the waiting handler was not released when the client left")
        }
    }
}
