extension OTLPTracer {
    /// OpenTelemetry traces, exported over OTLP/HTTP with protobuf bodies (keys under `tracing`; each also
    /// read from its standard `OTEL_*` environment variable, which wins over the file). Without an endpoint
    /// tracing is off and costs nothing.
    package struct Settings: Sendable, Hashable {
        /// A sampler of OpenTelemetry's `OTEL_TRACES_SAMPLER`.
        package enum Sampler: String, Sendable, Hashable, CaseIterable {
            case alwaysOn = "always_on"
            case alwaysOff = "always_off"
            case traceIDRatio = "traceidratio"
            case parentBasedAlwaysOn = "parentbased_always_on"
            case parentBasedAlwaysOff = "parentbased_always_off"
            case parentBasedTraceIDRatio = "parentbased_traceidratio"

            /// Whether `samplerArg` (a ratio) applies.
            package var takesRatio: Bool { self == .traceIDRatio || self == .parentBasedTraceIDRatio }
        }

        /// A header or resource attribute: a name and its (percent-decoded) value.
        package struct Pair: Sendable, Hashable {
            package var name: String
            package var value: String

            package init(_ name: String, _ value: String) {
                self.name = name
                self.value = value
            }
        }

        /// `tracing.endpoint` (`OTEL_EXPORTER_OTLP_ENDPOINT`): the collector's base URL; spans go to its
        /// `/v1/traces`. Default "" (off unless `tracesEndpoint` is set).
        package var endpoint = ""
        /// `tracing.tracesEndpoint` (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): the full URL spans are posted to,
        /// used as it is; wins over `endpoint`. Default "".
        package var tracesEndpoint = ""
        /// `tracing.headers` (`OTEL_EXPORTER_OTLP_HEADERS`): `name=value,…` sent with every export (values
        /// percent-decoded). Default none.
        package var headers: [Pair] = []
        /// `tracing.serviceName` (`OTEL_SERVICE_NAME`): the resource's `service.name`. Default
        /// "appstore-gateway" (or `service.name` of `resourceAttributes`).
        package var serviceName = ""
        /// `tracing.resourceAttributes` (`OTEL_RESOURCE_ATTRIBUTES`): `key=value,…` on the resource.
        package var resourceAttributes: [Pair] = []
        /// `tracing.sampler` (`OTEL_TRACES_SAMPLER`). Default parentbased_always_on.
        package var sampler = Sampler.parentBasedAlwaysOn
        /// `tracing.samplerArg` (`OTEL_TRACES_SAMPLER_ARG`): the ratio of the ratio samplers, in [0, 1].
        /// Default 1.
        package var samplerRatio = 1.0
        /// `tracing.timeout` (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT`, in ms): the
        /// longest one export may take. Default 10s.
        package var timeout: Duration = .seconds(10)
        /// `tracing.maxQueueSize` (`OTEL_BSP_MAX_QUEUE_SIZE`): ended spans waiting for export; more are
        /// dropped (counted). Default 2048.
        package var maxQueueSize = 2048
        /// `tracing.maxExportBatchSize` (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`): spans per export. Default 512.
        package var maxExportBatchSize = 512
        /// `tracing.scheduleDelay` (`OTEL_BSP_SCHEDULE_DELAY`, in ms): the longest a span waits for a batch to
        /// fill. Default 5s.
        package var scheduleDelay: Duration = .seconds(5)
        /// `OTEL_SDK_DISABLED=true`: off whatever else is set.
        package var disabled = false

        package init() {}

        /// The URL spans are posted to; nil when tracing is off.
        package var tracesURL: String? {
            guard !disabled else { return nil }
            if !tracesEndpoint.isEmpty { return tracesEndpoint }
            guard !endpoint.isEmpty else { return nil }
            return (endpoint.hasSuffix("/") ? endpoint : endpoint + "/") + "v1/traces"
        }

        /// The resource's `service.name`: `serviceName`, else the one in `resourceAttributes`, else the default.
        package var effectiveServiceName: String {
            if !serviceName.isEmpty { return serviceName }
            return resourceAttributes.last(where: { $0.name == "service.name" })?.value ?? "appstore-gateway"
        }
    }
}
