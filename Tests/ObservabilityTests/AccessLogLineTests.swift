import Foundation
import GRPC
import GatewayFoundation
import Logging
import Metrics
import Testing

@testable import Observability

/// The access log's byte-built line says exactly what the general JSON handler would say for the same RPC.
@Suite struct AccessLogLineTests {
    let clock = ManualClock(wall: WallTime(millisecondsSince1970: 1_795_326_867_123))

    /// The line the JSON handler writes for the same facts, through a `Logger` as the slow path logs it.
    func handlerLine(_ fields: AccessLogLine.Fields) throws -> [String: Any] {
        let captured = Lock<String>("")
        let clock = self.clock
        let logger = Logger(label: "appstore-gateway.rpc") { label in
            JSONLogHandler(label: label, clock: clock, write: { line in captured.withLock { $0 = line } })
        }
        var metadata: Logger.Metadata = [
            "method": .string(fields.method), "grpc_service": .string(fields.service),
            "grpc_method": .string(fields.grpcMethod), "status": .string(fields.status.description),
            "grpc_code": .stringConvertible(Int(fields.status.rawValue)),
            "duration_ms": .stringConvertible(fields.durationMilliseconds), "request_id": .string(fields.requestID),
        ]
        let identity = fields.identity.map { CallAnnotations(identity: $0).all } ?? []
        for (name, value) in identity + fields.annotations { metadata[name] = .string(value) }
        logger.info("rpc", metadata: metadata)
        return try parse(captured.withLock { $0 })
    }

    func fastLine(_ fields: AccessLogLine.Fields) throws -> [String: Any] {
        var bytes: [UInt8] = []
        AccessLogLine(label: "appstore-gateway.rpc", redaction: SecretRedaction())
            .append(fields, at: clock.wallNow(), to: &bytes)
        return try parse(String(decoding: bytes, as: UTF8.self))
    }

    func parse(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test(
        arguments: [
            [("app", "example"), ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), ("span_id", "00f067aa0ba902b7")],
            [("request_id", "chosen-by-the-server")],  // an annotation wins over the field of the same name
            [("message", "a reserved name"), ("authorization", "Bearer secret"), ("zz", "last")],
            [("quote\"and\\slash", "line\nbreak\u{01}\ttab é 雪 🍎")],
            [],
        ] as [[(String, String)]])
    func saysWhatTheJSONHandlerSays(annotations: [(String, String)]) throws {
        let fields = AccessLogLine.Fields(
            method: "/appstore.gateway.v1.AppStoreGateway/GetHistory", service: "appstore.gateway.v1.AppStoreGateway",
            grpcMethod: "GetHistory", status: .resourceExhausted, durationMilliseconds: 12.5,
            requestID: "generated-1", annotations: annotations.map { (name: $0.0, value: $0.1) })
        var expected = try handlerLine(fields)
        let actual = try fastLine(fields)
        expected["source"] = "Observability"  // the slow path's source is the module that logs
        #expect(NSDictionary(dictionary: actual).isEqual(to: expected), "\(actual)\n!=\n\(expected)")
    }

    /// The method's members written at once (as a registered method's series passes them) make exactly the
    /// bytes written one by one, whatever annotations sort among, replace or follow them.
    @Test(
        arguments: [
            [], [("app", "a")], [("grpc_method", "noted")], [("grpc_service", "x"), ("zz", "z")], [("method", "m")],
            [("grpc_d", "between grpc_code and grpc_method")], [("grpc_p", "between grpc_method and grpc_service")],
            [("h", "between grpc_service and method")], [("n", "after method")], [("grpc_code", "7")],
        ] as [[(String, String)]])
    func methodMembersWrittenAtOnceAreTheSameBytes(annotations: [(String, String)]) {
        let method = "/appstore.gateway.v1.AppStoreGateway/VerifyJWS"
        let line = AccessLogLine(label: "appstore-gateway.rpc", redaction: SecretRedaction())
        let members = AccessLogLine.MethodMembers(
            method: method, service: "appstore.gateway.v1.AppStoreGateway", grpcMethod: "VerifyJWS")
        for identity in [
            nil,
            CallAnnotations.Identity(
                requestID: "r-1", trace: TraceContext(traceparent: nil, tracestate: nil), caller: "team-a"),
        ] {
            let fields = AccessLogLine.Fields(
                method: method, service: "appstore.gateway.v1.AppStoreGateway", grpcMethod: "VerifyJWS",
                status: .ok, durationMilliseconds: 0.5, requestID: "generated-1", identity: identity,
                annotations: annotations.map { (name: $0.0, value: $0.1) })
            var oneByOne: [UInt8] = []
            line.append(fields, at: clock.wallNow(), to: &oneByOne)
            var atOnce: [UInt8] = []
            line.append(fields, at: clock.wallNow(), methodMembers: members, to: &atOnce)
            #expect(
                atOnce == oneByOne,
                "\(String(decoding: atOnce, as: UTF8.self))\n!=\n\(String(decoding: oneByOne, as: UTF8.self))")
        }
        // Members made for another path are not used for this one.
        let other = AccessLogLine.MethodMembers(
            method: "/other.Service/Other", service: "other.Service", grpcMethod: "Other")
        let fields = AccessLogLine.Fields(
            method: method, service: "appstore.gateway.v1.AppStoreGateway", grpcMethod: "VerifyJWS", status: .ok,
            durationMilliseconds: 0.5, requestID: "generated-1", annotations: [])
        var withOther: [UInt8] = []
        line.append(fields, at: clock.wallNow(), methodMembers: other, to: &withOther)
        #expect(String(decoding: withOther, as: UTF8.self).contains(#""method":"\#(method)""#))
    }

    /// The duration written digit by digit is the text Swift prints for the same duration rounded to the
    /// microsecond (what the swift-log path logs), over durations from nanoseconds to days.
    @Test func aDurationIsWrittenAsSwiftPrintsIt() {
        var random = SystemRandomNumberGenerator()
        var seconds: [Double] = [0, 0.000_000_4, 0.000_000_5, 0.000_001, 0.0005, 0.001, 0.0125, 0.25, 3, 86_400 * 3]
        for _ in 0..<5000 {
            let scale = [1e-6, 1e-4, 1e-2, 1, 1e2, 1e5][Int.random(in: 0..<6, using: &random)]
            seconds.append(Double.random(in: 0..<scale, using: &random))
        }
        for value in seconds {
            var bytes: [UInt8] = []
            AccessLogLine.appendMilliseconds(value * 1000, to: &bytes)
            let expected = "\(AccessLogLine.milliseconds(seconds: value))"
            #expect(String(decoding: bytes, as: UTF8.self) == expected, "\(value) s")
        }
        var notFinite: [UInt8] = []
        AccessLogLine.appendMilliseconds(.infinity, to: &notFinite)
        #expect(notFinite == Array("0".utf8))
    }

    /// A call's identity (written from its bytes, the request id generated or the caller's) says what the
    /// handler would say with the identity's fields as metadata, and a noted field of the same name wins.
    @Test(
        arguments: [
            (nil, nil, [("app", "example")]),
            ("caller-chosen-1", "team-a", []),
            (nil, "team-b", [("request_id", "noted-wins"), ("trace_id", "noted-trace"), ("zz", "z")]),
        ] as [(String?, String?, [(String, String)])])
    func anIdentitySaysWhatTheJSONHandlerSays(requestID: String?, caller: String?, noted: [(String, String)]) throws {
        var random = SystemRandomNumberGenerator()
        let trace = TraceContext(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: nil, random: &random)
        let annotations = CallAnnotations(identity: .init(requestID: requestID, trace: trace, caller: caller))
        for (name, value) in noted { annotations.note(name, value) }
        let fields = AccessLogLine.Fields(
            method: "/appstore.gateway.v1.AppStoreGateway/VerifyJWS", service: "appstore.gateway.v1.AppStoreGateway",
            grpcMethod: "VerifyJWS", status: .ok, durationMilliseconds: 0.25, requestID: "",
            identity: annotations.identity, annotations: annotations.noted)
        var expected = try handlerLine(fields)
        let actual = try fastLine(fields)
        expected["source"] = "Observability"
        #expect(NSDictionary(dictionary: actual).isEqual(to: expected), "\(actual)\n!=\n\(expected)")
        let notedTrace = noted.first { $0.0 == "trace_id" }?.1
        #expect(actual["trace_id"] as? String == notedTrace ?? trace.traceID)
    }

    /// An identity field whose name the redaction rule covers is redacted like any other.
    @Test func anIdentityFieldCanBeRedacted() {
        var random = SystemRandomNumberGenerator()
        let trace = TraceContext(traceparent: nil, tracestate: nil, random: &random)
        let fields = AccessLogLine.Fields(
            method: "/m", service: "s", grpcMethod: "m", status: .ok, durationMilliseconds: 1, requestID: "",
            identity: .init(requestID: nil, trace: trace, caller: "hunter2"), annotations: [])
        var bytes: [UInt8] = []
        AccessLogLine(label: "l", redaction: SecretRedaction(fragments: ["caller"])).append(
            fields, at: clock.wallNow(), to: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("hunter2") && text.contains(#""caller":"[redacted]""#))
        #expect(text.contains(trace.traceID) && text.contains(RequestID.generated(for: trace)))
    }

    /// The secret-name answers are remembered: a second line (answers from the memo) redacts like the first.
    @Test func aSecretLookingAnnotationIsRedactedOnEveryLine() {
        let line = AccessLogLine(label: "l", redaction: SecretRedaction())
        let fields = AccessLogLine.Fields(
            method: "/m", service: "s", grpcMethod: "m", status: .ok, durationMilliseconds: 1, requestID: "r",
            annotations: [(name: "app", value: "a"), (name: "authorization", value: "Bearer hunter2")])
        for _ in 0..<2 {
            var bytes: [UInt8] = []
            line.append(fields, at: clock.wallNow(), to: &bytes)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(!text.contains("hunter2") && text.contains("\"app\":\"a\""))
        }
    }

    @Test func keysComeInTheHandlersOrder() throws {
        var bytes: [UInt8] = []
        let fields = AccessLogLine.Fields(
            method: "/m", service: "s", grpcMethod: "m", status: .ok, durationMilliseconds: 1, requestID: "r",
            annotations: [(name: "zeta", value: "1"), (name: "app", value: "a")])
        AccessLogLine(label: "l", redaction: SecretRedaction()).append(fields, at: clock.wallNow(), to: &bytes)
        let line = String(decoding: bytes, as: UTF8.self)
        let keys = [
            "\"timestamp\"", "\"level\"", "\"label\"", "\"message\"", "\"source\"", "\"app\"", "\"duration_ms\"",
            "\"grpc_code\"", "\"grpc_method\"", "\"grpc_service\"", "\"method\"", "\"request_id\"", "\"status\"",
            "\"zeta\"",
        ]
        let positions = keys.map { line.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
    }
}

/// Lines queued on a `LogLineWriter` reach the descriptor in order; a full buffer drops and says so.
@Suite struct LogLineWriterTests {
    func pipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        precondition(Glibc.pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    func readAvailable(_ fd: Int32, until done: (String) -> Bool) -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(5)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while !done(text) && Date() < deadline {
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            text += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return text
    }

    @Test func linesArriveInOrderAfterFlush() {
        let (reader, writerFD) = pipe()
        defer { close(reader); close(writerFD) }
        let writer = LogLineWriter(fd: writerFD)
        for index in 0..<1_000 { writer.enqueue("line \(index)\n") }
        writer.flush()
        let text = readAvailable(reader) { $0.hasSuffix("line 999\n") }
        #expect(text == (0..<1_000).map { "line \($0)\n" }.joined())
        #expect(writer.droppedLines == 0)
    }

    @Test func aLineIsWrittenWithoutFlushAndBatchesLargerThanThePipeAllArrive() {
        let (reader, writerFD) = pipe()
        defer { close(reader); close(writerFD) }
        let writer = LogLineWriter(fd: writerFD)
        writer.enqueue("first\n")
        #expect(readAvailable(reader) { $0 == "first\n" } == "first\n")
        // Several batches' worth (more than `batchBytes`, far more than a pipe holds) while the reader drains.
        let line = String(repeating: "x", count: 99) + "\n"
        let count = 3 * LogLineWriter.batchBytes / line.utf8.count
        for _ in 0..<count { writer.enqueue(line) }
        let text = readAvailable(reader) { $0.utf8.count >= count * line.utf8.count }
        writer.flush()
        #expect(text.utf8.count == count * line.utf8.count)
        #expect(writer.droppedLines == 0)
    }

    @Test func aFullBufferDropsLinesAndReportsTheCount() {
        let (reader, writerFD) = pipe()
        defer { close(reader); close(writerFD) }
        let writer = LogLineWriter(fd: writerFD, maxBufferedBytes: 4)
        writer.enqueue("too long\n")
        writer.enqueue("also too long\n")
        #expect(writer.droppedLines == 2)
        let text = readAvailable(reader) { $0.contains("\"dropped_total\":2") }
        #expect(text.contains("log lines dropped") && text.contains("\"dropped_total\":2"))
    }

    /// Health checks arrive all the time (every load balancer and kubelet): they are left out of the access log.
    @Test func aHealthCheckIsLeftOutOfTheAccessLog() {
        let (reader, writerFD) = pipe()
        defer { close(reader); close(writerFD) }
        let writer = LogLineWriter(fd: writerFD)
        let log = JSONAccessLog(logger: Logger(label: "test"), writer: writer)
        let metrics = RPCMetrics(registry: MetricsRegistry())
        let health = "/grpc.health.v1.Health/Check"
        metrics.register(methods: [health: "unary", "/x.Y/A": "unary"])
        for path in [health, "/x.Y/A", health] {
            let recorder = metrics.recorder(method: path, loop: 0, accessLog: log)
            recorder.started()
            recorder.finished(path: path, status: .ok, seconds: 0.001, metadata: [], annotations: CallAnnotations())
        }
        writer.flush()
        let text = readAvailable(reader) { $0.contains("/x.Y/A") }
        #expect(text.split(separator: "\n").count == 1)
        #expect(text.contains("/x.Y/A") && !text.contains("Health"))
    }
}
