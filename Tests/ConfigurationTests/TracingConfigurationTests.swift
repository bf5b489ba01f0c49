import AppStoreDomain
import Configuration
import Testing
import Tracing

/// The `tracing` keys and their `OTEL_*` variables: the standard names, the variable over the file, the
/// endpoint rules, headers and resource attributes percent-decoded, hostile values refused.
@Suite struct TracingConfigurationTests {
    func load(_ yaml: String = "", _ environment: [String: String] = [:]) throws -> GatewayConfiguration.Tracing {
        try GatewayConfiguration.load(yaml: yaml, environment: environment).tracing
    }

    func problems(_ yaml: String = "", _ environment: [String: String] = [:]) throws -> [String] {
        try GatewayConfiguration.check(yaml: yaml, environment: environment).1.map { "\($0.key): \($0.problem)" }
    }

    @Test func offByDefault() throws {
        let tracing = try load()
        #expect(tracing.tracesURL == nil)
        #expect(tracing.sampler == .parentBasedAlwaysOn && tracing.effectiveServiceName == "appstore-gateway")
        #expect(tracing.maxQueueSize == 2048 && tracing.maxExportBatchSize == 512)
        #expect(tracing.scheduleDelay == .milliseconds(5_000) && tracing.timeout == .milliseconds(10_000))
    }

    @Test func theBaseEndpointGetsTheTracesPathTheTracesEndpointIsUsedAsItIs() throws {
        #expect(try load("tracing:\n  endpoint: http://collector:4318").tracesURL == "http://collector:4318/v1/traces")
        #expect(
            try load("", ["OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example/otlp/"]).tracesURL
                == "https://c.example/otlp/v1/traces")
        #expect(
            try load(
                "",
                ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b/x"]
            ).tracesURL == "http://b/x")
    }

    @Test func theEnvironmentWinsOverTheFile() throws {
        let yaml = """
            tracing:
              endpoint: http://file:4318
              serviceName: from-file
              sampler: always_off
            """
        let tracing = try load(
            yaml,
            [
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318", "OTEL_SERVICE_NAME": "from-env",
                "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
                "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_EXPORTER_OTLP_TIMEOUT": "3000",
            ])
        #expect(tracing.tracesURL == "http://env:4318/v1/traces" && tracing.effectiveServiceName == "from-env")
        #expect(tracing.sampler == .traceIDRatio && tracing.samplerRatio == 0.25)
        #expect(tracing.scheduleDelay == .milliseconds(200) && tracing.timeout == .milliseconds(3_000))
        // An empty variable is unset (OpenTelemetry): the file's value stays.
        #expect(try load(yaml, ["OTEL_SERVICE_NAME": ""]).effectiveServiceName == "from-file")
    }

    @Test func headersAndResourceAttributesArePercentDecoded() throws {
        let tracing = try load(
            "",
            [
                "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20dXNlcjpwdw==, x-tenant = a%2Cb ,",
                "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=from-attrs,note=caf%C3%A9",
            ])
        #expect(
            tracing.headers == [.init("authorization", "Basic dXNlcjpwdw=="), .init("x-tenant", "a,b")])
        #expect(tracing.resourceAttributes.map(\.value) == ["prod", "from-attrs", "café"])
        // service.name of the attributes applies when no service name is set.
        #expect(tracing.effectiveServiceName == "from-attrs")
    }

    @Test func theSDKCanBeSwitchedOff() throws {
        let environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]
        #expect(try load("", environment.merging(["OTEL_SDK_DISABLED": "true"]) { $1 }).tracesURL == nil)
        #expect(try load("", environment.merging(["OTEL_TRACES_EXPORTER": "none"]) { $1 }).tracesURL == nil)
        #expect(try load("", environment.merging(["OTEL_SDK_DISABLED": "false"]) { $1 }).tracesURL != nil)
    }

    @Test(arguments: [
        (["OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"], "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://"], "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://a b/"], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        (["OTEL_EXPORTER_OTLP_HEADERS": "x=a%0D%0Ainjected: 1"], "OTEL_EXPORTER_OTLP_HEADERS"),
        (["OTEL_EXPORTER_OTLP_HEADERS": "bad name=1"], "OTEL_EXPORTER_OTLP_HEADERS"),
        (["OTEL_EXPORTER_OTLP_HEADERS": "novalue"], "OTEL_EXPORTER_OTLP_HEADERS"),
        (["OTEL_RESOURCE_ATTRIBUTES": "k=%zz"], "OTEL_RESOURCE_ATTRIBUTES"),
        (["OTEL_TRACES_SAMPLER": "sometimes"], "OTEL_TRACES_SAMPLER"),
        (["OTEL_TRACES_SAMPLER_ARG": "1.5"], "OTEL_TRACES_SAMPLER_ARG"),
        (["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "OTEL_EXPORTER_OTLP_PROTOCOL"),
        (["OTEL_BSP_MAX_QUEUE_SIZE": "0"], "OTEL_BSP_MAX_QUEUE_SIZE"),
        (["OTEL_BSP_SCHEDULE_DELAY": "5s"], "OTEL_BSP_SCHEDULE_DELAY"),
        (["OTEL_SDK_DISABLED": "maybe"], "OTEL_SDK_DISABLED"),
    ])
    func badValuesAreRefusedByName(environment: [String: String], key: String) throws {
        let found = try problems("", environment)
        #expect(found.count == 1 && found[0].hasPrefix(key + ":"), "\(found)")
    }

    @Test func fileKeysAreCheckedAndKnown() throws {
        let yaml = """
            tracing:
              tracesEndpoint: https://collector.example/v1/traces
              headers: "api-key=secret"
              resourceAttributes: "team=payments"
              sampler: parentbased_traceidratio
              samplerArg: "0.1"
              timeout: 2s
              maxQueueSize: 100
              maxExportBatchSize: 500
              scheduleDelay: 250ms
            """
        let tracing = try load(yaml)
        #expect(tracing.tracesURL == "https://collector.example/v1/traces")
        #expect(tracing.headers == [.init("api-key", "secret")] && tracing.samplerRatio == 0.1)
        #expect(tracing.timeout == .milliseconds(2_000) && tracing.scheduleDelay == .milliseconds(250))
        // The batch is at most the queue.
        #expect(tracing.maxQueueSize == 100 && tracing.maxExportBatchSize == 100)
        #expect(
            try problems("tracing:\n  endpiont: http://x") == [
                "tracing.endpiont: unknown key (misspelt, or not a setting of this version)"
            ])
    }
}
