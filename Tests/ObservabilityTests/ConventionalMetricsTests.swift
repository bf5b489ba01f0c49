import GatewayFoundation
import Logging
import Metrics
import Testing

@testable import GRPC
@testable import Observability

/// go-grpc-prometheus labels for registered methods only, process metrics from /proc, numeric log fields.
@Suite struct ConventionalMetricsTests {
    @Test func onlyRegisteredMethodsGetTheirOwnLabels() {
        let registry = MetricsRegistry()
        let metrics = RPCMetrics(registry: registry)
        metrics.register(methods: ["/appstore.gateway.v1.AppStoreGateway/GetHistory": "unary"])
        for path in ["/appstore.gateway.v1.AppStoreGateway/GetHistory", "/x.Y/Z", "/a.B/C", "garbage"] {
            let recorder = metrics.recorder(method: path, loop: 0)
            recorder.started()
            recorder.finished(
                path: path, status: .unimplemented, seconds: 0.001, metadata: [], annotations: CallAnnotations())
        }
        let text = registry.render()
        #expect(
            text.contains(
                #"grpc_server_handled_total{grpc_type="unary",grpc_service="appstore.gateway.v1.AppStoreGateway",grpc_method="GetHistory",grpc_code="Unimplemented"} 1"#
            ))
        #expect(
            text.contains(
                #"grpc_server_handled_total{grpc_type="unknown",grpc_service="unknown",grpc_method="unknown",grpc_code="Unimplemented"} 3"#
            ))
        #expect(!text.contains("x.Y") && !text.contains("garbage"))
        #expect(text.contains("appstore_gateway_rpcs_in_flight 0"))
    }

    /// The server's recorders, one per loop and method, count into their loop's cells: a scrape sees every
    /// loop's calls in the one series of each method and code.
    @Test func recordersOfSeveralLoopsCountIntoOneSeries() {
        let registry = MetricsRegistry()
        let metrics = RPCMetrics(registry: registry)
        let path = "/appstore.gateway.v1.AppStoreGateway/VerifyJWS"
        metrics.register(methods: [path: "unary"])
        let recorders = (0..<3).map { metrics.recorder(method: path, loop: $0) }
        for (loop, recorder) in recorders.enumerated() {
            for _ in 0...loop {
                recorder.started()
                recorder.messageSent()
                recorder.finished(
                    path: path, status: .ok, seconds: 0.0002, metadata: [], annotations: CallAnnotations())
            }
        }
        recorders[1].started()
        recorders[1].finished(
            path: path, status: .notFound, seconds: 0.2, metadata: [], annotations: CallAnnotations())
        recorders[2].started()
        let text = registry.render()
        let labels = #"grpc_type="unary",grpc_service="appstore.gateway.v1.AppStoreGateway",grpc_method="VerifyJWS""#
        #expect(text.contains("grpc_server_started_total{\(labels)} 8"))
        #expect(text.contains("grpc_server_handled_total{\(labels),grpc_code=\"OK\"} 6"))
        #expect(text.contains("grpc_server_handled_total{\(labels),grpc_code=\"NotFound\"} 1"))
        #expect(text.contains("grpc_server_msg_sent_total{\(labels)} 6"))
        #expect(text.contains("grpc_server_handling_seconds_bucket{\(labels),le=\"0.0005\"} 6"))
        #expect(text.contains("grpc_server_handling_seconds_count{\(labels)} 7"))
        #expect(text.contains("appstore_gateway_rpcs_in_flight 1"))
    }

    /// A caller chooses the path of a call to an unregistered method, and the server asks for a recorder per
    /// such call: they share their loop's cells of the `unknown` series instead of adding cells without bound.
    @Test func unregisteredPathsShareTheirLoopsCells() throws {
        let registry = MetricsRegistry()
        let metrics = RPCMetrics(registry: registry)
        let first = metrics.recorder(method: "/x.Y/A", loop: 0)
        for index in 0..<1_000 {
            let recorder = metrics.recorder(method: "/x.Y/\(index)", loop: 0)
            #expect(recorder.series === first.series)
            recorder.started()
            recorder.finished(
                path: "/x.Y/\(index)", status: .unimplemented, seconds: 0, metadata: [], annotations: CallAnnotations())
        }
        let other = metrics.recorder(method: "/x.Y/A", loop: 1)
        #expect(other.series !== first.series)
        let text = registry.render()
        let unknown = #"grpc_type="unknown",grpc_service="unknown",grpc_method="unknown""#
        #expect(text.contains("grpc_server_started_total{\(unknown)} 1000"))
        #expect(text.contains("appstore_gateway_rpcs_in_flight 0"))
    }

    @Test func codeNamesAreGo() {
        #expect(RPCMethodLabels.codeName(.cancelled) == "Canceled")
        #expect(RPCMethodLabels.codeName(.resourceExhausted) == "ResourceExhausted")
        #expect(
            RPCMethodLabels(path: "/pkg.Svc/Do", type: "bidi_stream")
                == RPCMethodLabels(type: "bidi_stream", service: "pkg.Svc", method: "Do"))
        #expect(RPCMethodLabels(path: "nope", type: "unary") == nil)
    }

    @Test func procStatFieldsAfterTheCommandName() {
        // A command name with spaces and a parenthesis must not shift the fields.
        let line =
            "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 12345 104857600 2560 "
            + "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let stat = ProcStat(parsing: line)
        #expect(stat == ProcStat(parsing: line))
        #expect(stat?.userTicks == 250 && stat?.systemTicks == 50 && stat?.startTicks == 12345)
        #expect(stat?.virtualBytes == 104_857_600 && stat?.residentPages == 2560)
        #expect(ProcStat(parsing: "garbage") == nil)
        #expect(ProcStat.bootTime(parsing: "cpu 1 2 3\nbtime 1763900000\nprocesses 5\n") == 1_763_900_000)
    }

    @Test func numbersStayNumbersInJSONLogs() {
        #expect(JSONText.number(12) == "12")
        #expect(JSONText.number(1.5) == "1.5")
        #expect(JSONText.number(Double.nan) == nil)
        #expect(JSONText.number("12") == nil)
    }
}

/// Handler log lines carry the call's trace ids through the metadata provider.
@Suite struct TraceLogMetadataTests {
    @Test func traceIdsComeFromTheTaskLocal() {
        #expect(Logger.MetadataProvider.traceContext.get().isEmpty)
        let context = TraceContext(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: nil)
        TraceContext.$current.withValue(context) {
            let metadata = Logger.MetadataProvider.traceContext.get()
            #expect(metadata["trace_id"] == .string("4bf92f3577b34da6a3ce929d0e0e4736"))
            #expect(metadata["span_id"] == .string(context.spanID))
        }
    }
}
