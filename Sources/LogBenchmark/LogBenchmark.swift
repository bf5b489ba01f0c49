import Foundation
import GRPC
import GatewayFoundation
import Logging
import Metrics
import Observability

/// `log-benchmark [LINES] [ROUNDS] [other]`: what one access-log line costs the thread that finishes an RPC,
/// in nanoseconds: the call's end as the server records it (`RPCRecorder.finished`: its metric cells) with the
/// access log off, through swift-log and the JSON handler writing each line (the old path), and built as bytes
/// and queued for the writer thread (the gateway's path); and what
/// any other line costs, through swift-log and the JSON handler queued for the writer thread as the gateway
/// does. Lines go to a pipe that a reader thread drains, as a log shipper would. Prints one JSON object per
/// round; with `other`, only the other line is measured (to profile it alone).
@main
struct LogBenchmark {
    static func main() {
        let arguments = CommandLine.arguments
        let lines = arguments.count > 1 ? Int(arguments[1]) ?? 200_000 : 200_000
        let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
        let onlyOtherLine = arguments.count > 3 && arguments[3] == "other"

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { fatalError("pipe failed") }
        let (reader, writerFD) = (fds[0], fds[1])
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while read(reader, &buffer, buffer.count) > 0 {}
        }
        let synchronous = Logger(label: "appstore-gateway.rpc") { label in
            JSONLogHandler(
                label: label,
                write: { line in
                    var line = line
                    line.withUTF8 { bytes in _ = write(writerFD, bytes.baseAddress, bytes.count) }
                })
        }
        let queued = LogLineWriter(fd: writerFD)
        // The gateway's path for every other log line: swift-log and the JSON handler with the trace metadata
        // provider (as `serve` makes it; a loop serves no task, so it provides nothing), the line's bytes
        // queued (as for `LogLineWriter.standardError`, the handler's default).
        let queuedLogger = Logger(label: "appstore-gateway.rpc") { label in
            JSONLogHandler(label: label, metadataProvider: .traceContext, writer: queued)
        }
        // What the gRPC server gives every call (its identity: a request id generated from the trace, the
        // caller's trace id, a span of its own, an anonymous caller) and what a handler notes (the app).
        var random = SystemRandomNumberGenerator()
        let trace = TraceContext(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: nil, random: &random)
        let annotations = CallAnnotations(identity: .init(requestID: nil, trace: trace, caller: nil))
        annotations.note("app", "example")
        let method = "/appstore.gateway.v1.AppStoreGateway/VerifyJWS"

        // What the gRPC server records each call with: the method's metric cells of one loop and the access log.
        func recorder(accessLog: JSONAccessLog?) -> RPCRecorder {
            let metrics = RPCMetrics(registry: MetricsRegistry())
            metrics.register(methods: [method: "unary"])
            return metrics.recorder(method: method, loop: 0, accessLog: accessLog)
        }
        let variants: [(String, RPCRecorder)] =
            onlyOtherLine
            ? []
            : [
                ("off", recorder(accessLog: nil)),
                ("swift_log_sync", recorder(accessLog: JSONAccessLog(logger: synchronous))),
                ("queued_bytes", recorder(accessLog: JSONAccessLog(logger: synchronous, writer: queued))),
            ]
        let lineMetadata: Logger.Metadata = [
            "app": "example", "apple_request_id": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "endpoint": "getTransactionHistory",
            "status": "429", "retry_after_ms": .stringConvertible(1500),
        ]
        for round in 1...rounds {
            var result: [String: Double] = [:]
            for (name, recorder) in variants {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<lines {
                    recorder.started()
                    recorder.finished(
                        path: method, status: .ok, seconds: 0.000_123, metadata: [], annotations: annotations)
                }
                let elapsed = DispatchTime.now().uptimeNanoseconds - start
                result[name] = Double(elapsed) / Double(lines)
                queued.flush()
            }
            // Any other line a loop logs (here a warning with five metadata fields), through swift-log.
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<lines { queuedLogger.warning("Apple answered 429", metadata: lineMetadata) }
            result["other_line_queued"] = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(lines)
            queued.flush()
            guard !onlyOtherLine else {
                print(
                    "{\"round\":\(round),\"lines\":\(lines),\"ns_per_other_line_queued\":\(Int(result["other_line_queued"]!))}"
                )
                continue
            }
            let line =
                "{\"round\":\(round),\"lines\":\(lines),"
                + "\"ns_per_rpc_off\":\(Int(result["off"]!)),"
                + "\"ns_per_line_swift_log_sync\":\(Int(result["swift_log_sync"]! - result["off"]!)),"
                + "\"ns_per_line_queued_bytes\":\(Int(result["queued_bytes"]! - result["off"]!)),"
                + "\"ns_per_other_line_queued\":\(Int(result["other_line_queued"]!))}"
            print(line)
        }
    }
}
